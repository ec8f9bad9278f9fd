package storetest

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Cases of ADR 0011 (online repartitioning): a lane's tail is its own item,
// `L#<ws>#<lane>` / `L`, naming the newest live member's seq and the
// partition of the lane's live members (design.md §3.4).

func avKey(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}
}

// tailRow reads a lane's tail item (nil when none).
func (tb *bundle) tailRow(t *testing.T, ws, lane string) map[string]types.AttributeValue {
	t.Helper()
	return tb.rawGet(t, avKey("L#"+ws+"#"+lane, "L"))
}

func (tb *bundle) rawGet(t *testing.T, k map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	out, err := tb.b.DB.GetItem(tb.ctx, &dynamodb.GetItemInput{TableName: aws.String(tb.b.Table), Key: k, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	if len(out.Item) == 0 {
		return nil
	}
	return out.Item
}

// partitionMap reads the partition map row (nil when none).
func (tb *bundle) partitionMap(t *testing.T) map[string]types.AttributeValue {
	t.Helper()
	return tb.rawGet(t, avKey("M#partitions", "M"))
}

func nAttr(t *testing.T, it map[string]types.AttributeValue, name string) int64 {
	t.Helper()
	v, ok := it[name].(*types.AttributeValueMemberN)
	require.True(t, ok, "attribute %s of %v", name, it)
	n, err := strconv.ParseInt(v.Value, 10, 64)
	require.NoError(t, err)
	return n
}

var _ = register("LaneTailIsItsOwnItem", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 4 })
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	tail := tb.tailRow(t, "ws", "L")
	require.NotNil(t, tail, "the tail is the lane's own item")
	require.Equal(t, a.Seq, nAttr(t, tail, "seq"))
	require.Equal(t, int64(a.Partition), nAttr(t, tail, "p"))
	require.Nil(t, tb.rawGet(t, avKey("P#"+strconv.Itoa(a.Partition), "L#ws#L")), "no tail in the partition")

	b := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	require.Equal(t, a.Partition, b.Partition)
	require.Equal(t, a.Seq, b.PrevSeq)
	tail = tb.tailRow(t, "ws", "L")
	require.Equal(t, b.Seq, nAttr(t, tail, "seq"))
	require.Equal(t, int64(b.Partition), nAttr(t, tail, "p"))

	tb.drain(t)
	require.Equal(t, outbox.StateDONE, tb.get(t, a.ID).State)
	require.Equal(t, outbox.StateDONE, tb.get(t, b.ID).State)
	require.Nil(t, tb.tailRow(t, "ws", "L"), "the end of the lane's last member deleted it")
})

// transact runs items as one transaction (library mode's caller).
func (tb *bundle) transact(items []types.TransactWriteItem) error {
	_, err := tb.b.DB.TransactWriteItems(tb.ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	return err
}

var _ = register("LaneStartWritesTheActionAndItsTail", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 4 })
	require.NotNil(t, tb.partitionMap(t), "the engine that created the table wrote its partition map")
	// A lane's start is the action's put and the tail's, nothing else; so
	// is a member joining it.
	p := outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", LaneKey: "M", Payload: Payload(Script{})}
	pe, err := tb.e.EnqueueItems(ctx, p)
	require.NoError(t, err)
	require.Len(t, pe.Items, 2)
	require.NoError(t, tb.transact(pe.Items))
	pe, err = tb.e.EnqueueItems(ctx, p)
	require.NoError(t, err)
	require.Len(t, pe.Items, 2)
})

// laneMoving finds a lane key whose partition differs under the counts
// from and to.
func laneMoving(ws string, from, to int) string {
	for i := 0; ; i++ {
		l := "lane-" + strconv.Itoa(i)
		if outbox.LanePartition(ws, l, from) != outbox.LanePartition(ws, l, to) && outbox.LanePartition(ws, l, from) >= to {
			return l
		}
	}
}

// engineOn builds another engine on the bundle's table with partitions
// partitions (a function of another deploy).
func (tb *bundle) engineOn(t *testing.T, partitions int) *outbox.Engine {
	t.Helper()
	cfg := tb.cfg
	cfg.Partitions = partitions
	e, err := outbox.New(tb.b.DB, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), cfg)
	require.NoError(t, err)
	return e
}

