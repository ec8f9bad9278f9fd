package ddblocal

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// Errors carry the same types the real SDK client returns, wrapped in a
// *smithy.OperationError like the SDK does, so callers (and the HTTP face)
// recognise them with errors.As exactly as they would against AWS.

// Messages DynamoDB uses, shared by the engine and its tests.
const (
	msgResourceNotFound   = "Requested resource not found"
	msgConditionalFailed  = "The conditional request failed"
	msgKeyMissing         = "One of the required keys was not given a value"
	msgKeySchemaMismatch  = "The provided key element does not match the schema"
	msgItemTooLarge       = "Item size has exceeded the maximum allowed size"
	msgTxMultipleOps      = "Transaction request cannot include multiple operations on one item"
	msgConsistentReadGSI  = "Consistent reads are not supported on global secondary indexes"
	msgThroughputExceeded = "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."
	msgInternal           = "Internal server error"
)

func opError(op string, err error) error {
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: op, Err: err}
}

// validationError is a ValidationException.
func validationError(format string, args ...any) error {
	return &smithy.GenericAPIError{Code: "ValidationException", Message: fmt.Sprintf(format, args...), Fault: smithy.FaultClient}
}

func notFoundError(msg string) error {
	return &types.ResourceNotFoundException{Message: aws.String(msg)}
}

func inUseError(msg string) error {
	return &types.ResourceInUseException{Message: aws.String(msg)}
}

func conditionalFailedError(old Item) error {
	return &types.ConditionalCheckFailedException{Message: aws.String(msgConditionalFailed), Item: old}
}

func throughputError() error {
	return &types.ProvisionedThroughputExceededException{Message: aws.String(msgThroughputExceeded)}
}

func internalError() error {
	return &types.InternalServerError{Message: aws.String(msgInternal)}
}

// Cancellation reason codes of TransactWriteItems and TransactGetItems.
const (
	reasonNone                = "None"
	reasonConditionalFailed   = "ConditionalCheckFailed"
	reasonTransactionConflict = "TransactionConflict"
	reasonValidation          = "ValidationError"
	reasonThrottling          = "ThrottlingError"
)

func txCanceledError(reasons []types.CancellationReason) error {
	codes := make([]string, len(reasons))
	for i, r := range reasons {
		codes[i] = aws.ToString(r.Code)
	}
	msg := "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]"
	return &types.TransactionCanceledException{Message: aws.String(msg), CancellationReasons: reasons}
}
