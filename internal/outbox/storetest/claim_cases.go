package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

var _ = register("OldestNOrder", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	var want []string
	for range 5 {
		want = append(want, tb.enqueue(t, outbox.EnqueueParams{}).ID)
	}
	res, _, _ := tb.claim(t, 0, 3)
	require.Equal(t, [][]string{{want[0]}, {want[1]}, {want[2]}}, ids(res))
	res, _, _ = tb.claim(t, 0, 3)
	require.Equal(t, [][]string{{want[3]}, {want[4]}}, ids(res))
	res, _, _ = tb.claim(t, 0, 3)
	require.Empty(t, res.Groups)
})

var _ = register("NotDueIsNotClaimed", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{Payload: Payload(Script{Do: []string{"retry", "done"}})})
	tb.drain(t)
	got := tb.get(t, a.ID)
	require.Equal(t, outbox.StateADMITTED, got.State)
	require.True(t, got.NextAttemptAt.After(tb.b.Clock.Now()))
	res, _, _ := tb.claim(t, 0, 10)
	require.Empty(t, res.Groups)
	tb.b.Clock.Advance(tb.cfg.RetryCap)
	res, _, _ = tb.claim(t, 0, 10)
	require.Equal(t, [][]string{{a.ID}}, ids(res))
})

var _ = register("StrandedLaneHeadBlocksOnlyItsLane", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	head := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "A"})
	// Strand the head: another drainer holds it under a live lease.
	res, _, _ := tb.claim(t, 0, 1)
	require.Equal(t, [][]string{{head.ID}}, ids(res))
	a2 := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "A"})
	require.Equal(t, head.Seq, a2.PrevSeq)
	res, _, _ = tb.claim(t, 0, 10)
	require.Empty(t, res.Groups, "a successor must wait for its head")
	require.Equal(t, outbox.StateADMITTED, tb.get(t, a2.ID).State)
})

var _ = register("BlockedLanesDoNotCrowdOutClaimableWork", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	// Four lanes whose heads are held elsewhere, each with a due successor
	// older than the claimable keyless actions.
	for _, l := range []string{"A", "B", "C", "D"} {
		tb.enqueue(t, outbox.EnqueueParams{LaneKey: l})
	}
	held, _, _ := tb.claim(t, 0, 4)
	require.Equal(t, 4, held.Claimed)
	for _, l := range []string{"A", "B", "C", "D"} {
		tb.enqueue(t, outbox.EnqueueParams{LaneKey: l})
	}
	k1 := tb.enqueue(t, outbox.EnqueueParams{})
	k2 := tb.enqueue(t, outbox.EnqueueParams{})
	res, _, _ := tb.claim(t, 0, 2)
	require.Equal(t, [][]string{{k1.ID}, {k2.ID}}, ids(res))
})

var _ = register("StrandedLaneBacklogIsReadOncePerClaim", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	head := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "A"})
	res, _, _ := tb.claim(t, 0, 1) // stranded: held under a live lease
	require.Equal(t, [][]string{{head.ID}}, ids(res))
	// A backlog many batches deep behind it, then claimable work.
	for range 30 {
		tb.enqueue(t, outbox.EnqueueParams{LaneKey: "A"})
	}
	k1 := tb.enqueue(t, outbox.EnqueueParams{})
	k2 := tb.enqueue(t, outbox.EnqueueParams{})
	tb.settled()
	db := &countingDB{DynamoDB: tb.b.DB, calls: map[string]int{}}
	e, err := outbox.New(db, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg)
	require.NoError(t, err)
	v, err := e.FenceTake(ctx, 0, "reader", tb.b.Clock.Now().Add(time.Minute))
	require.NoError(t, err)
	got, err := e.Claim(ctx, 0, outbox.ClaimParams{Owner: "reader", Version: v, Limit: 3})
	require.NoError(t, err)
	require.Equal(t, [][]string{{k1.ID}, {k2.ID}}, ids(got))
	// The lane comes out of the due index as groups of at most 3; only the
	// first group's head has its predecessor read (the stranded head): the
	// members dropped with it block the groups behind them without a read.
	require.Equal(t, 1, db.snapshot()["BatchGetItem keys"])
	require.NoError(t, e.FenceRelease(ctx, 0, "reader", v))
})

