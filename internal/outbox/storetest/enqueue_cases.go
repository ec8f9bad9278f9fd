package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

var _ = register("IdempotentEnqueue", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 4 })
	p := outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", IdempotencyKey: "order-1", LaneKey: "L", Payload: Payload(Script{})}
	first, err := tb.e.Enqueue(ctx, p)
	require.NoError(t, err)
	require.False(t, first.Existing)
	p.Payload = Payload(Script{Do: []string{"failed"}})
	again, err := tb.e.Enqueue(ctx, p)
	require.NoError(t, err)
	require.True(t, again.Existing)
	require.Equal(t, first.Action.ID, again.Action.ID)
	require.JSONEq(t, string(first.Action.Payload), string(again.Action.Payload), "the first action, unchanged")
	// The same key in another workspace is another action.
	p.WorkspaceID = "other"
	other, err := tb.e.Enqueue(ctx, p)
	require.NoError(t, err)
	require.False(t, other.Existing)
	// Only one action of the lane exists in ws: the second enqueue changed nothing.
	l, err := tb.settled().ActionList(ctx, outbox.ActionListParams{WorkspaceID: "ws", LaneKey: "L"})
	require.NoError(t, err)
	require.Len(t, l.Actions, 1)
	// Still the first after it ended.
	require.NoError(t, tb.settled().Drain(ctx))
	p.WorkspaceID = "ws"
	after, err := tb.e.Enqueue(ctx, p)
	require.NoError(t, err)
	require.True(t, after.Existing)
	require.Equal(t, outbox.StateDONE, after.Action.State)
})

var _ = register("BatchEnqueueIsAllOrNothing", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 4 })
	ok := outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", LaneKey: "L", Payload: Payload(Script{})}
	bad := ok
	bad.Kind = "nope"
	_, err := tb.e.EnqueueBatch(ctx, []outbox.EnqueueParams{ok, ok, bad})
	require.ErrorIs(t, err, outbox.ErrUnknownKind)
	l, err := tb.settled().ActionList(ctx, outbox.ActionListParams{WorkspaceID: "ws"})
	require.NoError(t, err)
	require.Empty(t, l.Actions)

	// A batch refused inside DynamoDB leaves nothing either: its second
	// action collides with a lane tail changed under it.
	dup := ok
	dup.IdempotencyKey = "same"
	_, err = tb.e.EnqueueBatch(ctx, []outbox.EnqueueParams{dup, dup})
	var ve *outbox.ValidationError
	require.True(t, errors.As(err, &ve))
	l, err = tb.settled().ActionList(ctx, outbox.ActionListParams{WorkspaceID: "ws"})
	require.NoError(t, err)
	require.Empty(t, l.Actions)

	k1, k2 := ok, ok
	k1.IdempotencyKey, k2.IdempotencyKey = "a", "b"
	k2.LaneKey = "M"
	rs, err := tb.e.EnqueueBatch(ctx, []outbox.EnqueueParams{k1, ok, k2, ok})
	require.NoError(t, err)
	require.Len(t, rs, 4)
	require.Equal(t, rs[0].Action.Seq, rs[1].Action.PrevSeq, "a batch chains its lane in order")
	require.Equal(t, rs[1].Action.Seq, rs[3].Action.PrevSeq)
	// Again: seen keys come back as they were, new ones are created.
	k3 := ok
	k3.IdempotencyKey = "c"
	rs2, err := tb.e.EnqueueBatch(ctx, []outbox.EnqueueParams{k1, k3})
	require.NoError(t, err)
	require.True(t, rs2[0].Existing)
	require.Equal(t, rs[0].Action.ID, rs2[0].Action.ID)
	require.False(t, rs2[1].Existing)
	require.Equal(t, rs[3].Action.Seq, rs2[1].Action.PrevSeq)
})

