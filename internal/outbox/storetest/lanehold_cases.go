package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// A lane member that ends (or is erased) out of order while an earlier
// member is live, and whose relink is refused again and again, stays in
// its lane's chain: its successor still names it. Deleting it then would
// cut the chain (ADR 0019): it is kept — no TTL, and retention leaves
// it — until no earlier member of its lane is live.

// refuseRelinks refuses every transaction sent through it as a relink
// whose neighbour moved (its last item's condition failed), as a lane
// busy with appends and ends would, and counts them.
type refuseRelinks struct {
	outbox.DynamoDB
	n atomic.Int64
}

func (d *refuseRelinks) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	d.n.Add(1)
	reasons := make([]types.CancellationReason, len(in.TransactItems))
	for i := range reasons {
		reasons[i].Code = aws.String("None")
	}
	reasons[len(reasons)-1].Code = aws.String("ConditionalCheckFailed")
	return nil, &types.TransactionCanceledException{Message: aws.String("storetest: a neighbour moved"), CancellationReasons: reasons}
}

// holdLane enqueues a lane of a proposal nobody admits and three members
// behind it, and returns an engine whose relinks are all refused.
func holdLane(t *testing.T, tb *bundle) (a, b, c, d outbox.Action, e2 *outbox.Engine, db *refuseRelinks) {
	a = tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", Propose: true})
	b = tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", SubjectID: "bob"})
	c = tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	d = tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	db = &refuseRelinks{DynamoDB: tb.b.DB}
	e2, err := outbox.New(db, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg)
	require.NoError(t, err)
	return a, b, c, d, e2, db
}

// heldUntilTheHeadEnds checks that b, ended out of order without its
// relink, is kept while a lives, and goes once a has ended: the lane
// waits for a throughout, then runs c and d.
func heldUntilTheHeadEnds(ctx context.Context, t *testing.T, tb *bundle, a, b, c, d outbox.Action) {
	t.Helper()
	require.Equal(t, b.Seq, tb.prevOf(t, c), "the relink did not happen: c still names b")
	heldListedApart(t, tb, b)
	// Past b's retention (and its TTL, had it one): retention runs, and
	// the lane still waits for a (the claim's walk stops at a missing b).
	tb.b.Clock.Advance(3 * time.Hour)
	ret, err := tb.settled().Retain(ctx)
	require.NoError(t, err)
	res, _, _ := tb.claim(t, 0, 10)
	require.Empty(t, res.Groups, "c and d wait for a")
	require.Zero(t, ret.Deleted, "b is kept while a lives")
	require.NotContains(t, tb.rawRow(t, b), "ttl", "b is kept out of TTL while a lives")
	// a ends: b is no longer needed, and the lane runs.
	_, err = tb.e.Cancel(ctx, a.ID)
	require.NoError(t, err)
	res, _, _ = tb.claim(t, 0, 10)
	require.Equal(t, [][]string{{c.ID, d.ID}}, ids(res))
	// Retention deletes b at its next look (at most one retention period
	// after the last).
	tb.b.Clock.Advance(2 * time.Hour)
	ret, err = tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, ret.Deleted, 1)
	require.Empty(t, tb.rawRow(t, b), "b went once a had ended")
}

var _ = register("LaneMemberEndedWithoutItsRelinkIsKeptWhileAnEarlierOneLives", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Retention = time.Hour })
	a, b, c, d, e2, db := holdLane(t, tb)
	got, err := e2.Cancel(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, outbox.StateCANCELLED, got.State)
	require.EqualValues(t, 9, db.n.Load(), "the end tried its relink, then maxRelinkTries (8) times again")
	heldUntilTheHeadEnds(ctx, t, tb, a, b, c, d)
})

var _ = register("LaneMemberErasedWithoutItsRelinkIsKeptWhileAnEarlierOneLives", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Retention = time.Hour })
	a, b, c, d, _, db := holdLane(t, tb)
	tb.settled()
	e2, err := outbox.New(db, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg)
	require.NoError(t, err)
	n, err := e2.EraseSubject(ctx, "ws", "bob")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.EqualValues(t, 8, db.n.Load(), "the erasure tried its relink 8 times")
	require.Equal(t, string(outbox.StopErased), str(tb.rawRow(t, b), "sr"), "b is a tombstone")
	heldUntilTheHeadEnds(ctx, t, tb, a, b, c, d)
})

// heldListedApart checks where b, held, is listed: by a listing of its own
// (sort key H#, no TTL), never by the retention journal (R#), the only
// listing builds before ADR 0019 (v0.1.0) read: so they neither trim b
// beyond the row cap nor drop its listing (ADR 0019, "Mixed builds").
func heldListedApart(t *testing.T, tb *bundle, b outbox.Action) {
	t.Helper()
	for _, j := range tb.journal(t) {
		if j.pk == fmt.Sprintf("P#%d", b.Partition) {
			require.NotContains(t, j.seqs, b.Seq, "the retention journal (R#) lists held b: %s", j.sk)
		}
	}
	var held []journalEntry
	for _, j := range tb.listings(t, "H#") {
		if j.pk == fmt.Sprintf("P#%d", b.Partition) && slices.Contains(j.seqs, b.Seq) {
			held = append(held, j)
		}
	}
	require.Len(t, held, 1, "one held listing names b")
	require.Contains(t, held[0].sk, "#held#")
}

// A claim-fenced group finished member by member (a library caller's
// AttemptFinish) ends each member out of order, behind the one before:
// none of them is held, since no earlier member is live, and each drops
// its prev as an end in lane order does (no relink, not held), so the next
// end reads nothing more. Before, each end walked back over every ended
// member before it (one read per hop), and past maxLaneWalk (32) hops took
// the chain as live and held the rest.
var _ = register("ClaimFencedGroupFinishedMemberByMemberHoldsNothing", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Retention = time.Hour })
	var ms []outbox.Action
	for i := 0; i < 40; i++ {
		ms = append(ms, tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"}))
	}
	res, _, _ := tb.claim(t, 0, 100)
	require.Len(t, res.Groups, 1)
	require.Len(t, res.Groups[0], 40)
	for _, x := range res.Groups[0] {
		_, err := tb.e.AttemptFinish(ctx, x, outbox.Done("x"))
		require.NoError(t, err)
	}
	for i, m := range ms {
		row := tb.rawRow(t, m)
		require.Contains(t, row, "ttl", "member %d was held (no TTL)", i)
		require.NotContains(t, row, "prev", "member %d kept its prev", i)
	}
	require.Empty(t, tb.listings(t, "H#"))
})
