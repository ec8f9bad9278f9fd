package devstack

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDataDirKeepsActionsAcrossRestarts: with --data-dir, an action
// enqueued and delivered before a restart is still there after it, and the
// table is not created again.
func TestDataDirKeepsActionsAcrossRestarts(t *testing.T) {
	t.Parallel()
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	dir := t.TempDir()
	b := startStack(t, Config{AllowPrivateWebhooks: true, DataDir: dir})
	status, a := b.do(t, http.MethodPost, "/v1/actions",
		`{"kind":"webhook","payload":{"url":"`+srv.URL+`/hook","body":{"n":1}}}`)
	require.Equal(t, http.StatusCreated, status, "%v", a)
	id := a["id"].(string)
	require.Equal(t, "DONE", b.awaitEnded(t, id, 200)["state"])
	b.stop(t)

	b = startStack(t, Config{AllowPrivateWebhooks: true, DataDir: dir})
	status, got := b.do(t, http.MethodGet, "/v1/actions/"+id, "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "DONE", got["state"], "the action survived the restart")
	require.Contains(t, b.logs.String(), "embedded DynamoDB loaded")
	b.stop(t)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	require.Len(t, rcv.ids, 1, "delivered once")
}
