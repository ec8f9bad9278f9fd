package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/outbox"
)

// failingOutbox answers every call with err.
type failingOutbox struct {
	Outbox
	err error
}

func (f failingOutbox) ActionGet(context.Context, string) (*outbox.Action, error) { return nil, f.err }

// TestUnreachableDynamoDBAnswers503: while DynamoDB cannot be reached (or
// the table is gone), API calls answer 503 unavailable with Retry-After, not
// 500 internal (as every call did before issue 13 while `ferry dynamodb`
// was down).
func TestUnreachableDynamoDBAnswers503(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		&smithyhttp.RequestSendError{Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}},
		&types.ResourceNotFoundException{Message: new("Requested resource not found")},
	} {
		clk := clock.NewManual(testStart)
		b := newBundle(t, clk, failingOutbox{Outbox: newFakeOutbox(clk), err: err}, nil, Limits{})
		ans := b.do(t, http.MethodGet, "/v1/actions/0-1", tokA, "")
		require.Equal(t, http.StatusServiceUnavailable, ans.Status, "%s", ans.Body)
		code, _ := ans.errorCode(t)
		require.Equal(t, CodeUnavailable, code)
		require.Equal(t, "1", ans.Header.Get("Retry-After"))
		require.NotContains(t, string(ans.Body), "connection refused", "no transport details")
	}
}

// TestStoreOutageAnswers503 (issue 28 item 3): when DynamoDB answers that it
// cannot serve now — the embedded DynamoDB whose data directory has no room
// (ServiceUnavailable, in process or over HTTP), or an InternalServerError
// the SDK's retries did not get past — API calls answer 503 unavailable
// with Retry-After, as docs/api.md promises for an outage (before: 500
// internal).
func TestStoreOutageAnswers503(t *testing.T) {
	t.Parallel()
	full := &smithy.GenericAPIError{Code: "ServiceUnavailable", Message: "the data directory's disk is full", Fault: smithy.FaultServer}
	for _, err := range []error{
		&smithy.OperationError{ServiceID: "DynamoDB", OperationName: "GetItem", Err: full},
		&smithy.OperationError{ServiceID: "DynamoDB", OperationName: "GetItem", Err: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusServiceUnavailable}}, Err: full}},
		&types.InternalServerError{Message: new("Internal server error")},
	} {
		clk := clock.NewManual(testStart)
		b := newBundle(t, clk, failingOutbox{Outbox: newFakeOutbox(clk), err: err}, nil, Limits{})
		ans := b.do(t, http.MethodGet, "/v1/actions/0-1", tokA, "")
		require.Equal(t, http.StatusServiceUnavailable, ans.Status, "%v: %s", err, ans.Body)
		code, _ := ans.errorCode(t)
		require.Equal(t, CodeUnavailable, code)
		require.Equal(t, "1", ans.Header.Get("Retry-After"))
		require.NotContains(t, string(ans.Body), "disk is full", "the reason is DynamoDB's error code, details go to the log")
	}
	// A client fault is still not an outage.
	clk := clock.NewManual(testStart)
	b := newBundle(t, clk, failingOutbox{Outbox: newFakeOutbox(clk), err: &smithy.GenericAPIError{Code: "ValidationException", Fault: smithy.FaultClient}}, nil, Limits{})
	require.Equal(t, http.StatusInternalServerError, b.do(t, http.MethodGet, "/v1/actions/0-1", tokA, "").Status)
}
