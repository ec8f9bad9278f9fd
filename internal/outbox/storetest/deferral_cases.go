package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Bounded deferrals (design.md §7.2): a receiver that
// answers 429 with Retry-After 0 forever was called ten times a second and
// held its lane for good.

var _ = register("DeferralsWithoutWaitBackOffThenEndAndFreeTheLane", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) {
		c.RetryBase, c.RetryCap, c.MaxDeferrals = 100*time.Millisecond, 10*time.Second, 4
	})
	head := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "l", MaxAttempts: 1, Payload: Payload(Script{Do: []string{"defer"}})})
	next := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "l", Payload: Payload(Script{Do: []string{"done"}})})
	bo := outbox.Backoff{Base: 100 * time.Millisecond, Cap: 10 * time.Second}
	for n := 1; n <= 4; n++ {
		tb.drain(t)
		got := tb.get(t, head.ID)
		require.Equal(t, outbox.StateADMITTED, got.State, "deferral %d", n)
		require.Equal(t, n, got.Deferrals)
		require.Zero(t, got.Attempt, "a deferral does not count")
		wait := got.NextAttemptAt.Sub(tb.b.Clock.Now())
		// The n-th deferral in a row waits the n-th retry backoff
		// (jittered: between half of it and all of it; times are stored in
		// milliseconds).
		require.GreaterOrEqual(t, wait, bo.Delay(n, nil)/2-time.Millisecond, "deferral %d", n)
		require.LessOrEqual(t, wait, bo.Delay(n, nil), "deferral %d", n)
		tb.drain(t) // not due yet: nobody calls
		require.Equal(t, n, tb.rec.Execs(head.ID))
		require.Zero(t, tb.rec.Execs(next.ID), "the lane waits behind its head")
		tb.b.Clock.Advance(wait)
	}
	tb.drain(t)
	got := tb.get(t, head.ID)
	require.Equal(t, outbox.StateFAILED, got.State)
	require.Equal(t, outbox.StopDeferralsExhausted, got.StopReason)
	require.Equal(t, 5, tb.rec.Execs(head.ID), "four deferrals, then the call that ends it")
	// The lane moves on.
	tb.drain(t)
	require.Equal(t, outbox.StateDONE, tb.get(t, next.ID).State)
})

var _ = register("DeferralsBoundedInTimeHonourTheProviderWait", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.MaxDeferTime = 12 * time.Minute })
	a := tb.enqueue(t, outbox.EnqueueParams{Payload: Payload(Script{Do: []string{"defer:5m"}})})
	start := tb.b.Clock.Now()
	for n, want := range []time.Duration{5 * time.Minute, 5 * time.Minute, 2 * time.Minute} {
		tb.drain(t)
		got := tb.get(t, a.ID)
		require.Equal(t, outbox.StateADMITTED, got.State, "deferral %d", n+1)
		require.Equal(t, want, got.NextAttemptAt.Sub(tb.b.Clock.Now()).Round(time.Second),
			"deferral %d: the provider's 5 min, but never past the streak's 12 min", n+1)
		require.False(t, got.NextAttemptAt.After(got.DeferredSince.Add(12*time.Minute)))
		require.WithinDuration(t, start, got.DeferredSince, time.Second, "the streak began at the first deferral")
		tb.b.Clock.Advance(want)
	}
	tb.drain(t)
	got := tb.get(t, a.ID)
	require.Equal(t, outbox.StateFAILED, got.State)
	require.Equal(t, outbox.StopDeferralsExhausted, got.StopReason)
	require.Equal(t, 4, tb.rec.Execs(a.ID))
})

var _ = register("DeferralStreakEndsWithAnotherAnswer", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.MaxDeferrals = 2 })
	// Attempt 1 defers twice (attempt numbers do not move on a deferral),
	// then ... each attempt's word repeats until the attempt counts.
	a := tb.enqueue(t, outbox.EnqueueParams{Payload: Payload(Script{Do: []string{"defer:1s"}})})
	for range 2 {
		tb.drain(t)
		tb.b.Clock.Advance(time.Second)
	}
	require.Equal(t, 2, tb.get(t, a.ID).Deferrals)
	// An answer that counts clears the streak: write it as the drainer would.
	res, owner, _ := tb.claim(t, 0, 1)
	require.Len(t, res.Groups, 1)
	held := res.Groups[0][0]
	require.Equal(t, owner, held.Owner)
	_, err := tb.e.AttemptFinish(ctx, held, outbox.Retry(nil))
	require.NoError(t, err)
	got := tb.get(t, a.ID)
	require.Zero(t, got.Deferrals)
	require.Equal(t, 1, got.Attempt)
	// Deferrals may run to the bound again.
	tb.b.Clock.Advance(tb.cfg.RetryCap)
	for range 2 {
		tb.drain(t)
		require.Equal(t, outbox.StateADMITTED, tb.get(t, a.ID).State)
		tb.b.Clock.Advance(time.Second)
	}
	tb.drain(t)
	require.Equal(t, outbox.StopDeferralsExhausted, tb.get(t, a.ID).StopReason)
})

// endObserver records the outcome each ended action was observed with.
type endObserver struct {
	outbox.NopObserver
	mu    sync.Mutex
	ended map[string]outbox.Outcome
}

func (o *endObserver) ActionEnded(a *outbox.Action, outcome outbox.Outcome, _ outbox.StopReason) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ended[a.ID] = outcome
}

// An action is observed (the ActionsEnded metric's Outcome, the "action
// ended" log) with the outcome of the state it ended in: one whose retries
// or deferrals ran out ended FAILED, not RETRY or DEFER, and a read-back
// that ran out UNCERTAIN, so the alarms on FAILED and UNCERTAIN count it
// (issue 28 item 12).
var _ = register("EndObservedAsTheStateItEndedIn", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.MaxDeferrals = 1 })
	obs := &endObserver{ended: map[string]outbox.Outcome{}}
	e, err := outbox.New(tb.b.DB, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg, outbox.WithObserver(obs))
	require.NoError(t, err)
	want := map[string]outbox.Outcome{}
	for do, outcome := range map[string]outbox.Outcome{"retry": outbox.OutcomeFailed, "reread": outbox.OutcomeUncertain,
		"defer": outbox.OutcomeFailed, "done": outbox.OutcomeDone, "failed": outbox.OutcomeFailed} {
		a := tb.enqueue(t, outbox.EnqueueParams{Kind: KindRB, MaxAttempts: 1, Payload: Payload(Script{Do: []string{do}, ReadBack: "none"})})
		want[a.ID] = outcome
	}
	for range 3 {
		_, err := e.DrainPartition(ctx, 0, outbox.DrainParams{})
		require.NoError(t, err)
		tb.b.Clock.Advance(time.Minute)
		tb.settled()
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Equal(t, want, obs.ended)
})
