package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// The operator's reads (ferry status, ferry actions, ferry subjects): they
// read what the engine wrote and never write.

var _ = register("StatusCountsWhatTheReaperGaugesAndMore", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 2; c.StuckAfter = time.Minute })
	start := tb.b.Clock.Now()
	done := tb.enqueue(t, outbox.EnqueueParams{})
	failed := tb.enqueue(t, outbox.EnqueueParams{Payload: Payload(Script{Do: []string{"failed"}})})
	tb.enqueue(t, outbox.EnqueueParams{Propose: true})
	waiting := tb.enqueue(t, outbox.EnqueueParams{Payload: Payload(Script{Do: []string{"retry"}})})
	tb.drain(t)
	require.Equal(t, outbox.StateDONE, tb.get(t, done.ID).State)
	require.Equal(t, outbox.StateFAILED, tb.get(t, failed.ID).State)
	require.Equal(t, outbox.StateADMITTED, tb.get(t, waiting.ID).State, "backing off")
	erased := tb.enqueue(t, outbox.EnqueueParams{SubjectID: "s", LaneKey: "L"})
	tb.enqueue(t, outbox.EnqueueParams{SubjectID: "s", LaneKey: "L"}) // behind it: a tombstone keeps the order
	n, err := tb.settled().EraseSubject(ctx, "ws", "s")
	require.NoError(t, err)
	require.Equal(t, 2, n)
	_, err = tb.e.ActionGet(ctx, erased.ID)
	require.ErrorIs(t, err, outbox.ErrNotFound)
	// A lane whose head has waited past StuckAfter, and its second member.
	head := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "stuck", Payload: Payload(Script{Do: []string{"retry"}})})
	tb.enqueue(t, outbox.EnqueueParams{LaneKey: "stuck"})
	tb.b.Clock.Advance(10 * time.Minute)

	st, err := tb.settled().StatusGet(ctx, outbox.StatusParams{EndedSince: start})
	require.NoError(t, err)
	require.Len(t, st.Partitions, 2)
	tot := st.Total
	require.Equal(t, 2, tot.DueDepth, "the retried action and the stuck head")
	require.Equal(t, 1, tot.BlockedDepth, "the member behind the head")
	require.Equal(t, 1, tot.StuckLaneHeads, "one lane")
	require.Equal(t, 0, tot.ClaimedDepth)
	require.Equal(t, 0, tot.Waiting)
	require.Greater(t, tot.OldestDueAge, 9*time.Minute)
	// The lane's first member had no predecessor: it went; the second
	// stays a tombstone so that order holds, and counts as erased.
	require.Equal(t, map[string]int{"DONE": 1, "FAILED": 1, "ERASED": 1}, tot.Ended)
	require.False(t, tot.Truncated)
	_ = head

	// Nothing ended since a later start; the reaper sees the same backlog.
	st, err = tb.settled().StatusGet(ctx, outbox.StatusParams{EndedSince: tb.b.Clock.Now()})
	require.NoError(t, err)
	require.Empty(t, st.Total.Ended)
	rr, err := tb.settled().Reap(ctx)
	require.NoError(t, err)
	g := backlogGauges(rr)
	require.Equal(t, st.Total.DueDepth, g.DueDepth, "status and reaper agree on the due depth")
	require.Equal(t, st.Total.BlockedDepth, g.BlockedDepth)
	require.Equal(t, st.Total.StuckLaneHeads, g.StuckLaneHeads)
})

var _ = register("StatusCountsClaimedAndLeaseExpired", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{})
	b := tb.enqueue(t, outbox.EnqueueParams{})
	res, _, _ := tb.claim(t, 0, 2)
	require.Equal(t, [][]string{{a.ID}, {b.ID}}, ids(res))
	st, err := tb.settled().StatusGet(ctx, outbox.StatusParams{})
	require.NoError(t, err)
	require.Equal(t, 2, st.Total.ClaimedDepth)
	require.Equal(t, 2, st.Total.Inflight, "the claim put them in the fence's in-flight map")
	require.Zero(t, st.Total.DueDepth)
	tb.b.Clock.Advance(tb.cfg.Lease + time.Second)
	st, err = tb.settled().StatusGet(ctx, outbox.StatusParams{})
	require.NoError(t, err)
	require.Equal(t, 2, st.Total.LeaseExpired)
	require.Equal(t, 2, st.Total.DueDepth, "a lost lease is due again")
	require.Zero(t, st.Total.ClaimedDepth)
	require.Empty(t, st.Total.Ended, "no ended count asked for")
})

var _ = register("StatusBoundsItsReads", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	start := tb.b.Clock.Now()
	for range 5 {
		tb.enqueue(t, outbox.EnqueueParams{})
	}
	tb.drain(t)
	st, err := tb.settled().StatusGet(ctx, outbox.StatusParams{EndedSince: start, MaxEndedRows: 3})
	require.NoError(t, err)
	require.Equal(t, 3, st.Total.Ended["DONE"], "at most MaxEndedRows rows read")
	require.True(t, st.Total.Truncated, "and it says the count is a lower bound")
})

