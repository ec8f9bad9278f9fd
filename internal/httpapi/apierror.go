package httpapi

import (
	"fmt"
	"net/http"
)

// The error codes of the API's answers ({"error":{"code":…}}). They are part
// of the public contract: clients may branch on them.
const (
	CodeMoved            = "moved"              // 308: the path is not canonical; repeat at Location
	CodeMalformedJSON    = "malformed_json"     // 400: not one strict JSON document
	CodeInvalidField     = "invalid_field"      // 400: unknown, missing, mistyped or out-of-range field
	CodeUnauthenticated  = "unauthenticated"    // 401: no principal
	CodeForbidden        = "forbidden"          // 403: the workspace is not the principal's
	CodeNotFound         = "not_found"          // 404: no such action (or route)
	CodeMethodNotAllowed = "method_not_allowed" // 405
	CodeRequestTimeout   = "request_timeout"    // 408: the body did not arrive in time (ferry dev's read timeout)
	CodeTransition       = "transition_refused" // 409: the action's state refuses the change
	CodeBodyTooLarge     = "body_too_large"     // 413
	CodePayloadTooLarge  = "payload_too_large"  // 413
	CodeUnknownKind      = "unknown_kind"       // 422
	CodeInvalidPayload   = "invalid_payload"    // 422: the kind's adapter refused the payload
	CodeThrottled        = "throttled"          // 429: DynamoDB throttled or conflicted; retry
	CodeInternal         = "internal"           // 500
	CodeUnavailable      = "unavailable"        // 503: DynamoDB cannot be reached (or the table is gone); retry
)

// apiError is an answer other than success. Field, when set, is the request
// field at fault (a dotted path such as "actions[2].payload.url").
type apiError struct {
	Status  int
	Code    string
	Field   string
	Message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func fieldError(field, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: CodeInvalidField, Field: field,
		Message: field + ": " + fmt.Sprintf(format, args...)}
}
