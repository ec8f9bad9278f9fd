package webhook_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

// TestEngineDeliversWebhookWithRetries runs the webhook kind through the
// engine on the embedded DynamoDB: a throttled answer defers, a server
// error retries, and every delivery carries the same webhook-id.
func TestEngineDeliversWebhookWithRetries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newReceiver(t, status(429, "Retry-After", "120"), status(500), status(200))
	reg := outbox.NewRegistry()
	require.NoError(t, reg.Register(b.adapter))
	e, err := outbox.New(ddblocal.New(ddblocal.WithClock(b.clock)), b.clock, reg, outbox.Config{Table: "ferry", Partitions: 1})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, e.EnsureTable(ctx))

	raw, err := json.Marshal(map[string]any{"url": r.URL + "/hook", "body": map[string]int{"order": 42}})
	require.NoError(t, err)
	enq, err := e.Enqueue(ctx, outbox.EnqueueParams{Kind: "webhook", WorkspaceID: "ws1", Payload: raw})
	require.NoError(t, err)
	id := enq.Action.ID

	_, err = e.Sweep(ctx, outbox.DrainParams{})
	require.NoError(t, err)
	a, err := e.ActionGet(ctx, id)
	require.NoError(t, err)
	require.Equal(t, outbox.StateADMITTED, a.State)
	require.Equal(t, b.clock.Now().Add(120*time.Second), a.NextAttemptAt.UTC())
	require.Equal(t, 0, a.Attempt) // a deferral does not count

	require.NoError(t, e.Drain(ctx))
	a, err = e.ActionGet(ctx, id)
	require.NoError(t, err)
	require.Equal(t, outbox.StateDONE, a.State)

	got := r.received()
	require.Len(t, got, 3)
	wh, err := standardwebhooks.NewWebhook(b.secret.String())
	require.NoError(t, err)
	for _, g := range got {
		require.Equal(t, id, g.header.Get("webhook-id"))
		require.NoError(t, wh.VerifyIgnoringTimestamp(g.body, g.header))
	}
}
