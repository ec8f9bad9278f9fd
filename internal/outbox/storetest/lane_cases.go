package storetest

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Out-of-order ends (cancel, expiry, erasure of a waiting member whose
// predecessor is live) take the member out of its lane's chain, finding its
// successor when needed (design.md §7.3): no chain passes through an ended
// row that retention may delete.

// prevOf is the lane predecessor an action's row names (0: none).
func (tb *bundle) prevOf(t *testing.T, a outbox.Action) int64 {
	t.Helper()
	return tb.get(t, a.ID).PrevSeq
}

var _ = register("OutOfOrderEndsRelinkTheirSuccessor", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Retention = time.Hour })
	// a is a proposal nobody admits: every later member waits for it.
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", Propose: true})
	b := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", SubjectID: "alice"})
	c := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	d := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	// A cancel in the middle: d, found from the tail, now names b.
	_, err := tb.e.Cancel(ctx, c.ID)
	require.NoError(t, err)
	require.Equal(t, b.Seq, tb.prevOf(t, d))
	// A cancel of the tail: the tail moves back to b, so the next member
	// names b.
	_, err = tb.e.Cancel(ctx, d.ID)
	require.NoError(t, err)
	e := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	require.Equal(t, b.Seq, tb.prevOf(t, e))
	// An erasure of a live member: its tombstone is out of the chain.
	n, err := tb.settled().EraseSubject(ctx, "ws", "alice")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, a.Seq, tb.prevOf(t, e))
	// An expiry (the reaper) of a member with a successor.
	f := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", ExpiresAt: tb.b.Clock.Now().Add(30 * time.Minute)})
	g := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	tb.b.Clock.Advance(31 * time.Minute)
	rr, err := tb.settled().Reap(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rr.Expired)
	require.Equal(t, outbox.StopExpired, tb.get(t, f.ID).StopReason)
	require.Equal(t, e.Seq, tb.prevOf(t, g))
	// Every ended member's TTL passes and retention deletes them while a
	// is live: the lane still waits for a.
	tb.b.Clock.Advance(2 * time.Hour)
	ret, err := tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, ret.Deleted, "c, d, b's tombstone, f")
	res, _, _ := tb.claim(t, 0, 10)
	require.Empty(t, res.Groups, "e and g wait for a")
	_, err = tb.e.Cancel(ctx, a.ID)
	require.NoError(t, err)
	res, _, _ = tb.claim(t, 0, 10)
	require.Equal(t, [][]string{{e.ID, g.ID}}, ids(res))
})

var _ = register("DeepLaneOutOfOrderEndIsRelinkedPastTheWalk", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Retention = time.Hour })
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", Propose: true})
	b := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	// More members behind b than an end walks back from the tail
	// (maxSuccessorWalk is 16), with other lanes' actions between them.
	var m []outbox.Action
	for i := 0; i < 40; i++ {
		m = append(m, tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"}))
		if i%4 == 0 {
			tb.enqueue(t, outbox.EnqueueParams{LaneKey: "other"})
			tb.enqueue(t, outbox.EnqueueParams{})
		}
	}
	_, err := tb.e.Cancel(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, a.Seq, tb.prevOf(t, m[0]), "b's successor, 40 members from the tail, now names a")
	_, err = tb.e.Cancel(ctx, m[1].ID)
	require.NoError(t, err)
	require.Equal(t, m[0].Seq, tb.prevOf(t, m[2]))
	// b and m[1] are deleted while a is live: nothing of the lane passes.
	tb.b.Clock.Advance(2 * time.Hour)
	ret, err := tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, ret.Deleted)
	res, _, _ := tb.claim(t, 0, 100)
	for _, g := range res.Groups {
		require.NotEqual(t, "L", g[0].LaneKey, "lane L waits for a")
	}
	_, err = tb.e.Cancel(ctx, a.ID)
	require.NoError(t, err)
	res, _, _ = tb.claim(t, 0, 100)
	want := []string{m[0].ID}
	for _, x := range m[2:] {
		want = append(want, x.ID)
	}
	var got []string
	for _, g := range res.Groups {
		if g[0].LaneKey == "L" {
			for _, x := range g {
				got = append(got, x.ID)
			}
		}
	}
	require.Equal(t, want, got, "lane L runs in order")
})

