package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
	"github.com/ferryhq/ferry/internal/operator"
)

// startTable serves an embedded DynamoDB on a loopback port with a Ferry
// table made by `ferry table create`, and returns its endpoint.
func startTable(t *testing.T) string {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- ddbhttp.Serve(ctx, ln, ddblocal.New(), nil) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-served)
	})
	endpoint := "http://" + ln.Addr().String()
	out, code := runFerry(t, "table", "create", "--dynamodb-endpoint", endpoint)
	require.Equal(t, operator.ExitOK, code, out)
	return endpoint
}

// runFerry runs the command line and returns its output and exit code.
func runFerry(t *testing.T, args ...string) (string, int) {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(""))
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err != nil {
		out.WriteString(err.Error())
	}
	return out.String(), operator.ExitCode(err)
}

// TestPartitionsSetIsStrict is issue 28, item 6: `--set 0` (and `--set=0`,
// `--set 00`) printed the map and exited 0 changing nothing, and `--set
// 0x10` was taken as 16. --set is a decimal count from 1 to the engine's
// bound; anything else is a usage error (exit 2) that changes nothing.
func TestPartitionsSetIsStrict(t *testing.T) {
	t.Parallel()
	endpoint := startTable(t)
	count := func() int {
		out, code := runFerry(t, "partitions", "-o", "json", "--dynamodb-endpoint", endpoint)
		require.Equal(t, operator.ExitOK, code, out)
		var v struct{ Count int }
		require.NoError(t, json.Unmarshal([]byte(out), &v), out)
		return v.Count
	}
	require.Equal(t, 16, count())
	for _, args := range [][]string{
		{"--set", "0"}, {"--set=0"}, {"--set", "00"}, {"--set", "-1"}, {"--set", "+8"},
		{"--set", "0x10"}, {"--set", "0o10"}, {"--set", "1_0"}, {"--set", "8.0"}, {"--set", " 8"}, {"--set", ""},
		{"--set", "1025"}, {"--set", "4000"}, {"--set", "99999999999999999999"},
	} {
		out, code := runFerry(t, append([]string{"partitions", "--yes", "--dynamodb-endpoint", endpoint}, args...)...)
		require.Equal(t, operator.ExitUsage, code, "%v: %s", args, out)
		require.Contains(t, out, "--set", "%v: the message names the flag", args)
		require.NotContains(t, out, "strconv", "%v: no Go internals", args)
	}
	out, _ := runFerry(t, "partitions", "--yes", "--set", "0", "--dynamodb-endpoint", endpoint)
	require.Contains(t, out, "a table needs at least one partition")
	out, _ = runFerry(t, "partitions", "--yes", "--set", "0x10", "--dynamodb-endpoint", endpoint)
	require.Contains(t, out, "a decimal number from 1 to 1024")
	require.Equal(t, 16, count(), "no refused --set changed the count")

	out, code := runFerry(t, "partitions", "--yes", "--set", "010", "--dynamodb-endpoint", endpoint)
	require.Equal(t, operator.ExitOK, code, out)
	require.Equal(t, 10, count(), "decimal, leading zero and all")
}
