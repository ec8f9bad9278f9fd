package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// The cases of this file pin design.md §5: the claim of an idempotent receiver
// sets the write fence itself (a lane member behind its group's head too,
// ADR 0015: memberfence_cases.go), and such an action is in flight from its
// claim on.

// writeCounter counts the writes that name each action row: UpdateItem
// calls, and Update items of transactions.
type writeCounter struct {
	outbox.DynamoDB
	mu      sync.Mutex
	updates map[string]int // sk -> UpdateItem calls
	txUpds  map[string]int // sk -> Update items in transactions
}

func newWriteCounter(db outbox.DynamoDB) *writeCounter {
	return &writeCounter{DynamoDB: db, updates: map[string]int{}, txUpds: map[string]int{}}
}

func skOf(k map[string]types.AttributeValue) string {
	if v, ok := k["sk"].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func actionSK(a outbox.Action) string { return fmt.Sprintf("A#%020d", a.Seq) }

func (w *writeCounter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	w.mu.Lock()
	w.updates[skOf(in.Key)]++
	w.mu.Unlock()
	return w.DynamoDB.UpdateItem(ctx, in, o...)
}

func (w *writeCounter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	w.mu.Lock()
	for _, it := range in.TransactItems {
		if it.Update != nil {
			w.txUpds[skOf(it.Update.Key)]++
		}
	}
	w.mu.Unlock()
	return w.DynamoDB.TransactWriteItems(ctx, in, o...)
}

func (w *writeCounter) counts(a outbox.Action) (updates, txUpdates int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.updates[actionSK(a)], w.txUpds[actionSK(a)]
}

// rawRow reads an action's row as the table holds it (nil when gone).
func (tb *bundle) rawRow(t *testing.T, a outbox.Action) map[string]types.AttributeValue {
	t.Helper()
	out, err := tb.b.DB.GetItem(tb.ctx, &dynamodb.GetItemInput{
		TableName: aws.String(tb.b.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("P#%d", a.Partition)},
			"sk": &types.AttributeValueMemberS{Value: actionSK(a)},
		},
	})
	require.NoError(t, err)
	return out.Item
}

var _ = register("ClaimSetsTheFenceOfIdempotentReceivers", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	k := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain})
	h := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L"})
	m := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L"})
	x := tb.enqueue(t, outbox.EnqueueParams{Kind: KindAMO})
	r := tb.enqueue(t, outbox.EnqueueParams{Kind: KindRB})
	now := tb.b.Clock.Now()
	res, _, _ := tb.claim(t, 0, 10)
	require.Equal(t, [][]string{{k.ID}, {h.ID, m.ID}, {x.ID}, {r.ID}}, ids(res))
	claimed := map[string]outbox.Action{}
	for _, g := range res.Groups {
		for _, a := range g {
			claimed[a.ID] = a
		}
	}
	for _, id := range []string{k.ID, h.ID, m.ID} {
		got := tb.get(t, id)
		require.False(t, got.WriteStartedAt.IsZero(), "%s: an idempotent receiver is fenced by its claim", id)
		require.Equal(t, now.UnixMilli(), got.WriteStartedAt.UnixMilli(), "%s: at the claim's time", id)
		require.True(t, claimed[id].WriteStartedAt.Equal(got.WriteStartedAt), id)
	}
	// A member behind its head is fenced too (ADR 0015), and its row names
	// the head (`wsh`): its call waits for the head, so its fence does not
	// say it started in lane order. Heads carry no `wsh`.
	require.Equal(t, &types.AttributeValueMemberN{Value: fmt.Sprint(h.Seq)}, tb.rawRow(t, m)["wsh"])
	for _, a := range []outbox.Action{k, h} {
		require.NotContains(t, tb.rawRow(t, a), "wsh", a.ID)
	}
	for _, id := range []string{x.ID, r.ID} {
		require.True(t, tb.get(t, id).WriteStartedAt.IsZero(), "%s: a kind fenced by its own write", id)
		require.True(t, claimed[id].WriteStartedAt.IsZero(), id)
	}
})

var _ = register("IdempotentActionHasNoSeparateFenceWrite", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	idem := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain})
	amo := tb.enqueue(t, outbox.EnqueueParams{Kind: KindAMO})
	wc := newWriteCounter(tb.b.DB)
	e, err := outbox.New(wc, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg)
	require.NoError(t, err)
	tb.settled()
	r, err := e.DrainPartition(ctx, 0, outbox.DrainParams{})
	require.NoError(t, err)
	require.Equal(t, 2, r.Ended)
	for _, a := range []outbox.Action{idem, amo} {
		require.Equal(t, outbox.StateDONE, tb.get(t, a.ID).State)
		require.Equal(t, 1, tb.rec.Execs(a.ID))
	}
	// The claim writes each action with one plain conditional update, in no
	// transaction (ADR 0016).
	upd, tx := wc.counts(idem)
	require.Equal(t, 0, tx, "no transaction")
	require.Equal(t, 2, upd, "the claim, which set the fence, then the end")
	upd, tx = wc.counts(amo)
	require.Equal(t, 0, tx, "no transaction")
	require.Equal(t, 3, upd, "at-most-once: the claim, its own fence write, then the end")
})

