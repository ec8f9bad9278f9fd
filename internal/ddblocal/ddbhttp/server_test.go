package ddbhttp_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
)

func TestServeUntilContextDone(t *testing.T) {
	t.Parallel()
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	b := &fakeBackend{respond: func(op string, in any) (any, error) {
		if op == "GetItem" {
			return &dynamodb.GetItemOutput{Item: in.(*dynamodb.GetItemInput).Key}, nil
		}
		return nil, nil
	}}
	done := make(chan error, 1)
	go func() { done <- ddbhttp.Serve(ctx, ln, b, nil) }()

	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")))
	require.NoError(t, err)
	transport := &http.Transport{}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String("http://" + ln.Addr().String())
		o.HTTPClient = &http.Client{Transport: transport}
	})

	// Many concurrent callers on one handler, each getting its own answer.
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			k := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("k%d", i)}}
			out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: k})
			if err != nil {
				errs <- err
				return
			}
			if got := out.Item["pk"].(*types.AttributeValueMemberS).Value; got != fmt.Sprintf("k%d", i) {
				errs <- fmt.Errorf("caller %d got %s", i, got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, b.Calls(), 32)

	// Connections the transport dialed but never used would hold a graceful
	// shutdown for its whole grace period.
	transport.CloseIdleConnections()
	cancel()
	require.NoError(t, <-done, "Serve returns nil once its context is done")
}

func TestListenAndServeRefusesBadAddress(t *testing.T) {
	t.Parallel()
	err := ddbhttp.ListenAndServe(context.Background(), "127.0.0.1:-1", &fakeBackend{}, nil)
	require.ErrorContains(t, err, "127.0.0.1:-1")
}

// TestServerCutsStalledClients (issue 28 item 11): a client that sends its
// headers slowly, stops sending its body, or leaves a keep-alive connection
// idle is cut off once the server's timeouts pass (here shortened), over
// loopback connections. Before, `ferry dynamodb` kept 50 of 50 idle
// connections after 71 s and waited forever for a body.
func TestServerCutsStalledClients(t *testing.T) {
	t.Parallel()
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ddbhttp.Serve(ctx, ln, &fakeBackend{}, nil,
			ddbhttp.WithTimeouts(ddbhttp.Timeouts{ReadHeader: 200 * time.Millisecond, Read: 400 * time.Millisecond, Idle: 300 * time.Millisecond}))
	}()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	dial := func(t *testing.T) net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		// The bound of the wait, not a timing goal: far beyond the
		// server's timeouts, so only a server that never cuts fails.
		require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
		return c
	}
	closedByServer := func(t *testing.T, r *bufio.Reader) {
		_, err := io.ReadAll(r)
		require.NoError(t, err, "the server closes the connection (a read deadline here would mean it never did)")
	}

	t.Run("headers sent slowly", func(t *testing.T) {
		c := dial(t)
		_, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\n")
		require.NoError(t, err)
		closedByServer(t, bufio.NewReader(c))
	})
	t.Run("a body that stops arriving", func(t *testing.T) {
		c := dial(t)
		_, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: DynamoDB_20120810.GetItem\r\n"+
			"Content-Type: application/x-amz-json-1.0\r\nContent-Length: 1000\r\n\r\n{\"TableName\":")
		require.NoError(t, err)
		r := bufio.NewReader(c)
		resp, err := http.ReadResponse(r, nil)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "%s", body)
		require.Contains(t, string(body), "RequestTimeoutException")
		require.Contains(t, string(body), "did not arrive within 400ms")
		closedByServer(t, r)
	})
	t.Run("an idle keep-alive connection", func(t *testing.T) {
		c := dial(t)
		_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		r := bufio.NewReader(c)
		resp, err := http.ReadResponse(r, nil)
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.False(t, resp.Close, "a keep-alive connection")
		closedByServer(t, r)
	})
}

// healthBackend is a backend with a Health method (as ddblocal.DB has).
type healthBackend struct {
	*fakeBackend
	err error
}

func (h healthBackend) Health() error { return h.err }

// TestHealthLineSaysDegraded (issue 28 item 3): GET / answers what the
// backend's Health says — 503 and the reason while the embedded DynamoDB's
// data directory cannot take writes — instead of "healthy" whatever
// happens; ServiceUnavailable errors answer 503 with DynamoDB's type.
func TestHealthLineSaysDegraded(t *testing.T) {
	t.Parallel()
	degraded := errors.New("degraded: the data directory's disk is full: writes are refused until it has room again (reads are served)")
	full := &smithy.GenericAPIError{Code: "ServiceUnavailable", Message: "the data directory's disk is full", Fault: smithy.FaultServer}
	b := healthBackend{fakeBackend: &fakeBackend{respond: func(string, any) (any, error) { return nil, full }}, err: degraded}
	srv := httptest.NewServer(ddbhttp.NewHandler(b))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Contains(t, string(body), "degraded: the data directory's disk is full")

	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/", strings.NewReader(`{"TableName":"t","Item":{"pk":{"S":"a"}}}`))
	require.NoError(t, err)
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.PutItem")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
	require.Contains(t, string(body), "#ServiceUnavailable")

	b.err = nil
	srv2 := httptest.NewServer(ddbhttp.NewHandler(b))
	defer srv2.Close()
	resp, err = http.Get(srv2.URL + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