func (tb *bundle) layout(t *testing.T) outbox.PartitionLayout {
	t.Helper()
	l, err := tb.e.PartitionLayout(tb.ctx)
	require.NoError(t, err)
	require.Equal(t, l.Recorded, !l.Changed.IsZero(), "a recorded count has the time it changed")
	l.Changed = time.Time{} // the clock's
	return l
}

var _ = register("LaneKeepsItsPartitionAcrossACountChange", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 8 })
	lane := laneMoving("ws", 8, 2)
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane})
	require.Equal(t, outbox.LanePartition("ws", lane, 8), a.Partition)
	require.NoError(t, tb.e.PartitionsSet(ctx, 2))
	require.Equal(t, outbox.PartitionLayout{Count: 2, Live: 8, Kept: 8, Recorded: true, History: []int{8, 2}}, tb.layout(t))
	// The lane's live member holds it in its partition, above the count.
	b := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane})
	require.Equal(t, a.Partition, b.Partition)
	require.Equal(t, a.Seq, b.PrevSeq)
	l, err := tb.settled().ActionList(ctx, outbox.ActionListParams{WorkspaceID: "ws", LaneKey: lane})
	require.NoError(t, err)
	require.Len(t, l.Actions, 2, "the lane's listing reads its tail's partition")
	// New lanes and keyless actions go below the count.
	for i := 0; i < 6; i++ {
		k := tb.enqueue(t, outbox.EnqueueParams{})
		require.Less(t, k.Partition, 2)
	}
	require.NoError(t, tb.settled().Drain(ctx))
	require.Equal(t, outbox.StateDONE, tb.get(t, a.ID).State)
	require.Equal(t, outbox.StateDONE, tb.get(t, b.ID).State)
	require.Less(t, indexOf(tb.rec.Order(), "exec:"+a.ID), indexOf(tb.rec.Order(), "exec:"+b.ID), "in lane order")
	// Drained, the lane starts again under the count.
	c := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane})
	require.Equal(t, outbox.LanePartition("ws", lane, 2), c.Partition)
	require.Zero(t, c.PrevSeq)
	require.Equal(t, int64(c.Partition), nAttr(t, tb.tailRow(t, "ws", lane), "p"))
})

var _ = register("LaneTailNamingAnEndedMemberAboveTheCountMoves", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 8 })
	lane := laneMoving("ws", 8, 2)
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane})
	require.NoError(t, tb.settled().Drain(ctx))
	// A tail left naming the ended member (as ADR 0013's tails are).
	it := avKey("L#ws#"+lane, "L")
	it["seq"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(a.Seq, 10)}
	it["p"] = &types.AttributeValueMemberN{Value: strconv.Itoa(a.Partition)}
	_, err := tb.b.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tb.b.Table), Item: it})
	require.NoError(t, err)
	require.NoError(t, tb.e.PartitionsSet(ctx, 2))
	c := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane})
	require.Equal(t, outbox.LanePartition("ws", lane, 2), c.Partition, "not behind an ended member above the count")
	require.Zero(t, c.PrevSeq)
	tail := tb.tailRow(t, "ws", lane)
	require.Equal(t, c.Seq, nAttr(t, tail, "seq"))
	require.Equal(t, int64(c.Partition), nAttr(t, tail, "p"))
})

var _ = register("ShrinkRetiresAPartitionOnlyWhenEmpty", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 4 })
	// A function still on 4 partitions that read the map before the change.
	stale := tb.engineOn(t, 4)
	_, err := stale.Enqueue(ctx, outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", Payload: Payload(Script{})})
	require.NoError(t, err)
	lane := laneMoving("ws", 4, 2)
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane, Propose: true}) // live, not due
	require.NoError(t, tb.e.PartitionsSet(ctx, 2))
	var late []outbox.Action
	for i := 0; i < 8; i++ {
		r, err := stale.Enqueue(ctx, outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", Payload: Payload(Script{})})
		require.NoError(t, err)
		late = append(late, r.Action)
	}
	require.GreaterOrEqual(t, late[len(late)-1].Partition+late[len(late)-2].Partition+late[len(late)-3].Partition, 2, "the stale function spreads over 4")
	reap := func() {
		t.Helper()
		_, err := tb.settled().Reap(ctx)
		require.NoError(t, err)
	}
	reap()
	require.Equal(t, 4, tb.layout(t).Live, "nothing retired within the grace")
	require.NoError(t, tb.settled().Drain(ctx))
	for _, l := range late {
		require.Equal(t, outbox.StateDONE, tb.get(t, l.ID).State, "a stale function's enqueue above the count is drained")
	}
	tb.b.Clock.Advance(2 * outbox.MapTTL)
	reap()
	reap()
	require.Greater(t, tb.layout(t).Live, a.Partition, "the proposal holds its partition")
	_, err = tb.e.Admit(ctx, a.ID)
	require.NoError(t, err)
	require.NoError(t, tb.settled().Drain(ctx))
	require.Equal(t, outbox.StateDONE, tb.get(t, a.ID).State)
	reap()
	reap()
	reap()
	l := tb.layout(t)
	require.Equal(t, 2, l.Live, "emptied partitions above the count are retired")
	require.Equal(t, 4, l.Kept, "their ended rows are still kept")
	st, err := tb.e.StatusGet(ctx, outbox.StatusParams{})
	require.NoError(t, err)
	require.Len(t, st.Partitions, 4)
	// The id still reads, whatever the count.
	require.Equal(t, outbox.StateDONE, tb.get(t, a.ID).State)
})