var _ = register("LibraryModeItemsCommitWithCallersTransaction", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	pe, err := tb.e.EnqueueItems(ctx, outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", LaneKey: "L", IdempotencyKey: "k", Payload: Payload(Script{})})
	require.NoError(t, err)
	_, err = tb.e.ActionGet(ctx, pe.Action.ID)
	require.ErrorIs(t, err, outbox.ErrNotFound, "nothing exists before the caller commits")
	require.NoError(t, transact(ctx, tb.b.DB, pe.Items))
	require.Equal(t, outbox.StateADMITTED, tb.get(t, pe.Action.ID).State)
	// The same key again: the caller's transaction is refused and Resolve
	// names the first action.
	pe2, err := tb.e.EnqueueItems(ctx, outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", LaneKey: "L", IdempotencyKey: "k", Payload: Payload(Script{})})
	require.NoError(t, err)
	txErr := transact(ctx, tb.b.DB, pe2.Items)
	require.Error(t, txErr)
	r, err := pe2.Resolve(ctx, txErr)
	require.NoError(t, err)
	require.NotNil(t, r)
	require.True(t, r.Existing)
	require.Equal(t, pe.Action.ID, r.Action.ID)
})

var _ = register("AdmitAndCancel", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	p := tb.enqueue(t, outbox.EnqueueParams{Propose: true})
	require.Equal(t, outbox.StatePROPOSED, p.State)
	tb.drain(t)
	require.Equal(t, outbox.StatePROPOSED, tb.get(t, p.ID).State, "a proposal is not claimed")
	a, err := tb.e.Admit(ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, outbox.StateADMITTED, a.State)
	_, err = tb.e.Admit(ctx, p.ID)
	var te *outbox.TransitionError
	require.True(t, errors.As(err, &te))
	require.Equal(t, outbox.StateADMITTED, te.From)
	c, err := tb.e.Cancel(ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, outbox.StateCANCELLED, c.State)
	require.Equal(t, outbox.StopCancelled, c.StopReason)
	_, err = tb.e.Cancel(ctx, p.ID)
	require.True(t, errors.As(err, &te))
	_, err = tb.e.Admit(ctx, "0-999999")
	require.ErrorIs(t, err, outbox.ErrNotFound)
	// An executing action cannot be cancelled.
	x := tb.enqueue(t, outbox.EnqueueParams{})
	tb.claim(t, 0, 1)
	_, err = tb.e.Cancel(ctx, x.ID)
	require.True(t, errors.As(err, &te))
	require.Equal(t, outbox.StateEXECUTING, te.From)
})

var _ = register("ListPagesWithCursor", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 2 })
	for i := range 7 {
		p := outbox.EnqueueParams{}
		if i%2 == 0 {
			p.LaneKey = "L"
		}
		tb.enqueue(t, p)
	}
	seen := map[string]bool{}
	cursor := ""
	for page := 0; page < 10; page++ {
		r, err := tb.settled().ActionList(ctx, outbox.ActionListParams{WorkspaceID: "ws", Limit: 3, Cursor: cursor})
		require.NoError(t, err)
		for _, a := range r.Actions {
			require.False(t, seen[a.ID])
			seen[a.ID] = true
		}
		if r.NextCursor == "" {
			break
		}
		cursor = r.NextCursor
	}
	require.Len(t, seen, 7)
	r, err := tb.settled().ActionList(ctx, outbox.ActionListParams{WorkspaceID: "ws", LaneKey: "L"})
	require.NoError(t, err)
	require.Len(t, r.Actions, 4)
})

var _ = register("ExpiryTouchesOnlyUnstartedActions", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Lease = 3 * time.Hour })
	exp := tb.b.Clock.Now().Add(time.Hour)
	running := tb.enqueue(t, outbox.EnqueueParams{ExpiresAt: exp})
	res, _, _ := tb.claim(t, 0, 1)
	require.Len(t, res.Groups, 1)
	waiting := tb.enqueue(t, outbox.EnqueueParams{ExpiresAt: exp})
	proposed := tb.enqueue(t, outbox.EnqueueParams{ExpiresAt: exp, Propose: true})
	later := tb.enqueue(t, outbox.EnqueueParams{ExpiresAt: exp.Add(time.Hour), Propose: true})
	// The running one is held under its lease when the expiry passes.
	tb.b.Clock.Set(exp.Add(time.Second))
	rr, err := tb.settled().Reap(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, rr.Expired)
	for _, id := range []string{waiting.ID, proposed.ID} {
		got := tb.get(t, id)
		require.Equal(t, outbox.StateCANCELLED, got.State)
		require.Equal(t, outbox.StopExpired, got.StopReason)
	}
	require.Equal(t, outbox.StatePROPOSED, tb.get(t, later.ID).State)
	require.Equal(t, outbox.StateEXECUTING, tb.get(t, running.ID).State)
	res2, _, _ := tb.claim(t, 0, 10)
	require.Empty(t, res2.Groups, "an expired action is not claimed")
})
