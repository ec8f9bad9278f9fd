package webhook_test

import (
	"context"
	"encoding/json"
	"net/http"
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

// TestUnusableRetryAfterBacksOffFromTheRetryBase runs a receiver that
// always answers 429 with a Retry-After nobody can use (absent, blank,
// letters, a fraction) through the engine: each deferral waits the retry
// backoff of its number in the run (from RetryBase, doubling, equal
// jitter), not a fixed minute, so a 20 s deferral bound allows several
// calls before DEFERRALS_EXHAUSTED (issue 28 item 9: it allowed 2).
func TestUnusableRetryAfterBacksOffFromTheRetryBase(t *testing.T) {
	t.Parallel()
	for name, handler := range map[string]http.HandlerFunc{
		"Absent":   status(429),
		"Blank":    status(429, "Retry-After", ""),
		"Letters":  status(429, "Retry-After", "abc"),
		"Fraction": status(429, "Retry-After", "1.5"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			r := newReceiver(t, handler)
			reg := outbox.NewRegistry()
			require.NoError(t, reg.Register(b.adapter))
			e, err := outbox.New(ddblocal.New(ddblocal.WithClock(b.clock)), b.clock, reg,
				outbox.Config{Table: "ferry", Partitions: 1, RetryBase: time.Second, MaxDeferTime: 20 * time.Second})
			require.NoError(t, err)
			ctx := context.Background()
			require.NoError(t, e.EnsureTable(ctx))
			raw, err := json.Marshal(map[string]any{"url": r.URL + "/hook", "body": 1})
			require.NoError(t, err)
			enq, err := e.Enqueue(ctx, outbox.EnqueueParams{Kind: "webhook", WorkspaceID: "ws1", Payload: raw})
			require.NoError(t, err)

			start := b.clock.Now()
			var waits []time.Duration
			for range 20 {
				_, err = e.Sweep(ctx, outbox.DrainParams{})
				require.NoError(t, err)
				a, err := e.ActionGet(ctx, enq.Action.ID)
				require.NoError(t, err)
				if a.State != outbox.StateADMITTED {
					require.Equal(t, outbox.StateFAILED, a.State)
					require.Equal(t, outbox.StopDeferralsExhausted, a.StopReason)
					break
				}
				wait := a.NextAttemptAt.Sub(b.clock.Now())
				waits = append(waits, wait)
				b.clock.Advance(wait)
			}
			require.Len(t, r.received(), len(waits)+1)
			require.GreaterOrEqual(t, len(waits), 4, "waits %v", waits)
			bound := time.Second
			for i, w := range waits[:4] {
				require.True(t, w >= bound/2 && w <= bound, "deferral %d waited %s, want %s..%s (waits %v)", i+1, w, bound/2, bound, waits)
				bound *= 2
			}
			require.Equal(t, 20*time.Second, b.clock.Now().Sub(start), "the run lasts its bound, waits %v", waits)
		})
	}
}