var _ = register("ErasureBeforeClaimOfIdempotentPreventsTheCall", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, SubjectID: "alice"})
	x := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L", SubjectID: "bob"})
	b := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L", SubjectID: "alice"})
	c := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L", SubjectID: "bob"})
	n, err := tb.settled().EraseSubject(ctx, "ws", "alice")
	require.NoError(t, err)
	require.Equal(t, 2, n)
	tb.drain(t)
	tb.drain(t)
	require.Zero(t, tb.rec.Execs(a.ID))
	require.Zero(t, tb.rec.Execs(b.ID))
	for _, id := range []string{a.ID, b.ID} {
		_, err := tb.e.ActionGet(ctx, id)
		require.ErrorIs(t, err, outbox.ErrNotFound)
	}
	require.Equal(t, outbox.StateDONE, tb.get(t, x.ID).State)
	require.Equal(t, outbox.StateDONE, tb.get(t, c.ID).State)
})

var _ = register("ErasureAfterClaimOfIdempotentCallsAtMostOnce", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	// b is a lane head with a predecessor (x, ended): erased, it becomes a
	// tombstone. a is keyless: erased, it is deleted.
	x := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L", SubjectID: "bob"})
	b := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, LaneKey: "L", SubjectID: "alice"})
	res, _, _ := tb.claim(t, 0, 1)
	require.Equal(t, [][]string{{x.ID}}, ids(res))
	_, err := tb.e.AttemptFinish(ctx, res.Groups[0][0], outbox.Done("x"))
	require.NoError(t, err)
	a := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain, SubjectID: "alice"})
	erased := 0
	var once sync.Once
	e, err := outbox.New(tb.b.DB, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg,
		outbox.WithObserver(eraseOnStart{erase: func() {
			// Both are claimed (one batch) when the first attempt starts:
			// the erasure falls between their claims and their calls.
			once.Do(func() {
				n, err := tb.e.EraseSubject(ctx, "ws", "alice")
				if err == nil {
					erased += n
				}
			})
		}}))
	require.NoError(t, err)
	tb.settled()
	r, err := e.DrainPartition(ctx, 0, outbox.DrainParams{Concurrency: 1})
	require.NoError(t, err)
	require.Equal(t, 2, r.Claimed)
	require.Equal(t, 2, erased)
	check := func() {
		t.Helper()
		for _, id := range []string{a.ID, b.ID} {
			// In flight from its claim on: the erasure cannot recall the call
			// (design.md §5), but there is at most one.
			require.LessOrEqual(t, tb.rec.Execs(id), 1, id)
			_, err := tb.e.ActionGet(ctx, id)
			require.ErrorIs(t, err, outbox.ErrNotFound, id)
		}
		require.Nil(t, tb.rawRow(t, a), "the keyless row stays deleted")
		ts := tb.rawRow(t, b)
		require.NotNil(t, ts, "the lane member stays a tombstone")
		require.Equal(t, string(outbox.StateCANCELLED), ts["st"].(*types.AttributeValueMemberS).Value)
		require.Equal(t, string(outbox.StopErased), ts["sr"].(*types.AttributeValueMemberS).Value)
		for _, attr := range []string{"pl", "own", "lx", "wsa", "subj", "due_pk"} {
			require.NotContains(t, ts, attr, "nothing of the attempt came back: %s", attr)
		}
	}
	check()
	// Nothing brings them back: not a later drain, not the reaper.
	tb.b.Clock.Advance(2 * tb.cfg.Lease)
	tb.drain(t)
	_, err = tb.settled().Reap(ctx)
	require.NoError(t, err)
	tb.drain(t)
	check()
})

var _ = register("IdempotentLeaseUsedUpByPrepareIsNotCalled", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{Kind: KindIdem, Payload: Payload(Script{Prepare: "hook"})})
	tb.rec.PrepareHook = func(*outbox.Attempt) {
		// Preparing took so long that less than the write margin and the
		// skew bound is left of the lease.
		tb.b.Clock.Advance(tb.cfg.Lease - tb.cfg.WriteMargin)
	}
	tb.drain(t)
	require.Zero(t, tb.rec.Execs(a.ID), "no call without the margin left")
	got := tb.get(t, a.ID)
	require.Equal(t, outbox.StateADMITTED, got.State, "back to ADMITTED, as a retry")
	require.True(t, got.WriteStartedAt.IsZero(), "the claim's fence went with it")
	require.Empty(t, got.Owner)
	require.Equal(t, 1, got.Attempt, "the attempt counts: a Prepare that always overruns ends the action")
	tb.rec.PrepareHook = nil
	tb.b.Clock.Advance(tb.cfg.RetryCap)
	tb.drain(t)
	require.Equal(t, outbox.StateDONE, tb.get(t, a.ID).State)
	require.Equal(t, 1, tb.rec.Execs(a.ID))
})

// advanceOnClaim moves the clock once, as a claim returns with actions.
type advanceOnClaim struct {
	outbox.NopObserver
	advance func()
}

