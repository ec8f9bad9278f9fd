package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// The written-first keyed enqueue (design.md §4.2): one keyed action outside a
// lane is its idempotency record, put first with what it takes to write the
// action, and then the action. These cases crash the engine between the two
// puts and race other clients into the gap.

// faulty returns an engine of this build over a faultyDB on the backend.
func (tb *bundle) faulty(t *testing.T) (*outbox.Engine, *faultyDB) {
	t.Helper()
	f := &faultyDB{DynamoDB: tb.b.DB}
	e, err := outbox.New(f, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg)
	require.NoError(t, err)
	return e, f
}

// crashBeforeAction makes the engine's process die when it is about to put
// an action: that call and every later one fail.
func (f *faultyDB) crashBeforeAction() {
	crashed := false
	f.rule = func(op string, k map[string]types.AttributeValue) fault {
		if crashed || (op == "PutItem" && isAction(k)) {
			crashed = true
			return failBefore
		}
		return noFault
	}
}

// keyedActions lists the workspace's actions (any state) with the key.
func (tb *bundle) keyedActions(t *testing.T, ws, ikey string) []outbox.Action {
	t.Helper()
	var out []outbox.Action
	cursor := ""
	for {
		l, err := tb.settled().ActionList(tb.ctx, outbox.ActionListParams{WorkspaceID: ws, Limit: 500, Cursor: cursor})
		require.NoError(t, err)
		for _, a := range l.Actions {
			if a.IdempotencyKey == ikey {
				out = append(out, a)
			}
		}
		if l.NextCursor == "" {
			return out
		}
		cursor = l.NextCursor
	}
}

func (tb *bundle) record(t *testing.T, ws, ikey string) map[string]types.AttributeValue {
	t.Helper()
	rec, err := rawRecord(tb.ctx, tb.b.DB, tb.b.Table, ws, ikey)
	require.NoError(t, err)
	return rec
}

var _ = register("KeyedEnqueueCrashBetweenRecordAndActionIsFinishedByARetry", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 2 })
	for _, commitThenCrash := range []bool{false, true} {
		p := outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", IdempotencyKey: fmt.Sprintf("order-%v", commitThenCrash),
			SubjectID: "alice", Payload: Payload(Script{Tag: "first"}), MaxAttempts: 3}
		crashing, f := tb.faulty(t)
		crashed := false
		f.rule = func(op string, k map[string]types.AttributeValue) fault {
			switch {
			case crashed:
				return failBefore
			case !commitThenCrash && op == "PutItem" && isAction(k):
				// The record is written; the process dies before the action.
				crashed = true
				return failBefore
			case commitThenCrash && op == "PutItem" && isRecord(k):
				// The record commits, its answer is lost, the process dies.
				crashed = true
				return failAfter
			}
			return noFault
		}
		_, err := crashing.Enqueue(ctx, p)
		require.Error(t, err, "the enqueue was not acknowledged")
		rec := tb.record(t, "ws", p.IdempotencyKey)
		require.NotNil(t, rec, "the record was written")
		id := str(rec, "id")
		_, err = tb.e.ActionGet(ctx, id)
		require.ErrorIs(t, err, outbox.ErrNotFound, "its action was not")
		tb.b.Clock.Advance(time.Minute)

		// A retry with the key (a different payload: the first request
		// decided the action) finishes the enqueue from the record.
		retry := p
		retry.Payload = Payload(Script{Tag: "retry"})
		again, err := tb.e.Enqueue(ctx, retry)
		require.NoError(t, err)
		require.True(t, again.Existing)
		require.Equal(t, id, again.Action.ID)
		require.Equal(t, outbox.StateADMITTED, again.Action.State)
		require.JSONEq(t, string(p.Payload), string(again.Action.Payload))
		require.Equal(t, "alice", again.Action.SubjectID)
		require.Equal(t, 3, again.Action.MaxAttempts)
		third, err := tb.e.Enqueue(ctx, retry)
		require.NoError(t, err)
		require.True(t, third.Existing)
		require.Equal(t, id, third.Action.ID)
		got := tb.keyedActions(t, "ws", p.IdempotencyKey)
		require.Len(t, got, 1, "the action exists exactly once")
		require.Equal(t, id, got[0].ID)
	}
	tb.drain(t)
	for _, k := range []string{"order-false", "order-true"} {
		got := tb.keyedActions(t, "ws", k)
		require.Len(t, got, 1)
		require.Equal(t, outbox.StateDONE, got[0].State)
	}
})