// strandedLane claims the head of lane A as a drainer that then died (its
// lease runs) and enqueues 60 members behind it.
func strandedLane(t *testing.T, tb *bundle) (head outbox.Action, lease time.Time, lane []outbox.Action) {
	t.Helper()
	head = tb.enqueue(t, outbox.EnqueueParams{LaneKey: "A"})
	res, _, _ := tb.claim(t, 0, 1)
	require.Equal(t, [][]string{{head.ID}}, ids(res))
	for range 60 {
		lane = append(lane, tb.enqueue(t, outbox.EnqueueParams{LaneKey: "A"}))
	}
	return head, tb.get(t, head.ID).LeaseExpiresAt, lane
}

// strandedWake returns a wake-up of the stranded partition: a keyless
// action enqueued, then one drain by an engine that counts its calls; it
// checks the action ran and returns how many due items the drain read.
func strandedWake(ctx context.Context, t *testing.T, tb *bundle) func() int {
	db := &countingDB{DynamoDB: tb.b.DB, calls: map[string]int{}}
	e, err := outbox.New(db, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg)
	require.NoError(t, err)
	return func() int {
		t.Helper()
		k := tb.enqueue(t, outbox.EnqueueParams{})
		tb.b.Clock.Advance(time.Second)
		before := db.snapshot()["Query due items"]
		tb.settled()
		r, err := e.DrainPartition(ctx, 0, outbox.DrainParams{})
		require.NoError(t, err)
		require.Equal(t, 1, r.Ended)
		require.Equal(t, outbox.StateDONE, tb.get(t, k.ID).State)
		return db.snapshot()["Query due items"] - before
	}
}

// strandedLaneRunsAfterItsLease: once the head's lease is over it is
// reclaimed, and its lane runs.
func strandedLaneRunsAfterItsLease(t *testing.T, tb *bundle, head outbox.Action, lease time.Time, lane []outbox.Action) {
	t.Helper()
	tb.b.Clock.Set(lease)
	for range 10 {
		tb.drain(t)
		tb.b.Clock.Advance(time.Second)
	}
	require.Equal(t, outbox.StateDONE, tb.get(t, head.ID).State)
	for _, a := range lane {
		require.Equal(t, outbox.StateDONE, tb.get(t, a.ID).State)
	}
}

var _ = register("StrandedLaneIsReadOncePerLease", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	head, lease, lane := strandedLane(t, tb)
	tb.b.Clock.Advance(2 * time.Minute) // the run is older than the skew bound and the write margin
	wake := strandedWake(ctx, t, tb)
	require.GreaterOrEqual(t, wake(), 61, "the first drain reads the blocked run")
	// Later wake-ups read past the run while the head's lease runs: the
	// fence row remembers it (ADR 0012 part 3).
	for range 3 {
		require.Equal(t, 1, wake(), "only the new action is read")
	}
	strandedLaneRunsAfterItsLease(t, tb, head, lease, lane)
})

var _ = register("YoungStrandedRunIsReadOnceUntilItIsFirm", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	head, lease, lane := strandedLane(t, tb)
	// The run is younger than the skew bound and the write margin: a row
	// due inside it may still enter the index.
	tb.b.Clock.Advance(time.Second)
	wake := strandedWake(ctx, t, tb)
	require.GreaterOrEqual(t, wake(), 61, "the first drain reads the blocked run")
	// Until the run's rows must all be in the index, later wake-ups read
	// past it (before ADR 0012 part 3's amendment: every one read it all).
	for range 3 {
		require.Equal(t, 1, wake(), "only the new action is read")
	}
	// Once its last row is older than the bound, the run is read from the
	// front once more, and then remembered until the head's lease ends.
	tb.b.Clock.Advance(tb.cfg.ClockSkew + tb.cfg.WriteMargin)
	require.GreaterOrEqual(t, wake(), 61, "the run is read again once it is firm")
	for range 3 {
		require.Equal(t, 1, wake(), "only the new action is read")
	}
	strandedLaneRunsAfterItsLease(t, tb, head, lease, lane)
})

