package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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