var _ = register("KeyedEnqueueWhoseActionPutFailsIsGivenUp", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 2 })
	p := outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", IdempotencyKey: "once", SubjectID: "alice", Payload: Payload(Script{})}
	e, f := tb.faulty(t)
	failed := false
	f.rule = func(op string, k map[string]types.AttributeValue) fault {
		if op == "PutItem" && isAction(k) && !failed {
			failed = true
			return failBefore
		}
		return noFault
	}
	_, err := e.Enqueue(ctx, p)
	require.Error(t, err)
	require.True(t, failed)
	// The engine lived on: it gave the enqueue up, and nothing of it is
	// left to finish (no record holding the payload).
	require.Nil(t, tb.record(t, "ws", "once"))
	require.Empty(t, tb.keyedActions(t, "ws", "once"))
	again, err := tb.e.Enqueue(ctx, p)
	require.NoError(t, err)
	require.False(t, again.Existing)
	require.Len(t, tb.keyedActions(t, "ws", "once"), 1)

	// The action's put lands but its answer is lost, and every retry of it
	// fails: giving up finds the action written and the enqueue succeeds.
	p.IdempotencyKey = "landed"
	e2, f2 := tb.faulty(t)
	puts := 0
	f2.rule = func(op string, k map[string]types.AttributeValue) fault {
		if op == "PutItem" && isAction(k) {
			puts++
			if puts == 1 {
				return failAfter
			}
			return failBefore
		}
		return noFault
	}
	r, err := e2.Enqueue(ctx, p)
	require.NoError(t, err)
	require.False(t, r.Existing)
	got := tb.keyedActions(t, "ws", "landed")
	require.Len(t, got, 1)
	require.Equal(t, r.Action.ID, got[0].ID)
})

var _ = register("KeyedEnqueueDuplicatesMakeOneAction", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 2 })
	p := outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", IdempotencyKey: "gap", Payload: Payload(Script{})}

	// A second enqueue comes between the first one's record and its action:
	// it finishes the enqueue, and the first one's put finds the same row.
	slow, f := tb.faulty(t)
	var second *outbox.EnqueueResult
	f.before = func(op string, k map[string]types.AttributeValue) {
		if op == "PutItem" && isAction(k) && second == nil {
			var err error
			second, err = tb.e.Enqueue(ctx, p)
			require.NoError(t, err)
		}
	}
	first, err := slow.Enqueue(ctx, p)
	require.NoError(t, err)
	require.NotNil(t, second)
	require.False(t, first.Existing)
	require.True(t, second.Existing)
	require.Equal(t, first.Action.ID, second.Action.ID)
	require.Len(t, tb.keyedActions(t, "ws", "gap"), 1)

	// Many at once.
	p.IdempotencyKey = "crowd"
	const n = 8
	res := make([]*outbox.EnqueueResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = tb.e.Enqueue(ctx, p)
		}()
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, res[0].Action.ID, res[i].Action.ID)
		if !res[i].Existing {
			fresh++
		}
	}
	require.Equal(t, 1, fresh, "one enqueue made the action, the others found it")
	require.Len(t, tb.keyedActions(t, "ws", "crowd"), 1)
	tb.drain(t)
	require.Equal(t, outbox.StateDONE, tb.get(t, res[0].Action.ID).State)
})

var _ = register("ErasureOfAKeyedEnqueueWhoseActionWasNotWritten", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 2 })
	p := outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", IdempotencyKey: "k1", SubjectID: "alice", Payload: Payload(Script{})}

	// The process died between the record and the action; then the
	// subject is erased: the record (which holds the payload) goes.
	crashing, f := tb.faulty(t)
	f.crashBeforeAction()
	_, err := crashing.Enqueue(ctx, p)
	require.Error(t, err)
	id := str(tb.record(t, "ws", "k1"), "id")
	require.NotEmpty(t, id)
	_, err = tb.settled().EraseSubject(ctx, "ws", "alice")
	require.NoError(t, err)
	require.Nil(t, tb.record(t, "ws", "k1"), "erasure deleted the record and its copy of the payload")
	_, err = tb.e.ActionGet(ctx, id)
	require.ErrorIs(t, err, outbox.ErrNotFound)
	// A later enqueue with the key is a new request: a new action.
	again, err := tb.e.Enqueue(ctx, p)
	require.NoError(t, err)
	require.False(t, again.Existing)
	require.NotEqual(t, id, again.Action.ID)
	_, err = tb.e.ActionGet(ctx, id)
	require.ErrorIs(t, err, outbox.ErrNotFound, "the erased enqueue stays gone")

	// The erasure runs between an enqueue's record and its action: the
	// action's put comes late and fails, nothing of alice is left.
	p.IdempotencyKey = "k2"
	slow, f2 := tb.faulty(t)
	erased := false
	var id2 string
	f2.before = func(op string, k map[string]types.AttributeValue) {
		if op == "PutItem" && isAction(k) && !erased {
			erased = true
			id2 = str(tb.record(t, "ws", "k2"), "id")
			_, err := tb.settled().EraseSubject(ctx, "ws", "alice")
			require.NoError(t, err)
		}
	}
	_, err = slow.Enqueue(ctx, p)
	require.ErrorContains(t, err, "erased or abandoned while it was written")
	require.True(t, erased)
	require.NotEmpty(t, id2)
	require.Nil(t, tb.record(t, "ws", "k2"))
	_, err = tb.e.ActionGet(ctx, id2)
	require.ErrorIs(t, err, outbox.ErrNotFound)
	require.Empty(t, tb.keyedActions(t, "ws", "k2"))

	// A retry finishes the enqueue and the subject is erased, all between
	// the first enqueue's record and its action: the erased action's slot
	// keeps a tombstone, so the first one's late put cannot bring it back.
	p.IdempotencyKey = "k4"
	slow, f3 := tb.faulty(t)
	var finished *outbox.EnqueueResult
	f3.before = func(op string, k map[string]types.AttributeValue) {
		if op == "PutItem" && isAction(k) && finished == nil {
			var err error
			finished, err = tb.e.Enqueue(ctx, p)
			require.NoError(t, err)
			_, err = tb.settled().EraseSubject(ctx, "ws", "alice")
			require.NoError(t, err)
		}
	}
	_, err = slow.Enqueue(ctx, p)
	require.ErrorContains(t, err, "erased or abandoned while it was written")
	require.NotNil(t, finished)
	require.True(t, finished.Existing)
	_, err = tb.e.ActionGet(ctx, finished.Action.ID)
	require.ErrorIs(t, err, outbox.ErrNotFound)
	require.Empty(t, tb.keyedActions(t, "ws", "k4"))
	require.Nil(t, tb.record(t, "ws", "k4"))

	// Erasing a written keyed action leaves nothing of it either.
	a := tb.enqueue(t, outbox.EnqueueParams{IdempotencyKey: "k3", SubjectID: "alice"})
	n, err := tb.settled().EraseSubject(ctx, "ws", "alice")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = tb.e.ActionGet(ctx, a.ID)
	require.ErrorIs(t, err, outbox.ErrNotFound)
	require.Nil(t, tb.record(t, "ws", "k3"))
})

