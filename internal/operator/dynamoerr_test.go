package operator

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
)

// TestMessagesNameWhatWentWrong is issue 28 item 13: an operator command
// pointed at something that is not DynamoDB printed the SDK's checksum
// warning and "api error UnknownError: UnknownError"; one pointed at a
// closed port the SDK's whole chain ("exceeded maximum number of attempts,
// 4, https response error StatusCode: 0, RequestID: , request send failed,
// Post …"); after failing a while, the retry quota's text. Each now reads
// as what went wrong, and the SDK prints nothing of its own. Not parallel:
// it watches the process's standard error.
func TestMessagesNameWhatWentWrong(t *testing.T) {
	ctx := context.Background()
	notDynamo := httptest.NewServer(http.NotFoundHandler()) // e.g. ferry dev's API
	t.Cleanup(notDynamo.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())

	for endpoint, want := range map[string]string{
		notDynamo.URL: `error reading table "ferry" at ` + notDynamo.URL + `: the endpoint answered HTTP 404, not as DynamoDB does: is it a DynamoDB endpoint? (ferry dev's API is not; ferry dynamodb is)`,
		closed:        `error reading table "ferry" at ` + closed + `: cannot connect (connection refused)`,
	} {
		tgt := Target{Table: "ferry", Endpoint: endpoint, Partitions: 4}
		stderr := captureStderr(t, func() {
			db, err := Client(ctx, tgt)
			require.NoError(t, err)
			_, err = NewSession(ctx, db, clock.System{}, tgt)
			require.Error(t, err)
			require.Equal(t, want, Message(err))
			require.Equal(t, ExitFailed, ExitCode(err))
		})
		require.Empty(t, stderr, "the SDK printed nothing of its own")
	}

	// A client whose retry quota ran out answers the quota's text; what is
	// said is still the cause.
	quota := dynamodb.New(dynamodb.Options{BaseEndpoint: aws.String(closed), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""),
		Retryer:     retry.NewStandard(func(o *retry.StandardOptions) { o.RateLimiter = ratelimit.NewTokenRateLimit(1) })})
	_, err = quota.ListTables(ctx, &dynamodb.ListTablesInput{})
	require.ErrorContains(t, err, "retry quota exceeded")
	require.Equal(t, "cannot connect (connection refused)", DescribeDynamoDBError(err))
}

// captureStderr runs f and returns what was written to the process's
// standard error meanwhile (the SDK's default logger writes there).
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	saved := os.Stderr
	os.Stderr = w
	read := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(r)
		read <- string(b)
	}()
	func() {
		defer func() {
			os.Stderr = saved
			_ = w.Close()
		}()
		f()
	}()
	return <-read
}