var _ = register("LateRowInAYoungStrandedRunWaitsUntilTheRunIsFirm", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	strandedLane(t, tb)
	tb.b.Clock.Advance(time.Second)
	tb.drain(t) // remembers the young run (two batches and more)
	// A keyless enqueue whose clock runs behind (within the skew bound)
	// lands inside the remembered run.
	tb.b.Clock.Advance(-2 * time.Second)
	late := tb.enqueue(t, outbox.EnqueueParams{})
	tb.b.Clock.Advance(3 * time.Second)
	tb.drain(t)
	require.Equal(t, outbox.StateADMITTED, tb.get(t, late.ID).State, "inside the run: not read before it is firm")
	// Once the run's rows must all be in the index, the run is read from
	// the front again and the late row is claimed.
	tb.b.Clock.Advance(tb.cfg.ClockSkew + tb.cfg.WriteMargin)
	tb.drain(t)
	require.Equal(t, outbox.StateDONE, tb.get(t, late.ID).State)
})

var _ = register("IndependentLanesPassStrandedHead", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	// Lane A's head waits for a retry; its successor is due but blocked.
	headA := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "A", Payload: Payload(Script{Do: []string{"retry", "done"}})})
	tb.drain(t)
	a2 := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "A"})
	b1 := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "B"})
	k := tb.enqueue(t, outbox.EnqueueParams{})
	res, _, _ := tb.claim(t, 0, 10)
	require.Equal(t, [][]string{{b1.ID}, {k.ID}}, ids(res))
	require.Equal(t, outbox.StateADMITTED, tb.get(t, a2.ID).State)
	require.Equal(t, outbox.StateADMITTED, tb.get(t, headA.ID).State)
})

var _ = register("LaneGroupComesInOrder", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	var lane []string
	for range 3 {
		lane = append(lane, tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"}).ID)
	}
	other := tb.enqueue(t, outbox.EnqueueParams{})
	res, _, _ := tb.claim(t, 0, 10)
	require.Equal(t, [][]string{lane, {other.ID}}, ids(res))
	// Run them: the lane runs in order and every member ends.
	for _, g := range res.Groups {
		for _, a := range g {
			_, err := tb.e.AttemptFinish(ctx, a, outbox.Done("x"))
			require.NoError(t, err)
		}
	}
	for _, id := range append(lane, other.ID) {
		require.Equal(t, outbox.StateDONE, tb.get(t, id).State)
	}
})

var _ = register("LimitSmallerThanLaneBacklogTakesLanesOldest", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	var lane []string
	for range 5 {
		lane = append(lane, tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"}).ID)
	}
	res, _, _ := tb.claim(t, 0, 2)
	require.Equal(t, [][]string{lane[:2]}, ids(res))
})

var _ = register("LaneRunsInOrderThroughDrain", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	var lane []string
	for range 4 {
		lane = append(lane, tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"}).ID)
	}
	r := tb.drain(t)
	require.Equal(t, 4, r.Ended)
	var want []string
	for _, id := range lane {
		want = append(want, "exec:"+id)
	}
	require.Equal(t, want, tb.rec.Order())
})

