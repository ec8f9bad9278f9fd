package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// TestDeferralWithoutWaitBacksOffExponentially drives the engine's own
// choice of wait for Retry-After 0 (issue 13, finding 1: a receiver
// answering 429 with Retry-After 0 was called ten times a second): the
// n-th deferral in a row waits the n-th retry backoff, jittered by the
// injected source, capped by RetryCap.
func TestDeferralWithoutWaitBacksOffExponentially(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	e := newPairEngine(t, ddblocal.New(ddblocal.WithClock(clk)), clk,
		Config{Table: "ferry", Partitions: 1, RetryBase: 100 * time.Millisecond, RetryCap: 2 * time.Second})
	bo := Backoff{Base: 100 * time.Millisecond, Cap: 2 * time.Second}
	for n := 0; n < 8; n++ {
		a := Action{Deferrals: n, DeferredSince: clk.Now().Add(-time.Second)}
		d := e.decideAttempt(&a, Defer(0, nil))
		require.Equal(t, StateADMITTED, d.To)
		upper := bo.Delay(n+1, nil)
		require.GreaterOrEqual(t, d.Wait, upper/2, "deferral %d", n+1)
		require.LessOrEqual(t, d.Wait, upper, "deferral %d", n+1)
	}
}

// TestDeferralBoundsHeldByTheStore bypasses the Go decision and sends each
// deferral write against a row on the wrong side of the bound: the row's
// own streak refuses it (design.md §3.1: every transition is refused by a
// condition on the write itself).
func TestDeferralBoundsHeldByTheStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	e := newPairEngine(t, db, clk, Config{Table: "ferry", Partitions: 1, MaxDeferrals: 3, MaxDeferTime: time.Hour})
	// held returns a claimed action whose row carries the given streak.
	held := func(count int, since time.Time) Action {
		r, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", Payload: []byte(`{}`)})
		require.NoError(t, err)
		now := clk.Now()
		it := e.claimUpdate(candidate{a: r.Action, class: IdempotentReceiver}, claimUpdateParams{Owner: "claimer", Now: now, Lease: now.Add(e.cfg.Lease), AnyDue: true, Fence: true})
		_, err = e.db.UpdateItem(ctx, it)
		require.NoError(t, err)
		if count > 0 {
			_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String("ferry"), Key: actionKey(r.Action.Partition, r.Action.Seq),
				UpdateExpression:          aws.String("SET dfn = :n, dfs = :s"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":n": avN(int64(count)), ":s": avMs(since)},
			})
			require.NoError(t, err)
		}
		return mustGet(t, e, r.Action.ID)
	}
	write := func(a Action, d decision) (refused bool) {
		_, refused, err := e.applyDecision(ctx, &a, d, Defer(0, nil), false)
		require.NoError(t, err)
		return refused
	}
	now := clk.Now()
	cut := now.Add(-time.Hour)
	again := decision{To: StateADMITTED, Wait: time.Second, Uncount: true, Write: true,
		Deferral: &deferralWrite{Max: 3, Cutoff: cut, Since: now}}
	end := decision{To: StateFAILED, Reason: StopDeferralsExhausted, Write: true,
		Deferral: &deferralWrite{Exhausted: true, Max: 3, Cutoff: cut}}

	// Deferring again past either bound is refused.
	require.True(t, write(held(3, now.Add(-time.Minute)), again), "count at its bound")
	require.True(t, write(held(1, cut), again), "streak as old as the bound")
	// Ending as exhausted within both bounds is refused.
	require.True(t, write(held(0, time.Time{}), end), "no streak")
	require.True(t, write(held(2, now.Add(-time.Minute)), end), "within both bounds")
	// The allowed sides land, and the streak is counted by the row.
	a := held(2, now.Add(-time.Minute))
	require.False(t, write(a, again))
	got := mustGet(t, e, a.ID)
	require.Equal(t, StateADMITTED, got.State)
	require.Equal(t, 3, got.Deferrals)
	require.Equal(t, now.Add(-time.Minute).UnixMilli(), got.DeferredSince.UnixMilli(), "the streak keeps its start")
	b := held(3, now.Add(-time.Minute))
	require.False(t, write(b, end))
	got = mustGet(t, e, b.ID)
	require.Equal(t, StateFAILED, got.State)
	require.Equal(t, StopDeferralsExhausted, got.StopReason)
	c := held(1, cut)
	require.False(t, write(c, end))
	require.Equal(t, StopDeferralsExhausted, mustGet(t, e, c.ID).StopReason)
}

// TestOtherAnswersEndTheStreak: a Retry or Reread after deferrals clears
// the streak, so the bound counts deferrals in a row.
func TestOtherAnswersEndTheStreak(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	e := newPairEngine(t, ddblocal.New(ddblocal.WithClock(clk)), clk, Config{Table: "ferry", Partitions: 1})
	r, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", Payload: []byte(`{}`)})
	require.NoError(t, err)
	claim := func() Action {
		now := clk.Now()
		a := mustGet(t, e, r.Action.ID)
		it := e.claimUpdate(candidate{a: a, class: IdempotentReceiver}, claimUpdateParams{Owner: "claimer", Now: now, Lease: now.Add(e.cfg.Lease), AnyDue: true, Fence: true})
		_, err := e.db.UpdateItem(ctx, it)
		require.NoError(t, err)
		return mustGet(t, e, a.ID)
	}
	for i := 1; i <= 2; i++ {
		_, err := e.AttemptFinish(ctx, claim(), Defer(time.Second, nil))
		require.NoError(t, err)
		require.Equal(t, i, mustGet(t, e, r.Action.ID).Deferrals)
		clk.Advance(time.Second)
	}
	_, err = e.AttemptFinish(ctx, claim(), Retry(nil))
	require.NoError(t, err)
	got := mustGet(t, e, r.Action.ID)
	require.Zero(t, got.Deferrals)
	require.True(t, got.DeferredSince.IsZero())
}
