package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

var _ = register("RetentionSweepsWhatTTLLeft", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Retention = time.Hour })
	keyed := tb.enqueue(t, outbox.EnqueueParams{IdempotencyKey: "k"})
	plain := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	long := tb.enqueue(t, outbox.EnqueueParams{Kind: KindLong})
	live := tb.enqueue(t, outbox.EnqueueParams{Propose: true})
	tb.drain(t)
	rr, err := tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Zero(t, rr.Deleted, "nothing expired yet")
	tb.b.Clock.Advance(2 * time.Hour)
	// Reads treat a passed TTL as gone even before anything deletes it.
	_, err = tb.e.ActionGet(ctx, plain.ID)
	require.ErrorIs(t, err, outbox.ErrNotFound)
	rr, err = tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, rr.Deleted)
	require.Equal(t, outbox.StateDONE, tb.get(t, long.ID).State, "its kind keeps it longer")
	require.Equal(t, outbox.StatePROPOSED, tb.get(t, live.ID).State)
	// The idempotency record went with its action: the key is new again.
	r, err := tb.e.Enqueue(ctx, outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", IdempotencyKey: "k", Payload: Payload(Script{})})
	require.NoError(t, err)
	require.False(t, r.Existing)
	require.NotEqual(t, keyed.ID, r.Action.ID)
	tb.b.Clock.Advance(72 * time.Hour)
	rr, err = tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rr.Deleted)
	_, err = tb.e.ActionGet(ctx, long.ID)
	require.ErrorIs(t, err, outbox.ErrNotFound)
})

var _ = register("IdempotencyRecordOutlivesNoAction", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Retention = time.Hour })
	a := tb.enqueue(t, outbox.EnqueueParams{IdempotencyKey: "k"})
	tb.drain(t)
	// While the action is retained the key returns it.
	tb.b.Clock.Advance(30 * time.Minute)
	r, err := tb.e.Enqueue(ctx, outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", IdempotencyKey: "k", Payload: Payload(Script{})})
	require.NoError(t, err)
	require.True(t, r.Existing)
	require.Equal(t, a.ID, r.Action.ID)
	// Once its TTL passed (even if nothing deleted it) the key is free.
	tb.b.Clock.Advance(time.Hour)
	r, err = tb.e.Enqueue(ctx, outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", IdempotencyKey: "k", Payload: Payload(Script{})})
	require.NoError(t, err)
	require.False(t, r.Existing)
})

var _ = register("RowCapTrimsOldestFirst", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.RowCap = 2; c.Partitions = 2 })
	var ended []string
	for i := range 5 {
		p := outbox.EnqueueParams{}
		if i%2 == 0 {
			p.LaneKey = "L"
		}
		a := tb.enqueue(t, p)
		tb.drain(t)
		tb.b.Clock.Advance(time.Minute)
		ended = append(ended, a.ID)
	}
	live := tb.enqueue(t, outbox.EnqueueParams{Propose: true})
	rr, err := tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, rr.Trimmed)
	for _, id := range ended[:3] {
		_, err := tb.e.ActionGet(ctx, id)
		require.ErrorIs(t, err, outbox.ErrNotFound, id)
	}
	for _, id := range ended[3:] {
		require.Equal(t, outbox.StateDONE, tb.get(t, id).State)
	}
	require.Equal(t, outbox.StatePROPOSED, tb.get(t, live.ID).State)
	rr, err = tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Zero(t, rr.Trimmed+rr.Deleted)
})

var _ = register("ReaperEndsExhaustedAndComputesGauges", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.StuckAfter = time.Hour })
	// A kind fenced by its own write: its drainer dies between the claim and
	// the fence, so nothing was sent. (An idempotent receiver's claim sets
	// its fence: ReaperEndsExhaustedClaimFencedAsUncertain.)
	lost := tb.enqueue(t, outbox.EnqueueParams{Kind: KindAMO, MaxAttempts: 1})
	res, _, _ := tb.claim(t, 0, 1) // its drainer dies before the fence
	require.Len(t, res.Groups, 1)
	held := tb.enqueue(t, outbox.EnqueueParams{})
	res, _, _ = tb.claim(t, 0, 1)
	require.Len(t, res.Groups, 1)
	tb.b.Clock.Advance(tb.cfg.Lease + time.Second)
	res, _, _ = tb.claim(t, 0, 1) // re-claims "held" (attempt 2 of 8); "lost" is out of attempts
	require.Equal(t, [][]string{{held.ID}}, ids(res))
	head := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	due := tb.enqueue(t, outbox.EnqueueParams{})
	tb.b.Clock.Advance(2 * time.Hour)
	rr, err := tb.settled().Reap(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rr.Exhausted)
	got := tb.get(t, lost.ID)
	require.Equal(t, outbox.StateFAILED, got.State)
	require.Equal(t, outbox.StopAttemptsExhausted, got.StopReason)
	g := rr.Gauges[0]
	require.Equal(t, 3, g.DueDepth, "held (its lease ended), the lane's head, due")
	require.Equal(t, 1, g.BlockedDepth, "the lane's second, behind its head")
	require.Equal(t, 1, g.StuckLaneHeads, "one lane")
	require.GreaterOrEqual(t, g.OldestDueAge, 2*time.Hour)
	_ = head
	_ = due
	require.Zero(t, g.ClaimedDepth, "no lease is live")
})

