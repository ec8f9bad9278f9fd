package ddbhttp

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
)

// TestServerHasTimeouts (issue 28 item 11): the server `ferry dynamodb`
// runs bounds the headers, the whole request, the answer and idle
// keep-alive connections (before: headers only, 30 s).
func TestServerHasTimeouts(t *testing.T) {
	t.Parallel()
	srv := newServer(context.Background(), ddblocal.New(), slog.New(slog.DiscardHandler))
	require.Equal(t, 10*time.Second, srv.ReadHeaderTimeout)
	require.Equal(t, 60*time.Second, srv.ReadTimeout)
	require.Equal(t, 60*time.Second, srv.WriteTimeout)
	require.Equal(t, 60*time.Second, srv.IdleTimeout)
	srv = newServer(context.Background(), ddblocal.New(), slog.New(slog.DiscardHandler), WithTimeouts(Timeouts{Idle: time.Second}))
	require.Equal(t, time.Second, srv.IdleTimeout)
	require.Equal(t, 10*time.Second, srv.ReadHeaderTimeout, "an unset field keeps its default")
}