var _ = register("ActionFindFiltersAndPages", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 3 })
	var inLane, ofSubject []string
	for i := range 12 {
		p := outbox.EnqueueParams{}
		if i%3 == 0 {
			p.LaneKey = "L"
		}
		if i%4 == 0 {
			p.SubjectID = "s"
		}
		if i%2 == 0 {
			p.WorkspaceID = "other"
		}
		a := tb.enqueue(t, p)
		if p.LaneKey != "" && p.WorkspaceID != "other" {
			inLane = append(inLane, a.ID)
		}
		if p.SubjectID != "" && p.WorkspaceID == "other" {
			ofSubject = append(ofSubject, a.ID)
		}
	}
	tb.enqueue(t, outbox.EnqueueParams{Kind: KindAMO, Propose: true})
	e := tb.settled()
	all := findAll(ctx, t, e, outbox.ActionFindParams{Limit: 5})
	require.Len(t, all, 13, "every workspace, page by page")
	require.Len(t, findAll(ctx, t, e, outbox.ActionFindParams{WorkspaceID: "ws", Limit: 2}), 7)
	require.ElementsMatch(t, inLane, findAll(ctx, t, e, outbox.ActionFindParams{WorkspaceID: "ws", LaneKey: "L", Limit: 1}))
	require.ElementsMatch(t, ofSubject, findAll(ctx, t, e, outbox.ActionFindParams{WorkspaceID: "other", SubjectID: "s", Limit: 1}))
	props := findAll(ctx, t, e, outbox.ActionFindParams{State: outbox.StatePROPOSED, Kind: KindAMO})
	require.Len(t, props, 1)

	// A short MaxRows returns short pages with a cursor, never wrong ones.
	r, err := e.ActionFind(ctx, outbox.ActionFindParams{Kind: KindAMO, MaxRows: 2})
	require.NoError(t, err)
	require.LessOrEqual(t, r.Examined, 2)
	require.NotEmpty(t, r.NextCursor)

	_, err = e.ActionFind(ctx, outbox.ActionFindParams{LaneKey: "L"})
	var ve *outbox.ValidationError
	require.ErrorAs(t, err, &ve, "a lane needs its workspace")
	_, err = e.ActionFind(ctx, outbox.ActionFindParams{WorkspaceID: "ws", LaneKey: "L", Cursor: r.NextCursor})
	require.ErrorAs(t, err, &ve, "a cursor of another listing is refused")
})

func findAll(ctx context.Context, t *testing.T, e *outbox.Engine, p outbox.ActionFindParams) []string {
	t.Helper()
	var out []string
	for pages := 0; ; pages++ {
		require.Less(t, pages, 100)
		r, err := e.ActionFind(ctx, p)
		require.NoError(t, err)
		if p.Limit > 0 {
			require.LessOrEqual(t, len(r.Actions), p.Limit)
		}
		for _, a := range r.Actions {
			require.NotContains(t, out, a.ID, "no action twice")
			out = append(out, a.ID)
		}
		if r.NextCursor == "" {
			return out
		}
		p.Cursor = r.NextCursor
	}
}

var _ = register("ActionNeighboursAreTheLaneMembersAround", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	first := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	tb.enqueue(t, outbox.EnqueueParams{LaneKey: "other"})
	tb.enqueue(t, outbox.EnqueueParams{WorkspaceID: "ws2", LaneKey: "L"}) // same name, another tenant's lane
	second := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	third := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	tb.drain(t) // ended members are still neighbours while the table holds them
	a := tb.get(t, second.ID)
	n, err := tb.settled().ActionNeighbours(ctx, &a)
	require.NoError(t, err)
	require.NotNil(t, n.Prev)
	require.NotNil(t, n.Next)
	require.Equal(t, first.ID, n.Prev.ID)
	require.Equal(t, third.ID, n.Next.ID)
	require.Equal(t, outbox.StateDONE, n.Prev.State)
	a = tb.get(t, first.ID)
	n, err = tb.e.ActionNeighbours(ctx, &a)
	require.NoError(t, err)
	require.Nil(t, n.Prev)
	require.Equal(t, second.ID, n.Next.ID)
	lone := tb.enqueue(t, outbox.EnqueueParams{})
	n, err = tb.e.ActionNeighbours(ctx, &lone)
	require.NoError(t, err)
	require.Nil(t, n.Prev)
	require.Nil(t, n.Next)
})

