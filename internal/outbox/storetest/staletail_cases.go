package storetest

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Lane tails read eventually consistent (ADR 0017): the enqueue's first try
// and the end of a lane's last member read the tail without ConsistentRead;
// a stale answer is refused by the write's condition (enqueue: tried again
// with a consistent read) or confirmed by a consistent read (end) before
// the tail is left in place.

// staleTailDB serves eventually consistent reads of lane tails from a
// stale copy when one is set (nil item: the tail read as missing), and
// counts the tail reads by consistency.
type staleTailDB struct {
	outbox.DynamoDB
	mu                   sync.Mutex
	stale                bool
	item                 map[string]types.AttributeValue
	eventual, consistent int
	served               int
}

// serve makes eventually consistent tail reads answer item (nil: none)
// until cleared.
func (d *staleTailDB) serve(item map[string]types.AttributeValue) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stale, d.item = true, item
}

func (d *staleTailDB) clear() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stale, d.item = false, nil
}

func (d *staleTailDB) counts() (eventual, consistent, served int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.eventual, d.consistent, d.served
}

func (d *staleTailDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if !isLaneTail(in.Key) {
		return d.DynamoDB.GetItem(ctx, in, o...)
	}
	d.mu.Lock()
	if aws.ToBool(in.ConsistentRead) {
		d.consistent++
		d.mu.Unlock()
		return d.DynamoDB.GetItem(ctx, in, o...)
	}
	d.eventual++
	if d.stale {
		d.served++
		item := d.item
		d.mu.Unlock()
		return &dynamodb.GetItemOutput{Item: item}, nil
	}
	d.mu.Unlock()
	return d.DynamoDB.GetItem(ctx, in, o...)
}

func (tb *bundle) staleTails(t *testing.T) (*outbox.Engine, *staleTailDB) {
	t.Helper()
	db := &staleTailDB{DynamoDB: tb.b.DB}
	e, err := outbox.New(db, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg)
	require.NoError(t, err)
	return e, db
}

var _ = register("EnqueueReadsTheLaneTailEventuallyAndAStaleReadIsRefused", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	e, db := tb.staleTails(t)
	enq := func() outbox.Action {
		t.Helper()
		r, err := e.Enqueue(ctx, outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", LaneKey: "L", Payload: Payload(Script{})})
		require.NoError(t, err)
		return r.Action
	}
	m1 := enq()
	ev, cons, _ := db.counts()
	require.Equal(t, 1, ev, "the enqueue reads the tail eventually consistent")
	require.Zero(t, cons)
	// A stale read that misses the tail: the tail's write (conditioned on
	// no tail) is refused, and the next try reads it consistently.
	db.serve(nil)
	m2 := enq()
	require.Equal(t, m1.Seq, m2.PrevSeq, "m2 goes behind m1 all the same")
	_, cons, served := db.counts()
	require.Equal(t, 1, served)
	require.Equal(t, 1, cons, "the try after the refusal reads consistently")
	// A stale read that names an older member: refused the same way.
	db.clear()
	older := tb.tailRow(t, "ws", "L") // names m2
	m3 := enq()
	require.Equal(t, m2.Seq, m3.PrevSeq)
	db.serve(older)
	m4 := enq()
	require.Equal(t, m3.Seq, m4.PrevSeq, "not behind m2, which the stale read named")
	db.clear()
	res, _, _ := tb.claim(t, 0, 10)
	require.Equal(t, [][]string{{m1.ID, m2.ID, m3.ID, m4.ID}}, ids(res), "one lane, in order")
})

var _ = register("LaneEndConfirmsAStaleTailReadBeforeLeavingTheTail", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	res, _, _ := tb.claim(t, 0, 10)
	require.Equal(t, [][]string{{a.ID}}, ids(res))
	e, db := tb.staleTails(t)
	// The end's eventually consistent read misses the tail (stale): a
	// consistent read confirms it names a, and it goes.
	db.serve(nil)
	_, err := e.AttemptFinish(ctx, res.Groups[0][0], outbox.Done("x"))
	require.NoError(t, err)
	ev, cons, served := db.counts()
	require.Equal(t, 1, ev, "the end reads the tail eventually consistent first")
	require.Equal(t, 1, served)
	require.Equal(t, 1, cons, "and confirms a stale miss consistently")
	require.Nil(t, tb.tailRow(t, "ws", "L"), "the drained lane's tail went")
})

var _ = register("LaneEndOnAStaleTailNamingItLeavesTheNewerTail", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	res, _, _ := tb.claim(t, 0, 10)
	require.Equal(t, [][]string{{a.ID}}, ids(res))
	named := tb.tailRow(t, "ws", "L") // names a
	b := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	require.Equal(t, a.Seq, b.PrevSeq)
	e, db := tb.staleTails(t)
	// The end's read is stale and names a: the delete, conditioned on the
	// tail naming a, is refused; b keeps the tail.
	db.serve(named)
	_, err := e.AttemptFinish(ctx, res.Groups[0][0], outbox.Done("x"))
	require.NoError(t, err)
	_, _, served := db.counts()
	require.Equal(t, 1, served)
	require.NotNil(t, tb.tailRow(t, "ws", "L"), "b's tail stays")
	c := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	require.Equal(t, b.Seq, c.PrevSeq, "the lane goes on behind b")
	res, _, _ = tb.claim(t, 0, 10)
	require.Equal(t, [][]string{{b.ID, c.ID}}, ids(res))
})