var _ = register("WaitingLaneMembersReleasedWhenHeadDoesNotEnd", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	head := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", Payload: Payload(Script{Do: []string{"retry", "done"}})})
	second := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	r := tb.drain(t)
	require.Equal(t, 2, r.Claimed)
	require.Equal(t, 1, r.Released)
	s := tb.get(t, second.ID)
	require.Equal(t, outbox.StateADMITTED, s.State)
	require.Equal(t, 0, s.Attempt, "a released member's claim does not count")
	require.Zero(t, tb.rec.Execs(second.ID))
	tb.b.Clock.Advance(tb.cfg.RetryCap)
	tb.drain(t)
	require.Equal(t, outbox.StateDONE, tb.get(t, head.ID).State)
	require.Equal(t, outbox.StateDONE, tb.get(t, second.ID).State)
	require.Equal(t, []string{"exec:" + head.ID, "exec:" + head.ID, "exec:" + second.ID}, tb.rec.Order())
})

var _ = register("WaitingLaneMemberLeaseRenewedBeforeItRuns", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	first := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	second := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	// The head's provider call takes most of the lease.
	tb.rec.OnExecute = func(att *outbox.Attempt) {
		if att.Action.ID == first.ID {
			tb.b.Clock.Advance(tb.cfg.Lease - tb.cfg.WriteMargin/2)
		}
	}
	tb.drain(t)
	require.Equal(t, outbox.StateDONE, tb.get(t, first.ID).State)
	require.Equal(t, outbox.StateDONE, tb.get(t, second.ID).State)
	require.Equal(t, 1, tb.rec.Execs(second.ID))
})

var _ = register("WaitingLaneMembersKeepValidLeases", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	var lane []string
	for range 3 {
		lane = append(lane, tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"}).ID)
	}
	// Each of the first two provider calls takes 3 of the lease's 5 minutes:
	// the third member's claim would run out before its turn unless renewed
	// while it waits.
	tb.rec.OnExecute = func(att *outbox.Attempt) {
		if att.Action.ID != lane[2] {
			tb.b.Clock.Advance(3 * time.Minute)
			return
		}
		// At its turn, its lease is still valid.
		got := tb.get(t, lane[2])
		require.True(t, got.LeaseExpiresAt.After(tb.b.Clock.Now()))
	}
	r := tb.drain(t)
	require.Equal(t, 3, r.Ended)
	for _, id := range lane {
		got := tb.get(t, id)
		require.Equal(t, outbox.StateDONE, got.State)
		require.Equal(t, 1, got.Attempt)
	}
})

var _ = register("LaneMemberEndedOutOfOrderStillWaitsForEarlierOnes", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	b := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	c := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", ExpiresAt: tb.b.Clock.Now().Add(time.Hour)})
	d := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	res, _, _ := tb.claim(t, 0, 1)
	require.Equal(t, [][]string{{a.ID}}, ids(res))
	_, err := tb.e.Cancel(ctx, b.ID) // ends out of order: a still runs
	require.NoError(t, err)
	again, _, _ := tb.claim(t, 0, 10)
	require.Empty(t, again.Groups, "c and d wait for a")
	tb.b.Clock.Advance(2 * time.Hour) // c expires; a's lease is over but it was not fenced
	rr, err := tb.settled().Reap(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rr.Expired)
	require.Equal(t, outbox.StopExpired, tb.get(t, c.ID).StopReason)
	// a is reclaimed (its lease ended); d still waits for it: b and c took
	// themselves out of the chain (design.md §7.3), so d is claimed behind a in
	// its group and runs after it.
	again, _, _ = tb.claim(t, 0, 10)
	require.Equal(t, [][]string{{a.ID, d.ID}}, ids(again))
	_, err = tb.e.AttemptFinish(ctx, again.Groups[0][0], outbox.Done("x"))
	require.NoError(t, err)
	got, err := tb.e.AttemptFinish(ctx, again.Groups[0][1], outbox.Done("x"))
	require.NoError(t, err)
	require.Equal(t, outbox.StateDONE, got.State)
})