var _ = register("SubjectWorkspacesAndErasureProgress", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	tb.enqueue(t, outbox.EnqueueParams{WorkspaceID: "a", SubjectID: "s"})
	tb.enqueue(t, outbox.EnqueueParams{WorkspaceID: "b", SubjectID: "s", IdempotencyKey: "k"})
	tb.enqueue(t, outbox.EnqueueParams{WorkspaceID: "b", SubjectID: "s"})
	tb.enqueue(t, outbox.EnqueueParams{WorkspaceID: "c", SubjectID: "s2"})
	tb.enqueue(t, outbox.EnqueueParams{WorkspaceID: "c", SubjectID: "xs"})
	r, err := tb.settled().SubjectWorkspaces(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, r.Workspaces)
	var seen []int
	n, err := tb.e.SubjectErase(ctx, outbox.SubjectEraseParams{WorkspaceID: "b", SubjectID: "s", Progress: func(n int) { seen = append(seen, n) }})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []int{1, 2}, seen)
	r, err = tb.settled().SubjectWorkspaces(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, r.Workspaces)
})

// backlogGauges adds up a reaper run's gauges of every partition.
func backlogGauges(rr *outbox.ReapResult) outbox.PartitionGauges {
	var tot outbox.PartitionGauges
	for _, g := range rr.Gauges {
		tot.DueDepth += g.DueDepth
		tot.BlockedDepth += g.BlockedDepth
		tot.StuckLaneHeads += g.StuckLaneHeads
		tot.OldestDueAge = max(tot.OldestDueAge, g.OldestDueAge)
		tot.OldestBlockedAge = max(tot.OldestBlockedAge, g.OldestBlockedAge)
	}
	return tot
}

// Issue 28, item 8: a lane head deferred every minute with 5 members
// behind it showed DUE 5, a growing OLDEST-DUE ("the drainer is not
// keeping up") and STUCK-HEADS 0, in ferry status and the reaper's gauges
// alike. The members wait behind their lane: blocked, not due; the lane is
// stuck once they have waited past StuckAfter.
var _ = register("LaneBlockedByItsHeadIsNotABacklog", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.StuckAfter = 10 * time.Minute })
	head := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "hot", Payload: Payload(Script{Do: []string{"defer:1m"}})})
	for range 5 {
		tb.enqueue(t, outbox.EnqueueParams{LaneKey: "hot"})
	}
	for range 20 {
		tb.drain(t)
		require.Equal(t, outbox.StateADMITTED, tb.get(t, head.ID).State, "deferred again")
		tb.b.Clock.Advance(time.Minute)
	}
	tb.drain(t) // deferred again: due in a minute
	keyless := tb.enqueue(t, outbox.EnqueueParams{})
	tb.b.Clock.Advance(10 * time.Second)
	check := func(g outbox.PartitionGauges, what string) {
		require.Equal(t, 1, g.DueDepth, "%s: only the keyless action can be claimed", what)
		require.Equal(t, 5, g.BlockedDepth, "%s: the members behind the deferred head", what)
		require.Equal(t, 1, g.StuckLaneHeads, "%s: their lane is stuck", what)
		require.Less(t, g.OldestDueAge, time.Minute, "%s: the drainer keeps up", what)
		require.Greater(t, g.OldestBlockedAge, 20*time.Minute, "%s", what)
	}
	st, err := tb.settled().StatusGet(ctx, outbox.StatusParams{})
	require.NoError(t, err)
	check(st.Total.PartitionGauges, "status")
	require.Equal(t, 1, st.Total.Waiting, "the head waits out its deferral")
	rr, err := tb.settled().Reap(ctx)
	require.NoError(t, err)
	check(backlogGauges(rr), "reaper")
	tb.drain(t)
	require.Equal(t, outbox.StateDONE, tb.get(t, keyless.ID).State)
})

// A proposal without an expiry is in no index; the members behind it wait
// for it (the claim reads it), so they are blocked too, once they have
// waited long enough for the reaper and the status to read it.
var _ = register("LaneBehindAProposalIsBlocked", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.StuckAfter = 3 * time.Minute })
	tb.enqueue(t, outbox.EnqueueParams{LaneKey: "approve", Propose: true})
	tb.enqueue(t, outbox.EnqueueParams{LaneKey: "approve"})
	tb.enqueue(t, outbox.EnqueueParams{LaneKey: "approve"})
	require.Zero(t, tb.drain(t).Claimed, "the lane waits for its proposal")
	tb.b.Clock.Advance(5 * time.Minute)
	st, err := tb.settled().StatusGet(ctx, outbox.StatusParams{})
	require.NoError(t, err)
	rr, err := tb.settled().Reap(ctx)
	require.NoError(t, err)
	for _, g := range []outbox.PartitionGauges{st.Total.PartitionGauges, backlogGauges(rr)} {
		require.Zero(t, g.DueDepth)
		require.Equal(t, 2, g.BlockedDepth)
		require.Equal(t, 1, g.StuckLaneHeads)
	}
})