var _ = register("KeyedResendAfterACountChangeFindsTheFirst", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 4 })
	var first outbox.Action
	for i := 0; first.Partition < 2; i++ {
		first = tb.enqueue(t, outbox.EnqueueParams{IdempotencyKey: "k" + strconv.Itoa(i)})
	}
	small := tb.engineOn(t, 2)
	require.NoError(t, small.PartitionsSet(ctx, 2))
	again, err := small.Enqueue(ctx, outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", IdempotencyKey: first.IdempotencyKey, Payload: Payload(Script{})})
	require.NoError(t, err)
	require.True(t, again.Existing)
	require.Equal(t, first.ID, again.Action.ID)
	got, err := small.ActionGet(ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, first.ID, got.ID)
})

var _ = register("ReaperAppliesTheDeployedCount", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 4 })
	_, err := tb.e.Reap(ctx)
	require.NoError(t, err)
	require.Equal(t, outbox.PartitionLayout{Count: 4, Live: 4, Kept: 4, Recorded: true, History: []int{4}}, tb.layout(t))
	// A deploy of 8: its reaper applies it.
	eight := tb.engineOn(t, 8)
	_, err = eight.Reap(ctx)
	require.NoError(t, err)
	require.Equal(t, outbox.PartitionLayout{Count: 8, Live: 8, Kept: 8, Recorded: true, History: []int{4, 8}}, tb.layout(t))
	// An older reaper still running sets its count back: the watermarks
	// stay.
	_, err = tb.e.Reap(ctx)
	require.NoError(t, err)
	require.Equal(t, outbox.PartitionLayout{Count: 4, Live: 8, Kept: 8, Recorded: true, History: []int{4, 8, 4}}, tb.layout(t))
	// A count set by hand stands until another deploy.
	require.NoError(t, tb.e.PartitionsSet(ctx, 6))
	_, err = tb.e.Reap(ctx)
	require.NoError(t, err)
	require.Equal(t, 6, tb.layout(t).Count)
})

var _ = register("LaneListingFindsMembersUnderAnEarlierCount", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 8 })
	lane := laneMoving("ws", 8, 2)
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane})
	b := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane})
	require.NoError(t, tb.settled().Drain(ctx))
	require.NoError(t, tb.e.PartitionsSet(ctx, 2))
	// The lane drained: it starts again under the new count, elsewhere.
	c := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane})
	require.NotEqual(t, a.Partition, c.Partition)
	ids := func(as []outbox.Action) []string {
		var out []string
		for _, x := range as {
			out = append(out, x.ID)
		}
		return out
	}
	want := []string{a.ID, b.ID, c.ID}
	l, err := tb.settled().ActionList(ctx, outbox.ActionListParams{WorkspaceID: "ws", LaneKey: lane})
	require.NoError(t, err)
	require.Equal(t, want, ids(l.Actions), "the members of every partition the lane had, oldest first")
	require.Empty(t, l.NextCursor)
	// Page by page, across the partitions.
	var got []string
	cur := ""
	for range 5 {
		l, err := tb.settled().ActionList(ctx, outbox.ActionListParams{WorkspaceID: "ws", LaneKey: lane, Limit: 1, Cursor: cur})
		require.NoError(t, err)
		got = append(got, ids(l.Actions)...)
		if cur = l.NextCursor; cur == "" {
			break
		}
	}
	require.Equal(t, want, got)
	// The operator's listing too.
	f, err := tb.settled().ActionFind(ctx, outbox.ActionFindParams{WorkspaceID: "ws", LaneKey: lane})
	require.NoError(t, err)
	require.Equal(t, want, ids(f.Actions))
	got, cur = nil, ""
	for range 8 {
		f, err := tb.settled().ActionFind(ctx, outbox.ActionFindParams{WorkspaceID: "ws", LaneKey: lane, Limit: 1, Cursor: cur})
		require.NoError(t, err)
		got = append(got, ids(f.Actions)...)
		if cur = f.NextCursor; cur == "" {
			break
		}
	}
	require.Equal(t, want, got)
})