var _ = register("StaleClaimFenceRefused", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	tb.enqueue(t, outbox.EnqueueParams{})
	now := tb.b.Clock.Now()
	v1, err := tb.e.FenceTake(ctx, 0, "old", now.Add(time.Second))
	require.NoError(t, err)
	// While its lease runs, another drainer is refused the fence.
	_, err = tb.e.FenceTake(ctx, 0, "new", now.Add(time.Minute))
	require.ErrorIs(t, err, outbox.ErrFenceRefused)
	tb.b.Clock.Advance(2 * time.Second)
	v2, err := tb.e.FenceTake(ctx, 0, "new", tb.b.Clock.Now().Add(time.Minute))
	require.NoError(t, err)
	require.Greater(t, v2, v1)
	_, err = tb.settled().Claim(ctx, 0, outbox.ClaimParams{Owner: "old", Version: v1, Limit: 5})
	require.ErrorIs(t, err, outbox.ErrFenceRefused)
})

var _ = register("StaleClaimFenceRefusedAfterNoopClaim", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	v1, err := tb.e.FenceTake(ctx, 0, "old", tb.b.Clock.Now())
	require.NoError(t, err)
	// A newer holder claims and finds nothing.
	v2, err := tb.e.FenceTake(ctx, 0, "new", tb.b.Clock.Now().Add(time.Minute))
	require.NoError(t, err)
	res, err := tb.settled().Claim(ctx, 0, outbox.ClaimParams{Owner: "new", Version: v2, Limit: 5})
	require.NoError(t, err)
	require.Empty(t, res.Groups)
	require.NoError(t, tb.e.FenceRelease(ctx, 0, "new", v2))
	a := tb.enqueue(t, outbox.EnqueueParams{})
	_, err = tb.settled().Claim(ctx, 0, outbox.ClaimParams{Owner: "old", Version: v1, Limit: 5})
	require.ErrorIs(t, err, outbox.ErrFenceRefused)
	require.Equal(t, outbox.StateADMITTED, tb.get(t, a.ID).State)
})

var _ = register("CompletionWithOtherOwnerRefused", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{})
	res, _, _ := tb.claim(t, 0, 1)
	held := res.Groups[0][0]
	forged := held
	forged.Owner = "someone-else"
	_, err := tb.e.AttemptFinish(ctx, forged, outbox.Done("x"))
	require.ErrorIs(t, err, outbox.ErrNotHeld)
	stale := held
	stale.Epoch--
	_, err = tb.e.AttemptFinish(ctx, stale, outbox.Done("x"))
	require.ErrorIs(t, err, outbox.ErrNotHeld)
	require.Equal(t, outbox.StateEXECUTING, tb.get(t, a.ID).State)
	got, err := tb.e.AttemptFinish(ctx, held, outbox.Done("x"))
	require.NoError(t, err)
	require.Equal(t, outbox.StateDONE, got.State)
})

var _ = register("ReclaimAfterLeaseExpiryFencesOldHolder", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{})
	res, _, _ := tb.claim(t, 0, 1)
	old := res.Groups[0][0]
	tb.b.Clock.Advance(tb.cfg.Lease + time.Second)
	res, _, _ = tb.claim(t, 0, 1)
	require.Equal(t, [][]string{{a.ID}}, ids(res))
	now := res.Groups[0][0]
	require.Equal(t, old.Epoch+1, now.Epoch)
	require.Equal(t, 2, now.Attempt)
	_, err := tb.e.AttemptFinish(ctx, old, outbox.Done("x"))
	require.ErrorIs(t, err, outbox.ErrNotHeld)
})

