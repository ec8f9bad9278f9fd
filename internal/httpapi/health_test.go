package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/version"
)

// TestHealthzReportsDynamoDB: /healthz answers 503 with a reason while the
// health check fails and 200 once it passes again; the check runs at most
// once per TTL of the injected clock, and the answer names no address.
// Before issue 13 it answered 200 whatever DynamoDB did.
func TestHealthzReportsDynamoDB(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(testStart)
	var failWith error
	checks := 0
	h, err := New(Options{Outbox: newFakeOutbox(clk), Auth: testAuth(t), Clock: clk, HealthTTL: 2 * time.Second,
		Health: func(context.Context) error { checks++; return failWith }})
	require.NoError(t, err)
	get := func() (int, healthBody) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		var body healthBody
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), "%s", w.Body)
		require.NotContains(t, w.Body.String(), "127.0.0.1")
		return w.Code, body
	}

	status, body := get()
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, healthBody{Status: "ok", DynamoDB: "reachable", Version: version.String()}, body)

	failWith = errors.New("operation error DynamoDB: GetItem: dial tcp 127.0.0.1:8000: connect: connection refused")
	status, _ = get()
	require.Equal(t, http.StatusOK, status, "the answer is reused within the TTL")
	require.Equal(t, 1, checks)

	clk.Advance(2 * time.Second)
	status, body = get()
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, healthBody{Status: "unavailable", DynamoDB: "unreachable", Reason: "DynamoDB is unreachable", Version: version.String()}, body)
	require.Equal(t, 2, checks)

	failWith = &types.ResourceNotFoundException{Message: new("Requested resource not found")}
	clk.Advance(2 * time.Second)
	_, body = get()
	require.Equal(t, "the table does not exist", body.Reason)

	failWith = nil
	clk.Advance(2 * time.Second)
	status, _ = get()
	require.Equal(t, http.StatusOK, status, "healthy again without a restart")
}