// A lane listing keeps the order of its partitions from page to page: the
// count's history changes between two pages so that the lane's partition
// under its oldest count comes last (the history keeps 8 counts: the
// oldest drops, and comes back as the newest). Before, each page read the
// partitions in the new history's order: the second page went on after
// the cursor's partition and read the first page's partition again
// (simulator seed 1252 of -repartition, before the fix: "listed 2-1
// twice"; seed 1681: a partition put before the cursor's was never read).
var _ = register("LaneListingKeepsItsPartitionsAcrossPages", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 8 })
	lane := laneMoving("ws", 8, 2)
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane})
	require.NoError(t, tb.settled().Drain(ctx))
	require.NoError(t, tb.e.PartitionsSet(ctx, 2))
	b := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane})
	c := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane})
	require.NotEqual(t, a.Partition, b.Partition)
	want := []string{a.ID, b.ID, c.ID}
	ids := func(as []outbox.Action) []string {
		var out []string
		for _, x := range as {
			out = append(out, x.ID)
		}
		return out
	}
	l, err := tb.settled().ActionList(ctx, outbox.ActionListParams{WorkspaceID: "ws", LaneKey: lane, Limit: 2})
	require.NoError(t, err)
	require.Equal(t, want[:2], ids(l.Actions))
	f, err := tb.settled().ActionFind(ctx, outbox.ActionFindParams{WorkspaceID: "ws", LaneKey: lane, Limit: 2})
	require.NoError(t, err)
	require.Equal(t, want[:2], ids(f.Actions))
	// The history [8 2] becomes [2 3 4 5 6 7 9 8]: the lane's partition
	// under 8 (a's) now comes after b's.
	for _, n := range []int{3, 4, 5, 6, 7, 9, 8} {
		require.NoError(t, tb.e.PartitionsSet(ctx, n))
	}
	got := ids(l.Actions)
	for cur := l.NextCursor; cur != ""; {
		l, err := tb.settled().ActionList(ctx, outbox.ActionListParams{WorkspaceID: "ws", LaneKey: lane, Limit: 2, Cursor: cur})
		require.NoError(t, err)
		got = append(got, ids(l.Actions)...)
		cur = l.NextCursor
		require.Less(t, len(got), 10, "the listing goes round: %v", got)
	}
	require.Equal(t, want, got, "each member once, in the order the listing began with")
	got = ids(f.Actions)
	for cur := f.NextCursor; cur != ""; {
		f, err := tb.settled().ActionFind(ctx, outbox.ActionFindParams{WorkspaceID: "ws", LaneKey: lane, Limit: 2, Cursor: cur})
		require.NoError(t, err)
		got = append(got, ids(f.Actions)...)
		cur = f.NextCursor
		require.Less(t, len(got), 10, "the listing goes round: %v", got)
	}
	require.Equal(t, want, got, "the operator's listing too")
})

// refuseTailMoves refuses every transaction that moves a lane tail (an
// out-of-order end's relink of its lane's tail back to a live
// predecessor), as when the links move again and again under the end: the
// end gives up its relink (maxRelinkTries) and ends without one.
type refuseTailMoves struct {
	outbox.DynamoDB
	n atomic.Int64
}

func (d *refuseTailMoves) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for i, it := range in.TransactItems {
		if it.Update == nil || !isLaneTail(it.Update.Key) {
			continue
		}
		d.n.Add(1)
		reasons := make([]types.CancellationReason, len(in.TransactItems))
		for j := range reasons {
			reasons[j].Code = aws.String("None")
		}
		reasons[i].Code = aws.String("ConditionalCheckFailed")
		return nil, &types.TransactionCanceledException{Message: aws.String("refused"), CancellationReasons: reasons}
	}
	return d.DynamoDB.TransactWriteItems(ctx, in, o...)
}