var _ = register("UnknownKindOrVariantKeepsItsLane", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	// A newer build enqueues rows this build cannot decode.
	x, err := tb.newer.Enqueue(ctx, outbox.EnqueueParams{Kind: KindNew, WorkspaceID: "ws", LaneKey: "L", Payload: Payload(Script{})})
	require.NoError(t, err)
	tb.b.Clock.Advance(time.Millisecond)
	y := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	_, err = tb.e.Enqueue(ctx, outbox.EnqueueParams{Kind: KindTagged, WorkspaceID: "ws", Payload: []byte(`{"t":"b"}`)})
	require.Error(t, err, "this build does not know variant b")
	v, err := tb.newer.Enqueue(ctx, outbox.EnqueueParams{Kind: KindTagged, WorkspaceID: "ws", Payload: []byte(`{"t":"b"}`)})
	require.NoError(t, err)
	tb.b.Clock.Advance(time.Millisecond)
	z := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "M"})
	tb.b.Clock.Advance(2 * tb.cfg.Lease)

	r := tb.drain(t)
	require.Equal(t, 1, r.Ended, "only the independent lane runs")
	require.Equal(t, outbox.StateDONE, tb.get(t, z.ID).State)
	for _, id := range []string{x.Action.ID, y.ID, v.Action.ID} {
		got := tb.get(t, id)
		require.Equal(t, outbox.StateADMITTED, got.State, id)
		require.Zero(t, got.Attempt, id)
	}
	tb.b.Clock.Advance(100 * 24 * time.Hour) // beyond any threshold
	rr, err := tb.settled().Reap(ctx)
	require.NoError(t, err)
	require.Zero(t, rr.Expired+rr.Exhausted+rr.Uncertain)
	require.Zero(t, rr.Gauges[0].DueDepth, "rows of unknown kinds are not counted")
	require.Equal(t, 1, rr.Gauges[0].BlockedDepth, "y waits behind the newer build's row")
	// The newer build carries the lane through in order.
	rn, err := tb.settledNewer().DrainPartition(ctx, 0, outbox.DrainParams{})
	require.NoError(t, err)
	require.Equal(t, 3, rn.Ended)
	require.Equal(t, []string{"exec:" + z.ID, "exec:" + x.Action.ID, "exec:" + y.ID}, orderWithout(tb.rec.Order(), "exec:"+v.Action.ID))
	require.Equal(t, outbox.StateDONE, tb.get(t, v.Action.ID).State)
})

// Drain (a test's) brings waiting actions forward, but only those its
// build decodes: a newer build's row keeps the wait that build chose
// (invariant 8: a build touches only rows it decodes). Before, makeDue set
// every waiting row's next attempt to now, whatever its kind.
var _ = register("DrainLeavesTheWaitOfRowsItDoesNotDecode", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	x, err := tb.newer.Enqueue(ctx, outbox.EnqueueParams{Kind: KindNew, WorkspaceID: "ws", Payload: Payload(Script{Do: []string{"retry", "done"}})})
	require.NoError(t, err)
	_, err = tb.settledNewer().DrainPartition(ctx, x.Action.Partition, outbox.DrainParams{})
	require.NoError(t, err)
	waiting := tb.get(t, x.Action.ID)
	require.Equal(t, outbox.StateADMITTED, waiting.State)
	require.True(t, waiting.NextAttemptAt.After(tb.b.Clock.Now()), "the newer build's retry waits")
	mine := tb.enqueue(t, outbox.EnqueueParams{Payload: Payload(Script{Do: []string{"retry", "done"}})})
	require.NoError(t, tb.settled().Drain(ctx))
	require.Equal(t, outbox.StateDONE, tb.get(t, mine.ID).State, "its own retry was brought forward")
	got := tb.get(t, x.Action.ID)
	require.Equal(t, outbox.StateADMITTED, got.State)
	require.Equal(t, waiting.NextAttemptAt, got.NextAttemptAt, "the newer build's row keeps its wait")
})

