package ddbhttp

import (
	"errors"
	"net/http"
	"reflect"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	smithy "github.com/aws/smithy-go"
)

// Error codes the handler itself answers.
const (
	codeSerialization    = "SerializationException"
	codeValidation       = "ValidationException"
	codeUnknownOperation = "UnknownOperationException"
	codeMissingAuth      = "MissingAuthenticationTokenException"
	codeInternal         = "InternalServerError"
	codeTooLarge         = "RequestEntityTooLarge"
	codeRequestTimeout   = "RequestTimeoutException" // the SDKs retry it
)

// DynamoDB's errors come from three namespaces: the service's own modeled
// errors, and the Coral framework's validation, service and availability
// errors. The SDK keeps only what follows '#', but the AWS CLI and other SDKs
// print the whole type, so it is sent as DynamoDB sends it.
const (
	namespaceDynamoDB     = "com.amazonaws.dynamodb.v20120810#"
	namespaceValidate     = "com.amazon.coral.validate#"
	namespaceService      = "com.amazon.coral.service#"
	namespaceAvailability = "com.amazon.coral.availability#"
)

// errorType returns the wire __type of an error code.
func errorType(code string) string {
	switch code {
	case codeValidation:
		return namespaceValidate + code
	case codeSerialization, codeUnknownOperation, codeMissingAuth, codeTooLarge, codeRequestTimeout,
		"AccessDeniedException", "UnrecognizedClientException",
		"IncompleteSignatureException", "InvalidSignatureException",
		"MalformedQueryString", "InvalidAction":
		return namespaceService + code
	case "ThrottlingException":
		return namespaceAvailability + code
	}
	return namespaceDynamoDB + code
}

// errorStatus returns the HTTP status DynamoDB answers an error code with:
// 400 for everything the client can act on, 500/503 for server faults.
func errorStatus(code string, fault smithy.ErrorFault) int {
	switch code {
	case codeInternal:
		return http.StatusInternalServerError
	case "ServiceUnavailable":
		return http.StatusServiceUnavailable
	case codeTooLarge:
		return http.StatusRequestEntityTooLarge
	case codeRequestTimeout:
		return http.StatusRequestTimeout
	}
	if fault == smithy.FaultServer {
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// defaultMessages are DynamoDB's messages for errors a backend returned
// without one; DynamoDB always sends a message.
var defaultMessages = map[string]string{
	"ConditionalCheckFailedException":        "The conditional request failed",
	"ResourceNotFoundException":              "Requested resource not found",
	"ProvisionedThroughputExceededException": "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.",
	"ThrottlingException":                    "Rate of requests exceeds the allowed throughput.",
	"RequestLimitExceeded":                   "Throughput exceeds the current throughput limit for your account.",
	"TransactionConflictException":           "Transaction is ongoing for the item",
	"TransactionInProgressException":         "The transaction with the given request token is already in progress.",
	"IdempotentParameterMismatchException":   "The request uses the same client token as a previous, but non-identical request.",
	"TransactionCanceledException":           "Transaction cancelled, please refer cancellation reasons for specific reasons",
	codeInternal:                             "Internal server error",
}

// encodeError returns the status and the body DynamoDB answers err with.
// Modeled SDK errors are sent with all their members (Item,
// CancellationReasons, ThrottlingReasons, ...); other API errors as __type and
// message; anything that is not an API error as an InternalServerError, so
// the engine's internals never leak as an unknown type.
func encodeError(err error) (int, []byte) {
	var re *requestError
	if errors.As(err, &re) {
		return errorStatus(re.code, smithy.FaultClient), genericErrorBody(re.code, re.message)
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return http.StatusInternalServerError, genericErrorBody(codeInternal, defaultMessages[codeInternal])
	}
	code := ae.ErrorCode()
	if code == "" {
		code = codeInternal
	}
	status := errorStatus(code, ae.ErrorFault())
	rv := reflect.ValueOf(ae)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() && rv.Elem().Kind() == reflect.Struct &&
		rv.Elem().Type().PkgPath() == modeledErrorsPkg {
		withMessage := ensureMessage(rv.Elem(), code)
		e := &encoder{buf: make([]byte, 0, 128)}
		e.structBody(withMessage, errorType(code))
		return status, e.buf
	}
	msg := ae.ErrorMessage()
	if msg == "" {
		msg = defaultMessages[code]
	}
	return status, genericErrorBody(code, msg)
}

var modeledErrorsPkg = reflect.TypeFor[types.ConditionalCheckFailedException]().PkgPath()

// ensureMessage returns err's struct value, copied with a default message
// when it has none.
func ensureMessage(v reflect.Value, code string) reflect.Value {
	m := v.FieldByName("Message")
	def, ok := defaultMessages[code]
	if !ok || !m.IsValid() || m.Type() != reflect.TypeFor[*string]() || !m.IsNil() {
		return v
	}
	cp := reflect.New(v.Type()).Elem()
	cp.Set(v)
	cp.FieldByName("Message").Set(reflect.ValueOf(&def))
	return cp
}

func genericErrorBody(code, message string) []byte {
	e := &encoder{buf: make([]byte, 0, 128)}
	e.buf = append(e.buf, `{"__type":`...)
	e.str(errorType(code))
	if message != "" {
		e.buf = append(e.buf, `,"message":`...)
		e.str(message)
	}
	e.buf = append(e.buf, '}')
	return e.buf
}