// Above the count a lane is held in its partition by a live member (ADR
// 0011 §2). A tail naming an ended member is not proof that the lane is
// empty there: that member may have ended out of order without a relink
// while an earlier member is live. The next member must still wait for
// that one, not start the lane again under the count beside it.
var _ = register("AboveTheCountAnEndedTailWithALiveAncestorHoldsTheLane", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 8 })
	lane := laneMoving("ws", 8, 2)
	p := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane})
	require.NoError(t, tb.e.PartitionsSet(ctx, 2))
	res, _, _ := tb.claim(t, p.Partition, 10)
	require.Equal(t, [][]string{{p.ID}}, ids(res), "p executes")
	// m joins behind the live p, above the count.
	m := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane})
	require.Equal(t, p.Partition, m.Partition)
	require.Equal(t, p.Seq, m.PrevSeq)
	// m is cancelled; its relink (the tail back to p) is refused every
	// time, so it ends without one and the tail still names it.
	db := &refuseTailMoves{DynamoDB: tb.b.DB}
	e2, err := outbox.New(db, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg)
	require.NoError(t, err)
	_, err = e2.Cancel(ctx, m.ID)
	require.NoError(t, err)
	require.Greater(t, db.n.Load(), int64(1), "the relink was tried and refused")
	require.Equal(t, outbox.StateCANCELLED, tb.get(t, m.ID).State)
	require.Equal(t, m.Seq, nAttr(t, tb.tailRow(t, "ws", lane), "seq"), "the tail still names the ended m")
	// The next member's write is conditioned on p (the live member that
	// holds the lane above the count), not on the ended m.
	pe, err := tb.e.EnqueueItems(ctx, outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", LaneKey: lane, Payload: Payload(Script{})})
	require.NoError(t, err)
	checked := false
	for _, it := range pe.Items {
		if c := it.ConditionCheck; c != nil && str(c.Key, "sk") == fmt.Sprintf("A#%020d", p.Seq) {
			checked = true
		}
	}
	require.True(t, checked, "the write is conditioned on p being live")
	// The next member waits for p: in its partition, behind m (the claim's
	// walk passes the ended m to p).
	n := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane})
	require.Equal(t, p.Partition, n.Partition, "not beside p under the count")
	require.Equal(t, m.Seq, n.PrevSeq)
	for _, q := range []int{p.Partition, outbox.LanePartition("ws", lane, 2)} {
		r, _, _ := tb.claim(t, q, 10)
		require.Empty(t, r.Groups, "n waits for p (partition %d)", q)
	}
	_, err = tb.e.AttemptFinish(ctx, res.Groups[0][0], outbox.Done("x"))
	require.NoError(t, err)
	r, _, _ := tb.claim(t, p.Partition, 10)
	require.Equal(t, [][]string{{n.ID}}, ids(r), "n runs after p")
	_, err = tb.e.AttemptFinish(ctx, r.Groups[0][0], outbox.Done("x"))
	require.NoError(t, err)
	// Drained, the lane starts again under the count.
	x := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane})
	require.Equal(t, outbox.LanePartition("ws", lane, 2), x.Partition)
	require.Zero(t, x.PrevSeq)
})

// When the live member that holds the lane above the count ends between
// the tail's read and the write, the write is refused (its check) and the
// lane, read again, starts under the count.
var _ = register("AboveTheCountAHolderEndingFirstRefusesTheJoin", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 8 })
	lane := laneMoving("ws", 8, 2)
	p := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane})
	require.NoError(t, tb.e.PartitionsSet(ctx, 2))
	res, _, _ := tb.claim(t, p.Partition, 10)
	m := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane})
	db := &refuseTailMoves{DynamoDB: tb.b.DB}
	e2, err := outbox.New(db, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg)
	require.NoError(t, err)
	_, err = e2.Cancel(ctx, m.ID)
	require.NoError(t, err)
	pe, err := tb.e.EnqueueItems(ctx, outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", LaneKey: lane, Payload: Payload(Script{})})
	require.NoError(t, err)
	_, err = tb.e.AttemptFinish(ctx, res.Groups[0][0], outbox.Done("x"))
	require.NoError(t, err)
	require.Error(t, tb.transact(pe.Items), "p ended: nothing joins behind the lane above the count")
	x := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane})
	require.Equal(t, outbox.LanePartition("ws", lane, 2), x.Partition)
	require.Zero(t, x.PrevSeq)
})

