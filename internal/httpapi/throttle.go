package httpapi

import (
	"errors"

	"github.com/aws/smithy-go"
)

// throttleCodes are DynamoDB error codes that mean "too much at once": the
// caller should retry after a short wait (HTTP 429).
var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"RequestLimitExceeded":                   true,
	"ThrottlingException":                    true,
	"TransactionConflictException":           true,
	"TransactionInProgressException":         true,
}

// isThrottle reports whether err, anywhere in its chain, is a DynamoDB
// throttle or transient conflict.
func isThrottle(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && throttleCodes[ae.ErrorCode()]
}