var _ = register("KeyedEnqueueNotFinishedInTimeIsAbandoned", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 2 })
	p := outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", IdempotencyKey: "late", Payload: Payload(Script{})}
	crashing, f := tb.faulty(t)
	f.crashBeforeAction()
	_, err := crashing.Enqueue(ctx, p)
	require.Error(t, err)
	id := str(tb.record(t, "ws", "late"), "id")
	tb.b.Clock.Advance(outbox.FinishWindow + time.Second)
	// Past the window the unacknowledged enqueue is abandoned: the retry
	// is a new action, and the old one can never appear.
	again, err := tb.e.Enqueue(ctx, p)
	require.NoError(t, err)
	require.False(t, again.Existing)
	require.NotEqual(t, id, again.Action.ID)
	_, err = tb.e.ActionGet(ctx, id)
	require.ErrorIs(t, err, outbox.ErrNotFound)
	require.Len(t, tb.keyedActions(t, "ws", "late"), 1)

	// A first enqueue that stalls past the window between its two puts
	// while a retry abandons it: its late put fails, one action is left.
	p.IdempotencyKey = "stalled"
	slow, f2 := tb.faulty(t)
	var retry *outbox.EnqueueResult
	f2.before = func(op string, k map[string]types.AttributeValue) {
		if op == "PutItem" && isAction(k) && retry == nil {
			tb.b.Clock.Advance(outbox.FinishWindow + time.Second)
			var err error
			retry, err = tb.e.Enqueue(ctx, p)
			require.NoError(t, err)
		}
	}
	_, err = slow.Enqueue(ctx, p)
	require.ErrorContains(t, err, "erased or abandoned while it was written")
	require.NotNil(t, retry)
	require.False(t, retry.Existing)
	got := tb.keyedActions(t, "ws", "stalled")
	require.Len(t, got, 1)
	require.Equal(t, retry.Action.ID, got[0].ID)
})

var _ = register("EndedKeyedActionsRecordKeepsNoPayload", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 2 })
	a := tb.enqueue(t, outbox.EnqueueParams{IdempotencyKey: "plain", SubjectID: "alice"})
	b := tb.enqueue(t, outbox.EnqueueParams{IdempotencyKey: "laned", LaneKey: "L"})
	for _, k := range []string{"plain", "laned"} {
		rec := tb.record(t, "ws", k)
		require.NotNil(t, rec)
		require.NotContains(t, rec, "ttl", "a live action's record has no TTL")
	}
	tb.drain(t)
	require.Equal(t, outbox.StateDONE, tb.get(t, a.ID).State)
	require.Equal(t, outbox.StateDONE, tb.get(t, b.ID).State)
	for _, k := range []string{"plain", "laned"} {
		rec := tb.record(t, "ws", k)
		require.NotNil(t, rec)
		require.Contains(t, rec, "ttl", "the record expires with its action")
		for name := range rec {
			require.Contains(t, []string{"pk", "sk", "id", "sub_pk", "ttl"}, name, "an ended action's record keeps only its keys, id, subject key and TTL")
		}
	}
	// And still answers for its action.
	r, err := tb.e.Enqueue(ctx, outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", IdempotencyKey: "plain", Payload: Payload(Script{})})
	require.NoError(t, err)
	require.True(t, r.Existing)
	require.Equal(t, a.ID, r.Action.ID)
})