// Past the walk's bound (more ended members behind the tail than a claim's
// walk looks past) the lane waits above the count, as it would under it:
// the next member joins behind the tail, its check on the last row the
// walk read being there; once retention deleted the ended rows it runs.
// The ended members are held (ADR 0019): a proposal heads the lane, the
// first member behind it is cancelled with every relink refused, and each
// later one, cancelled in turn, ends behind it without a relink.
var _ = register("AboveTheCountAnEndedTailPastTheWalkWaitsBehindIt", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 8; c.Retention = time.Hour })
	lane := laneMoving("ws", 8, 2)
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane, Propose: true})
	var ms []outbox.Action
	for i := 0; i < 40; i++ {
		ms = append(ms, tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane}))
	}
	require.NoError(t, tb.e.PartitionsSet(ctx, 2))
	e2, err := outbox.New(&refuseRelinks{DynamoDB: tb.b.DB}, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg)
	require.NoError(t, err)
	for i, m := range ms {
		e := tb.e
		if i == 0 {
			e = e2
		}
		_, err := e.Cancel(ctx, m.ID)
		require.NoError(t, err)
		require.NotContains(t, tb.rawRow(t, m), "ttl", "member %d is held", i)
		tb.b.Clock.Advance(time.Millisecond)
	}
	last := ms[len(ms)-1]
	require.Equal(t, last.Seq, nAttr(t, tb.tailRow(t, "ws", lane), "seq"))
	pe, err := tb.e.EnqueueItems(ctx, outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", LaneKey: lane, Payload: Payload(Script{})})
	require.NoError(t, err)
	require.Equal(t, last.Partition, pe.Action.Partition)
	require.Equal(t, last.Seq, pe.Action.PrevSeq)
	held := false
	for _, it := range pe.Items {
		if c := it.ConditionCheck; c != nil && aws.ToString(c.ConditionExpression) == "attribute_exists(#st)" {
			held = true
		}
	}
	require.True(t, held, "the check is that the row the walk stopped at is there")
	require.NoError(t, tb.transact(pe.Items))
	_, err = tb.e.Cancel(ctx, a.ID)
	require.NoError(t, err)
	tb.b.Clock.Advance(2 * time.Hour)
	ret, err := tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Equal(t, 41, ret.Deleted, "the proposal, then the 40 held members in the order they ended")
	r, _, _ := tb.claim(t, last.Partition, 10)
	require.Equal(t, [][]string{{pe.Action.ID}}, ids(r))
})

// Issue 28, item 5: a mistaken raise (`ferry partitions --set 4000`) was
// undone one partition a reaper run (about 35 hours). Empty partitions
// above the count now go together, up to MaxRetirePerRun checks a run; a
// live row stops the retirement at its partition until it ends.
var _ = register("MistakenRaiseIsUndoneInAFewReaperRuns", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 4 })
	require.NoError(t, tb.e.PartitionsSet(ctx, 200))
	var lane string
	for i := 0; lane == ""; i++ {
		if l := "lane-" + strconv.Itoa(i); outbox.LanePartition("ws", l, 200) == 150 {
			lane = l
		}
	}
	held := tb.enqueue(t, outbox.EnqueueParams{LaneKey: lane, Propose: true}) // live, in no index
	require.Equal(t, 150, held.Partition)
	require.NoError(t, tb.e.PartitionsSet(ctx, 4))
	tb.b.Clock.Advance(2 * outbox.MapTTL)
	reap := func() outbox.PartitionLayout {
		t.Helper()
		_, err := tb.settled().Reap(ctx)
		require.NoError(t, err)
		return tb.layout(t)
	}
	l := reap()
	require.Equal(t, 151, l.Live, "retired down to the proposal's partition in one run")
	require.Equal(t, 151, l.Kept, "and kept with it: the empty partitions hold no row")
	_, err := tb.e.Cancel(ctx, held.ID)
	require.NoError(t, err)
	l = reap()
	require.Equal(t, 4, l.Live, "the rest in the next run")
	require.Equal(t, 151, l.Kept, "the cancelled row is kept until retention")
	require.Equal(t, 4, tb.layout(t).Count)
})