// An ended member keeps its prev after its relink (the row is out of the
// chain, not changed). When the member it names ends out of order too, the
// successor search past the walk must take the live member that names it,
// not the ended one: it took the ended one, the relink's condition refused
// it eight times, the end went without a relink, and once retention deleted
// the member the live successor named a gone row and ran while the lane's
// head was live (simulator seed 1977 -repartition, on ADR 0011's branch).
var _ = register("DeepLaneSecondOutOfOrderEndSkipsAnEndedMember", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Retention = time.Hour })
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", Propose: true})
	b := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	c := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	// More members behind c than an end walks back from the tail
	// (maxSuccessorWalk is 16).
	var m []outbox.Action
	for i := 0; i < 20; i++ {
		m = append(m, tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"}))
	}
	_, err := tb.e.Cancel(ctx, c.ID)
	require.NoError(t, err)
	require.Equal(t, b.Seq, tb.prevOf(t, m[0]), "c's successor now names b")
	_, err = tb.e.Cancel(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, a.Seq, tb.prevOf(t, m[0]), "b's live successor (not the ended c) now names a")
	// b and c are deleted while a is live: nothing of the lane passes.
	tb.b.Clock.Advance(2 * time.Hour)
	ret, err := tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, ret.Deleted)
	res, _, _ := tb.claim(t, 0, 100)
	for _, g := range res.Groups {
		require.NotEqual(t, "L", g[0].LaneKey, "lane L waits for a")
	}
})

// appendBeforeTransact runs fn once, before the first transaction it sees.
type appendBeforeTransact struct {
	outbox.DynamoDB
	once sync.Once
	fn   func()
}

func (d *appendBeforeTransact) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	d.once.Do(d.fn)
	return d.DynamoDB.TransactWriteItems(ctx, in, o...)
}

var _ = register("RelinkMeetsAConcurrentAppend", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Retention = time.Hour })
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", Propose: true})
	b := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	// b is the tail when its end reads it; a member joins behind it before
	// the end's transaction (which moves the tail back to a) is sent.
	var n outbox.Action
	db := &appendBeforeTransact{DynamoDB: tb.b.DB, fn: func() { n = tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"}) }}
	e2, err := outbox.New(db, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg)
	require.NoError(t, err)
	_, err = e2.Cancel(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, b.Seq, n.PrevSeq, "the append read b as the tail")
	require.Equal(t, a.Seq, tb.prevOf(t, n), "the end, tried again, found n as b's successor")
	tb.b.Clock.Advance(2 * time.Hour)
	ret, err := tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, ret.Deleted)
	res, _, _ := tb.claim(t, 0, 10)
	require.Empty(t, res.Groups, "n waits for a")
	// The next append goes behind n.
	x := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	require.Equal(t, n.Seq, x.PrevSeq)
})

// The lane tail of a lane's last live member goes after that member's end,
// not in its transaction (design.md §3.4, ADR 0013).

// countTransacts counts the transactions sent through it.
type countTransacts struct {
	outbox.DynamoDB
	n atomic.Int64
}

func (d *countTransacts) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	d.n.Add(1)
	return d.DynamoDB.TransactWriteItems(ctx, in, o...)
}

// isLaneTail tells a lane tail's key (either layout: in its lane's
// partition, or a row of its own).
func isLaneTail(key map[string]types.AttributeValue) bool {
	return strings.HasPrefix(str(key, "sk"), "L#") || strings.HasPrefix(str(key, "pk"), "L#")
}

var _ = register("LaneLastEndIsAPlainWriteAndTheTailGoes", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	res, _, _ := tb.claim(t, 0, 10)
	require.Equal(t, [][]string{{a.ID}}, ids(res))
	db := &countTransacts{DynamoDB: tb.b.DB}
	e2, err := outbox.New(db, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg)
	require.NoError(t, err)
	_, err = e2.AttemptFinish(ctx, res.Groups[0][0], outbox.Done("x"))
	require.NoError(t, err)
	require.Zero(t, db.n.Load(), "the last member's end is no transaction")
	// The tail went: the next member starts the lane again.
	b := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	require.Zero(t, b.PrevSeq)
})

var _ = register("LaneTailLeftAfterTheEndIsLinkedBehind", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	res, _, _ := tb.claim(t, 0, 10)
	// The process dies between the end and the tail's delete.
	e2, f := tb.faulty(t)
	f.rule = func(op string, k map[string]types.AttributeValue) fault {
		if op == "DeleteItem" && isLaneTail(k) {
			return failBefore
		}
		return noFault
	}
	got, err := e2.AttemptFinish(ctx, res.Groups[0][0], outbox.Done("x"))
	require.NoError(t, err)
	require.Equal(t, outbox.StateDONE, got.State)
	// The tail names the ended a: the next member links behind it and is
	// not held by it.
	b := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	require.Equal(t, a.Seq, b.PrevSeq)
	c := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	res, _, _ = tb.claim(t, 0, 10)
	require.Equal(t, [][]string{{b.ID, c.ID}}, ids(res))
	for _, x := range res.Groups[0] {
		_, err := tb.e.AttemptFinish(ctx, x, outbox.Done("x"))
		require.NoError(t, err)
	}
	d := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	require.Zero(t, d.PrevSeq, "c's end deleted the tail")
})