var _ = register("ErasedLaneMemberKeepsItsLaneWaiting", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", SubjectID: "bob"})
	b := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", SubjectID: "alice", IdempotencyKey: "kb"})
	c := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", SubjectID: "bob"})
	res, _, _ := tb.claim(t, 0, 1)
	require.Equal(t, [][]string{{a.ID}}, ids(res))
	n, err := tb.settled().EraseSubject(ctx, "ws", "alice")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = tb.e.ActionGet(ctx, b.ID)
	require.ErrorIs(t, err, outbox.ErrNotFound)
	again, _, _ := tb.claim(t, 0, 10)
	require.Empty(t, again.Groups, "c still waits for a, though b is erased")
	d := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", SubjectID: "bob"})
	_, err = tb.e.AttemptFinish(ctx, res.Groups[0][0], outbox.Done("x"))
	require.NoError(t, err)
	again, _, _ = tb.claim(t, 0, 10)
	require.Equal(t, [][]string{{c.ID, d.ID}}, ids(again))
	// Nothing of alice's is listed.
	l, err := tb.settled().ActionList(ctx, outbox.ActionListParams{WorkspaceID: "ws"})
	require.NoError(t, err)
	require.Len(t, l.Actions, 3)
})

var _ = register("EraseSubjectDeletesEveryState", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 3 })
	var mine []string
	mine = append(mine, tb.enqueue(t, outbox.EnqueueParams{SubjectID: "alice", Propose: true}).ID)
	mine = append(mine, tb.enqueue(t, outbox.EnqueueParams{SubjectID: "alice", IdempotencyKey: "a1", LaneKey: "L"}).ID)
	tb.drain(t)
	mine = append(mine, tb.enqueue(t, outbox.EnqueueParams{SubjectID: "alice", LaneKey: "L"}).ID)
	theirs := tb.enqueue(t, outbox.EnqueueParams{SubjectID: "bob", LaneKey: "L"})
	n, err := tb.settled().EraseSubject(ctx, "ws", "alice")
	require.NoError(t, err)
	require.Equal(t, 3, n)
	for _, id := range mine {
		_, err := tb.e.ActionGet(ctx, id)
		require.ErrorIs(t, err, outbox.ErrNotFound)
	}
	// Bob's action was behind an erased one in the lane: it runs.
	tb.drain(t)
	require.Equal(t, outbox.StateDONE, tb.get(t, theirs.ID).State)
	n, err = tb.settled().EraseSubject(ctx, "other-ws", "bob")
	require.NoError(t, err)
	require.Zero(t, n, "another workspace's subject of the same name is not this one")
})

var _ = register("ReaperEndsExhaustedAfterAWriteAsUncertain", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	// An idempotent kind whose drainer died after its fence on the last attempt.
	a := tb.enqueue(t, outbox.EnqueueParams{MaxAttempts: 1, Payload: Payload(Script{Do: []string{"crash"}})})
	tb.drain(t)
	held := tb.enqueue(t, outbox.EnqueueParams{})
	tb.b.Clock.Advance(tb.cfg.Lease + time.Second)
	res, _, _ := tb.claim(t, 0, 5)
	require.Equal(t, [][]string{{held.ID}}, ids(res), "out of attempts: not reclaimed")
	rr, err := tb.settled().Reap(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rr.Exhausted)
	got := tb.get(t, a.ID)
	require.Equal(t, outbox.StateUNCERTAIN, got.State, "its write may have happened")
	require.Equal(t, outbox.StopAttemptsExhausted, got.StopReason)
	require.Equal(t, 1, rr.Gauges[0].ClaimedDepth, "held is under a live lease")
	require.Zero(t, rr.Gauges[0].DueDepth)
})