func orderWithout(o []string, drop string) []string {
	var out []string
	for _, s := range o {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

var _ = register("RunNowCarriesOutLaneHead", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	b := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	got, err := tb.settled().RunNow(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, outbox.StateADMITTED, got.State, "not the lane's head: it waits")
	got, err = tb.settled().RunNow(ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, outbox.StateDONE, got.State)
	got, err = tb.settled().RunNow(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, outbox.StateDONE, got.State)
	_, err = tb.settled().RunNow(ctx, b.ID)
	var te *outbox.TransitionError
	require.True(t, errors.As(err, &te))
})

var _ = register("DeadlineReleasesWhatDidNotStart", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	var lane []string
	for range 3 {
		lane = append(lane, tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"}).ID)
	}
	deadline := tb.b.Clock.Now().Add(3 * time.Minute)
	// The head's provider call runs until the deadline is near.
	tb.rec.OnExecute = func(att *outbox.Attempt) { tb.b.Clock.Set(deadline.Add(-30 * time.Second)) }
	r, err := tb.settled().DrainPartition(ctx, 0, outbox.DrainParams{Deadline: deadline})
	require.NoError(t, err)
	require.Equal(t, 3, r.Claimed)
	require.Equal(t, 1, r.Ended)
	require.Equal(t, 2, r.Released)
	require.Equal(t, outbox.StateDONE, tb.get(t, lane[0]).State)
	for _, id := range lane[1:] {
		got := tb.get(t, id)
		require.Equal(t, outbox.StateADMITTED, got.State)
		require.Zero(t, got.Attempt, "a released claim does not count")
	}
	// A drain that starts too close to its deadline claims nothing.
	r, err = tb.settled().DrainPartition(ctx, 0, outbox.DrainParams{Deadline: tb.b.Clock.Now().Add(tb.cfg.WriteMargin / 2)})
	require.NoError(t, err)
	require.Zero(t, r.Claimed)
	require.True(t, r.More)
})

var _ = register("RunNowLeavesABusyPartitionAlone", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{})
	v, err := tb.e.FenceTake(ctx, 0, "drainer", tb.b.Clock.Now().Add(time.Minute))
	require.NoError(t, err)
	got, err := tb.settled().RunNow(ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, outbox.StateADMITTED, got.State, "a drainer holds the partition")
	require.Zero(t, tb.rec.Execs(a.ID))
	require.NoError(t, tb.e.FenceRelease(ctx, 0, "drainer", v))
	got, err = tb.settled().RunNow(ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, outbox.StateDONE, got.State)
	_, err = tb.e.RunNow(ctx, "0-424242")
	require.ErrorIs(t, err, outbox.ErrNotFound)
})

var _ = register("LaneMemberEndedOutOfOrderAndDeletedStillBlocks", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Retention = time.Hour })
	// a is a proposal nobody admits: it stays live longer than Retention.
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", Propose: true})
	b := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	c := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	_, err := tb.e.Cancel(ctx, b.ID) // ends out of order: a is live
	require.NoError(t, err)
	res, _, _ := tb.claim(t, 0, 10)
	require.Empty(t, res.Groups, "c waits for a")
	// b's TTL passes and retention deletes it while a is still live.
	tb.b.Clock.Advance(2 * time.Hour)
	rr, err := tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rr.Deleted)
	_, err = tb.e.ActionGet(ctx, b.ID)
	require.ErrorIs(t, err, outbox.ErrNotFound)
	require.Equal(t, outbox.StatePROPOSED, tb.get(t, a.ID).State)
	res, _, _ = tb.claim(t, 0, 10)
	require.Empty(t, res.Groups, "c still waits for a")
	// A later member joins behind c and waits too.
	d := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	res, _, _ = tb.claim(t, 0, 10)
	require.Empty(t, res.Groups, "c and d wait for a")
	// Once a ends, c and d run in order.
	_, err = tb.e.Cancel(ctx, a.ID)
	require.NoError(t, err)
	res, _, _ = tb.claim(t, 0, 10)
	require.Equal(t, [][]string{{c.ID, d.ID}}, ids(res))
})
