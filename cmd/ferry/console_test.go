package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/console"
	"github.com/ferryhq/ferry/internal/console/consoletest"
	"github.com/ferryhq/ferry/internal/operator"
)

// syncBuffer is a command's output read while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var consoleLink = regexp.MustCompile(`http://127\.0\.0\.1:\d+/console/login\?token=[A-Za-z0-9_-]+`)

// TestConsoleAgainstFerryDynamoDB: `ferry console` against a `ferry
// dynamodb` whose table another process (ferry dev) fills: it prints the
// link that signs in, serves the overview and the actions, reads only
// unless --allow-changes, and with --stack draws the stack's CloudWatch
// metrics (a loopback GetMetricData). It serves on loopback only.
func TestConsoleAgainstFerryDynamoDB(t *testing.T) {
	d := startDevTable(t)
	ids := d.enqueue(t, []map[string]any{
		{"kind": "webhook", "propose": true, "payload": map[string]any{"url": d.hooks + "/ok"}},
		{"kind": "webhook", "lane_key": "order-1", "payload": map[string]any{"url": d.hooks + "/retry"}},
		{"kind": "webhook", "lane_key": "order-1", "payload": map[string]any{"url": d.hooks + "/ok"}},
	})
	cw := consoletest.NewCloudWatch(func(id string, _ time.Time) (float64, bool) { return map[string]float64{"enqueued": 3}[id], true })
	t.Cleanup(cw.Close)
	t.Setenv("AWS_ENDPOINT_URL_CLOUDWATCH", cw.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")

	_, code := d.ferry(t, "", "console", "--addr", "0.0.0.0:0")
	require.Equal(t, operator.ExitUsage, code, "not loopback")
	_, code = d.ferry(t, "", "console", "--addr", "127.0.0.1:0", "--stack", "no'such", "--region", "us-east-1")
	require.Equal(t, operator.ExitUsage, code, "a stack name that is not one")

	ctx, stop := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		root := newRootCommand()
		root.SetOut(out)
		root.SetErr(out)
		root.SetArgs([]string{"console", "--addr", "127.0.0.1:0", "--dynamodb-endpoint", d.endpoint, "--partitions", "4",
			"--region", "us-east-1", "--stack", "ferry-test"})
		done <- root.ExecuteContext(ctx)
	}()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})
	var link string
	require.Eventually(t, func() bool { link = consoleLink.FindString(out.String()); return link != "" }, 10*time.Second, 10*time.Millisecond, out.String())
	require.Contains(t, out.String(), "read-only")

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar}
	get := func(url string) (int, string) {
		resp, err := c.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, page := get(link)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, `id="backlog-total"`)
	require.Contains(t, page, "CloudWatch (stack ferry-test)")
	base := strings.Split(link, console.Prefix)[0] + console.Prefix
	status, page = get(base + "/actions")
	require.Equal(t, http.StatusOK, status)
	for _, id := range ids {
		require.Contains(t, page, id)
	}
	status, page = get(base + "/actions/" + ids[0] + "/admit")
	require.Equal(t, http.StatusForbidden, status, "read-only without --allow-changes")
	require.Contains(t, page, "only reads")

	status, page = get(base + "/metrics.json")
	require.Equal(t, http.StatusOK, status)
	var s console.Series
	require.NoError(t, json.Unmarshal([]byte(page), &s))
	require.Equal(t, 3.0, *s.Enqueued[len(s.Enqueued)-1])
	require.Contains(t, cw.Queries()[0].Expression, "Stack = 'ferry-test'")

	// Another browser without the link is sent to sign in.
	resp, err := http.Get(base + "/actions")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Request.URL.Path, "/console/login")
}
