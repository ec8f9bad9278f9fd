package outbox

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// slowPrepare is an idempotent receiver whose Prepare takes `took` of the
// manual clock.
type slowPrepare struct {
	clk   *clock.Manual
	took  time.Duration
	calls *int
}

func (s slowPrepare) Spec() KindSpec                         { return KindSpec{Name: "slow", Class: IdempotentReceiver} }
func (s slowPrepare) Validate(string, json.RawMessage) error { return nil }
func (s slowPrepare) Prepare(context.Context, *Attempt) Result {
	s.clk.Advance(s.took)
	return Result{}
}
func (s slowPrepare) Execute(context.Context, *Attempt) Result { *s.calls++; return Done("") }

// Audit (design.md §5): a claim-fenced idempotent head "counts as started from
// its claim" (it may have been sent), so it must never end as CANCELLED
// EXPIRED ("expired before it started") nor FAILED. But when it is
// reclaimed (its first drainer died after the call) and the reclaiming
// attempt gives it back uncalled — Prepare used up the lease (Retry with
// errNoCallBudget) or the fence lease neared its end (release) — the write
// REMOVEs wsa and puts it back ADMITTED: the evidence of the first attempt's
// call is gone, and the reaper then cancels it as EXPIRED.
func TestAuditReclaimedClaimFencedHeadGivenBackLosesItsStart(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	calls := 0
	reg := NewRegistry()
	require.NoError(t, reg.Register(slowPrepare{clk: clk, took: 270 * time.Second, calls: &calls}))
	e, err := New(ddblocal.New(ddblocal.WithClock(clk)), clk, reg, Config{Table: "ferry", Partitions: 1})
	require.NoError(t, err)
	require.NoError(t, e.EnsureTable(ctx))

	r, err := e.Enqueue(ctx, EnqueueParams{Kind: "slow", WorkspaceID: "ws", Payload: []byte(`{}`),
		ExpiresAt: clk.Now().Add(10 * time.Minute)})
	require.NoError(t, err)

	// Attempt 1: claimed (the claim sets the write fence), the provider is
	// called, and the drainer dies before its outcome write.
	v, err := e.FenceTake(ctx, 0, "d1", clk.Now().Add(time.Minute))
	require.NoError(t, err)
	cr, err := e.Claim(ctx, 0, ClaimParams{Owner: "d1", Version: v, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, 1, cr.Claimed)
	require.False(t, cr.Groups[0][0].WriteStartedAt.IsZero(), "claim-fenced")
	calls++ // the provider call of attempt 1

	// Its lease ends; a drainer reclaims it, but Prepare takes 4.5 minutes.
	clk.Advance(6 * time.Minute)
	_, err = e.Sweep(ctx, DrainParams{})
	require.NoError(t, err)

	// The action expires; the reaper runs.
	clk.Advance(5 * time.Minute)
	_, err = e.Reap(ctx)
	require.NoError(t, err)
	got, err := e.ActionGet(ctx, r.Action.ID)
	require.NoError(t, err)
	require.Equal(t, 1, calls)
	require.False(t, got.State == StateCANCELLED && got.StopReason == StopExpired,
		"sent once (attempt 1), yet ended %s/%s as if it never started", got.State, got.StopReason)
}

// A claim-fenced head given back uncalled: claimed from ADMITTED it goes
// back ADMITTED, uncounted, with the claim's fence removed (nothing could
// have been sent); claimed from EXECUTING (a reclaim) it keeps the fence
// and its count, EXECUTING with the lease ended, so the earlier attempt's
// possible call is not forgotten (design.md §5, amended).
func TestClaimFencedReleaseKeepsFenceOnlyAfterReclaim(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	calls := 0
	reg := NewRegistry()
	require.NoError(t, reg.Register(slowPrepare{clk: clk, calls: &calls}))
	e, err := New(ddblocal.New(ddblocal.WithClock(clk)), clk, reg, Config{Table: "ferry", Partitions: 1})
	require.NoError(t, err)
	require.NoError(t, e.EnsureTable(ctx))
	r, err := e.Enqueue(ctx, EnqueueParams{Kind: "slow", WorkspaceID: "ws", Payload: []byte(`{}`),
		ExpiresAt: clk.Now().Add(time.Hour)})
	require.NoError(t, err)

	claim := func(owner string) Action {
		t.Helper()
		v, err := e.FenceTake(ctx, 0, owner, clk.Now().Add(time.Minute))
		require.NoError(t, err)
		cr, err := e.Claim(ctx, 0, ClaimParams{Owner: owner, Version: v, Limit: 1})
		require.NoError(t, err)
		require.Equal(t, 1, cr.Claimed)
		a := cr.Groups[0][0]
		require.True(t, a.claim.fenced)
		return a
	}

	// Claimed from ADMITTED and given back: uncounted, fence gone.
	a := claim("d1")
	require.False(t, a.claim.reclaimed)
	settled, err := e.release(ctx, &a)
	require.NoError(t, err)
	require.True(t, settled)
	got, err := e.ActionGet(ctx, r.Action.ID)
	require.NoError(t, err)
	require.Equal(t, StateADMITTED, got.State)
	require.Equal(t, 0, got.Attempt, "an ADMITTED give-back does not count")
	require.True(t, got.WriteStartedAt.IsZero(), "its own claim's fence goes with it")

	// Claimed again, its drainer dies (it may have called); reclaimed after
	// the lease and given back: the fence stays, EXECUTING, counted.
	clk.Advance(2 * time.Minute) // d1's claim fence lease ends
	claim("d2")
	clk.Advance(6 * time.Minute)
	b := claim("d3")
	require.True(t, b.claim.reclaimed)
	settled, err = e.release(ctx, &b)
	require.NoError(t, err)
	require.True(t, settled)
	got, err = e.ActionGet(ctx, r.Action.ID)
	require.NoError(t, err)
	require.Equal(t, StateEXECUTING, got.State)
	require.False(t, got.WriteStartedAt.IsZero(), "the reclaim's give-back keeps the proof of a possible call")
	require.Equal(t, 2, got.Attempt)
	require.False(t, got.LeaseExpiresAt.After(clk.Now()), "due again now")

	// Expired, the reaper does not take it for one that never started.
	clk.Advance(2 * time.Hour)
	_, err = e.Reap(ctx)
	require.NoError(t, err)
	got, err = e.ActionGet(ctx, r.Action.ID)
	require.NoError(t, err)
	require.Equal(t, StateEXECUTING, got.State, "left for a reclaim (a resend is harmless), not cancelled: stop %s", got.StopReason)
	require.False(t, got.WriteStartedAt.IsZero())
	require.Zero(t, calls)
}