func (o advanceOnClaim) ClaimFinished(_ int, claimed, _ int, _ bool) {
	if claimed > 0 {
		o.advance()
	}
}

var _ = register("UnstartedClaimFencedHeadIsReleasedUncounted", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain})
	var once sync.Once
	e, err := outbox.New(tb.b.DB, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg,
		outbox.WithObserver(advanceOnClaim{advance: func() {
			// The drainer's deadline nears between the claim and the attempt.
			once.Do(func() { tb.b.Clock.Advance(time.Minute) })
		}}))
	require.NoError(t, err)
	tb.settled()
	r, err := e.DrainPartition(ctx, 0, outbox.DrainParams{Deadline: tb.b.Clock.Now().Add(tb.cfg.WriteMargin + 30*time.Second)})
	require.NoError(t, err)
	require.Equal(t, 1, r.Claimed)
	require.Equal(t, 1, r.Released)
	require.Zero(t, tb.rec.Execs(a.ID))
	got := tb.get(t, a.ID)
	require.Equal(t, outbox.StateADMITTED, got.State)
	require.Zero(t, got.Attempt, "a release does not count")
	require.True(t, got.WriteStartedAt.IsZero(), "the claim's fence went with the release")
	require.Empty(t, got.Owner)
	tb.drain(t)
	require.Equal(t, outbox.StateDONE, tb.get(t, a.ID).State)
	require.Equal(t, 1, tb.rec.Execs(a.ID))
})

var _ = register("ReaperEndsExhaustedClaimFencedAsUncertain", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	last := tb.enqueue(t, outbox.EnqueueParams{Kind: KindIdem, MaxAttempts: 1})
	more := tb.enqueue(t, outbox.EnqueueParams{Kind: KindIdem, MaxAttempts: 2})
	res, _, _ := tb.claim(t, 0, 10) // the drainer dies between the claims and the calls
	require.Len(t, res.Groups, 2)
	tb.b.Clock.Advance(tb.cfg.Lease + time.Second)
	rr, err := tb.settled().Reap(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rr.Exhausted)
	got := tb.get(t, last.ID)
	require.Equal(t, outbox.StateUNCERTAIN, got.State, "claimed fenced: it may have been sent")
	require.Equal(t, outbox.StopAttemptsExhausted, got.StopReason)
	m := tb.get(t, more.ID)
	require.Equal(t, outbox.StateEXECUTING, m.State, "attempts left: left for a reclaim, a resend is harmless")
	require.Equal(t, 1, rr.Gauges[0].DueDepth)
	var mayHaveWritten []bool
	tb.rec.OnExecute = func(att *outbox.Attempt) { mayHaveWritten = append(mayHaveWritten, att.MayHaveWritten) }
	tb.drain(t)
	require.Equal(t, outbox.StateDONE, tb.get(t, more.ID).State)
	require.Equal(t, 1, tb.rec.Execs(more.ID))
	require.Equal(t, []bool{true}, mayHaveWritten, "the earlier claim may have sent it")
	require.Zero(t, tb.rec.Execs(last.ID))
})

var _ = register("ClaimFencedHeadIsNotCalledNearTheEndOfTheClaimFence", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	slow := Payload(Script{Prepare: "hook"})
	a1 := tb.enqueue(t, outbox.EnqueueParams{Kind: KindIdem, Payload: slow})
	a2 := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain})
	b1 := tb.enqueue(t, outbox.EnqueueParams{Kind: KindIdem, Payload: slow})
	b2 := tb.enqueue(t, outbox.EnqueueParams{Kind: KindPlain})
	step := 2*time.Minute + 5*time.Second
	prepared := map[string]int{}
	tb.rec.PrepareHook = func(att *outbox.Attempt) {
		prepared[att.Action.ID]++
		tb.b.Clock.Advance(step)
	}
	// Batch 1 (a1, a2) at t0 under the fence taken at t0 until t0+Lease
	// (5m); batch 2 (b1, b2) at t0+2m5s. When b1's Prepare ends (t0+4m10s)
	// its own lease has almost 3m left, but the drainer's claim fence could
	// end during its call (less than the write margin left): b1 is given
	// back uncounted, and so is b2 before its attempt starts. Both are
	// claimed again after the drainer took the fence again for a longer
	// lease.
	r, err := tb.settled().DrainPartition(ctx, 0, outbox.DrainParams{BatchSize: 2, Concurrency: 1})
	require.NoError(t, err)
	require.Equal(t, 1, r.Released, "b2, before its attempt (b1 was given back by its attempt)")
	require.Zero(t, r.FenceRefusals)
	require.Equal(t, map[string]int{a1.ID: 1, b1.ID: 2}, prepared, "b1 prepared again after it was given back")
	for _, a := range []outbox.Action{a1, a2, b1, b2} {
		got := tb.get(t, a.ID)
		require.Equal(t, outbox.StateDONE, got.State, a.ID)
		require.Equal(t, 1, got.Attempt, "%s: the release did not count", a.ID)
		require.Equal(t, 1, tb.rec.Execs(a.ID), a.ID)
	}
})
