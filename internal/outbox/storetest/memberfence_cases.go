package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Lane members fenced by the claim (ADR 0015, design.md §5 step 4, §6): the
// claim sets the write fence of an idempotent-receiver member behind its
// group's head too, with `wsh` naming the head. The member is called only
// once the members before it in its group ended, so its fence does not say
// it started in lane order: the reaper and AttemptFinish end it as out of
// order. Its call waits for the drainer's lease on the claim fence to cover
// it, taken longer when no other drainer took the fence meanwhile.

var _ = register("IdempotentLaneMemberHasNoSeparateFenceWrite", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	h := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L"})
	m := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L"})
	wc := newWriteCounter(tb.b.DB)
	e, err := outbox.New(wc, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg)
	require.NoError(t, err)
	tb.settled()
	r, err := e.DrainPartition(ctx, h.Partition, outbox.DrainParams{})
	require.NoError(t, err)
	require.Equal(t, 2, r.Ended)
	require.Equal(t, []string{"exec:" + h.ID, "exec:" + m.ID}, tb.rec.Order())
	upd, tx := wc.counts(m)
	require.Equal(t, 0, tx, "no transaction")
	require.Equal(t, 2, upd, "the claim, which set the member's fence, then the end: no fence write of its own")
	require.Equal(t, outbox.StateDONE, tb.get(t, m.ID).State)
})

var _ = register("ReaperEndsAClaimFencedMemberOutOfOrder", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	h := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L"})
	m := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L", MaxAttempts: 1})
	s := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L"})
	res, _, _ := tb.claim(t, h.Partition, 2)
	require.Equal(t, [][]string{{h.ID, m.ID}}, ids(res))
	// The claimer dies before running anything: m's fence is its claim's,
	// set while h is live.
	tb.b.Clock.Advance(tb.cfg.Lease + time.Second)
	rr, err := tb.settled().Reap(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rr.Exhausted, "m is out of attempts; h is left for a reclaim")
	got := tb.get(t, m.ID)
	require.Equal(t, outbox.StateUNCERTAIN, got.State, "its fence is set: as far as the reaper knows it may have been sent")
	require.Equal(t, outbox.StopAttemptsExhausted, got.StopReason)
	// h is live: m ended out of order and took itself out of the chain
	// (design.md §7.3): s now waits for h, and m keeps its prev.
	require.Equal(t, h.Seq, tb.prevOf(t, s), "s relinked behind h")
	require.Equal(t, &types.AttributeValueMemberN{Value: fmt.Sprint(h.Seq)}, tb.rawRow(t, m)["prev"])
	again, _, _ := tb.claim(t, h.Partition, 10)
	require.Equal(t, [][]string{{h.ID, s.ID}}, ids(again))
})

var _ = register("AttemptFinishOfAClaimFencedMemberBeforeItsHeadRelinks", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	h := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L"})
	m := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L"})
	s := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L"})
	res, _, _ := tb.claim(t, h.Partition, 2)
	require.Equal(t, [][]string{{h.ID, m.ID}}, ids(res))
	require.False(t, res.Groups[0][1].WriteStartedAt.IsZero(), "the member is fenced by its claim")
	// A caller finishes the member while its head is live: its claim's
	// fence is no proof that the lane before it ended.
	got, err := tb.e.AttemptFinish(ctx, res.Groups[0][1], outbox.Done("x"))
	require.NoError(t, err)
	require.Equal(t, outbox.StateDONE, got.State)
	require.Equal(t, h.Seq, tb.prevOf(t, s), "s relinked behind h")
	require.Equal(t, &types.AttributeValueMemberN{Value: fmt.Sprint(h.Seq)}, tb.rawRow(t, m)["prev"])
})

var _ = register("ClaimFencedMemberIsNotCalledAfterAnotherDrainerTookTheFence", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	h := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L"})
	m := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L"})
	tb.rec.OnExecute = func(att *outbox.Attempt) {
		if att.Action.ID != h.ID {
			return
		}
		// The head's call outlives the drainer's lease on the claim fence,
		// and another drainer takes the fence: it may claim in the
		// partition now, so the member must not be called under the old
		// lease (an erasure of the member would free its successor).
		tb.b.Clock.Advance(tb.cfg.Lease + time.Second)
		_, err := tb.e.FenceTake(ctx, h.Partition, "other", tb.b.Clock.Now().Add(tb.cfg.Lease))
		require.NoError(t, err)
	}
	r, err := tb.settled().DrainPartition(ctx, h.Partition, outbox.DrainParams{})
	require.NoError(t, err)
	require.Equal(t, 1, r.Ended)
	require.Equal(t, 1, r.Released)
	require.Zero(t, tb.rec.Execs(m.ID))
	got := tb.get(t, m.ID)
	require.Equal(t, outbox.StateADMITTED, got.State)
	require.Equal(t, 0, got.Attempt, "the release does not count")
	require.True(t, got.WriteStartedAt.IsZero(), "the claim's fence goes with the release")
	require.NotContains(t, tb.rawRow(t, m), "wsh")
	require.Equal(t, "other", tb.fenceRow(t, h.Partition)["owner"].(*types.AttributeValueMemberS).Value)
})

var _ = register("ClaimFencedMemberRetryClearsItsFence", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	h := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L"})
	m := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L", Payload: Payload(Script{Do: []string{"retry", "done"}})})
	r := tb.drain(t)
	require.Equal(t, 1, r.Ended)
	got := tb.get(t, m.ID)
	require.Equal(t, outbox.StateADMITTED, got.State)
	require.True(t, got.WriteStartedAt.IsZero())
	require.NotContains(t, tb.rawRow(t, m), "wsh", "a proven retry takes the claim's member fence away whole")
	tb.b.Clock.Advance(tb.cfg.RetryCap)
	tb.drain(t)
	require.Equal(t, outbox.StateDONE, tb.get(t, h.ID).State)
	require.Equal(t, outbox.StateDONE, tb.get(t, m.ID).State)
	require.Equal(t, []string{"exec:" + h.ID, "exec:" + m.ID, "exec:" + m.ID}, tb.rec.Order())
})
