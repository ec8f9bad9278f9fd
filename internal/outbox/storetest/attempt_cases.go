package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// outcomeCases: a script, the kind, and the state and stop reason after one drain.
var _ = register("OutcomesMapToStates", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	type want struct {
		kind   string
		s      Script
		state  outbox.State
		reason outbox.StopReason
		att    int
	}
	cases := map[string]want{
		"Done":                {KindIdem, Script{Do: []string{"done"}}, outbox.StateDONE, outbox.StopDone, 1},
		"Retry":               {KindIdem, Script{Do: []string{"retry"}}, outbox.StateADMITTED, "", 1},
		"Defer":               {KindIdem, Script{Do: []string{"defer"}}, outbox.StateADMITTED, "", 0},
		"RereadReadBack":      {KindRB, Script{Do: []string{"reread"}}, outbox.StateEXECUTING, "", 1},
		"RereadAtMostOnce":    {KindAMO, Script{Do: []string{"reread"}}, outbox.StateUNCERTAIN, outbox.StopUncertain, 1},
		"RereadIdempotent":    {KindIdem, Script{Do: []string{"reread"}}, outbox.StateADMITTED, "", 1},
		"Uncertain":           {KindIdem, Script{Do: []string{"uncertain"}}, outbox.StateUNCERTAIN, outbox.StopUncertain, 1},
		"Failed":              {KindIdem, Script{Do: []string{"failed"}}, outbox.StateFAILED, outbox.StopRejected, 1},
		"Cancelled":           {KindIdem, Script{Do: []string{"cancelled"}}, outbox.StateCANCELLED, outbox.StopCancelled, 1},
		"ErrorAfterFenceRB":   {KindRB, Script{Do: []string{"error"}}, outbox.StateEXECUTING, "", 1},
		"ErrorAfterFenceAMO":  {KindAMO, Script{Do: []string{"error"}}, outbox.StateUNCERTAIN, outbox.StopUncertain, 1},
		"ErrorAfterFenceIdem": {KindIdem, Script{Do: []string{"error"}}, outbox.StateADMITTED, "", 1},
		"PanicAfterFenceRB":   {KindRB, Script{Do: []string{"panic"}}, outbox.StateEXECUTING, "", 1},
		"PanicAfterFenceAMO":  {KindAMO, Script{Do: []string{"panic"}}, outbox.StateUNCERTAIN, outbox.StopUncertain, 1},
		"PanicAfterFenceIdem": {KindIdem, Script{Do: []string{"panic"}}, outbox.StateADMITTED, "", 1},
		"PanicBeforeFenceAMO": {KindAMO, Script{Prepare: "panic"}, outbox.StateADMITTED, "", 1},
		"ErrorBeforeFenceAMO": {KindAMO, Script{Prepare: "error"}, outbox.StateADMITTED, "", 1},
		"PrepareCancels":      {KindAMO, Script{Prepare: "cancelled"}, outbox.StateCANCELLED, outbox.StopCancelled, 1},
		"LastAttemptRetry":    {KindIdem, Script{Do: []string{"retry"}, N: 1}, outbox.StateFAILED, outbox.StopAttemptsExhausted, 1},
		"LastAttemptReread":   {KindRB, Script{Do: []string{"reread"}, N: 1}, outbox.StateUNCERTAIN, outbox.StopAttemptsExhausted, 1},
	}
	got := map[string]string{}
	for name, w := range cases {
		maxAtt := 0
		if w.s.N == 1 {
			maxAtt = 1
		}
		got[name] = tb.enqueue(t, outbox.EnqueueParams{Kind: w.kind, Payload: Payload(w.s), MaxAttempts: maxAtt}).ID
	}
	tb.drain(t)
	for name, w := range cases {
		a := tb.get(t, got[name])
		require.Equal(t, w.state, a.State, name)
		require.Equal(t, w.reason, a.StopReason, name)
		require.Equal(t, w.att, a.Attempt, name)
		if a.State.Ended() {
			require.Empty(t, a.Payload, name)
			require.False(t, a.EndedAt.IsZero(), name)
		}
		fenced := w.s.Prepare == ""
		if fenced {
			require.Equal(t, 1, tb.rec.Execs(a.ID), name)
		} else {
			require.Zero(t, tb.rec.Execs(a.ID), name)
		}
	}
})

var _ = register("DeferDoesNotCountAnAttempt", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{MaxAttempts: 1, Payload: Payload(Script{Do: []string{"defer", "defer", "done"}})})
	for range 2 {
		tb.drain(t)
		got := tb.get(t, a.ID)
		require.Equal(t, outbox.StateADMITTED, got.State)
		require.Zero(t, got.Attempt)
		tb.b.Clock.Advance(tb.cfg.RetryCap)
	}
	// Deferrals never use up the single attempt.
	got := tb.get(t, a.ID)
	require.Equal(t, 1, got.MaxAttempts)
	require.Equal(t, 2, tb.rec.Execs(a.ID))
})

var _ = register("RetryBacksOffThenExhausts", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{MaxAttempts: 3, Payload: Payload(Script{Do: []string{"retry"}})})
	for i := 1; i <= 3; i++ {
		tb.drain(t)
		got := tb.get(t, a.ID)
		require.Equal(t, i, got.Attempt)
		if i < 3 {
			require.Equal(t, outbox.StateADMITTED, got.State)
			wait := got.NextAttemptAt.Sub(tb.b.Clock.Now())
			require.Positive(t, wait)
			require.LessOrEqual(t, wait, tb.cfg.RetryBase<<(i-1))
			tb.drain(t) // not due yet: nothing happens
			require.Equal(t, i, tb.rec.Execs(a.ID))
			tb.b.Clock.Advance(wait)
		}
	}
	got := tb.get(t, a.ID)
	require.Equal(t, outbox.StateFAILED, got.State)
	require.Equal(t, outbox.StopAttemptsExhausted, got.StopReason)
})

var _ = register("RereadLeadsToReadBackFirst", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	found := tb.enqueue(t, outbox.EnqueueParams{Kind: KindRB, Payload: Payload(Script{Do: []string{"reread"}, ReadBack: "done"})})
	absent := tb.enqueue(t, outbox.EnqueueParams{Kind: KindRB, Payload: Payload(Script{Do: []string{"reread", "done"}, ReadBack: "none"})})
	unwanted := tb.enqueue(t, outbox.EnqueueParams{Kind: KindRB, Payload: Payload(Script{Do: []string{"reread"}, ReadBack: "absent"})})
	tb.drain(t)
	for _, id := range []string{found.ID, absent.ID, unwanted.ID} {
		got := tb.get(t, id)
		require.Equal(t, outbox.StateEXECUTING, got.State)
		require.False(t, got.WriteStartedAt.IsZero(), "the fence stays")
	}
	tb.drain(t)
	require.Zero(t, tb.rec.ReadBacks(found.ID), "not before the wait")
	tb.b.Clock.Advance(tb.cfg.RetryCap)
	tb.drain(t)
	f := tb.get(t, found.ID)
	require.Equal(t, outbox.StateDONE, f.State)
	require.Equal(t, "found", f.ReadbackRef)
	require.Equal(t, 1, tb.rec.Execs(found.ID), "read back, not sent again")
	require.Equal(t, 1, tb.rec.ReadBacks(found.ID))
	require.Equal(t, outbox.StateDONE, tb.get(t, absent.ID).State)
	require.Equal(t, 2, tb.rec.Execs(absent.ID), "proven absent: executed again")
	o := tb.rec.Order()
	require.Less(t, indexOf(o, "rb:"+absent.ID), lastIndexOf(o, "exec:"+absent.ID))
	u := tb.get(t, unwanted.ID)
	require.Equal(t, outbox.StateCANCELLED, u.State)
	require.Equal(t, outbox.StopAbsent, u.StopReason)
})

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func lastIndexOf(s []string, v string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == v {
			return i
		}
	}
	return -1
}

var _ = register("AtMostOnceWhoseWriteStartedIsNeverClaimedAgain", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{Kind: KindAMO, Payload: Payload(Script{Do: []string{"crash", "done"}})})
	tb.drain(t) // the drainer dies inside the provider call
	got := tb.get(t, a.ID)
	require.Equal(t, outbox.StateEXECUTING, got.State)
	require.False(t, got.WriteStartedAt.IsZero())
	tb.b.Clock.Advance(2 * tb.cfg.Lease)
	res, _, _ := tb.claim(t, 0, 10)
	require.Empty(t, res.Groups)
	tb.drain(t)
	require.Equal(t, 1, tb.rec.Execs(a.ID))
	rr, err := tb.settled().Reap(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rr.Uncertain)
	got = tb.get(t, a.ID)
	require.Equal(t, outbox.StateUNCERTAIN, got.State)
	require.Equal(t, outbox.StopLeaseLostAfterWrite, got.StopReason)

	// A read-back kind that crashed after its fence is reclaimed and read back.
	b := tb.enqueue(t, outbox.EnqueueParams{Kind: KindRB, Payload: Payload(Script{Do: []string{"crash"}, ReadBack: "done"})})
	tb.drain(t)
	tb.b.Clock.Advance(2 * tb.cfg.Lease)
	tb.drain(t)
	require.Equal(t, outbox.StateDONE, tb.get(t, b.ID).State)
	require.Equal(t, 1, tb.rec.Execs(b.ID))
	require.Equal(t, 1, tb.rec.ReadBacks(b.ID))
})

// A kind whose fence is its own write (read-back here; at-most-once below):
// an erasure before the fence stops the call. Idempotent receivers are
// fenced by their claim instead (design.md §5, claimfence_cases.go).
var _ = register("ErasureDuringAttemptMakesFenceRefuse", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{Kind: KindRB, SubjectID: "alice", IdempotencyKey: "k1", Payload: Payload(Script{Prepare: "hook"})})
	keep := tb.enqueue(t, outbox.EnqueueParams{SubjectID: "bob"})
	tb.rec.PrepareHook = func(att *outbox.Attempt) {
		n, err := tb.settled().EraseSubject(ctx, "ws", "alice")
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}
	tb.drain(t)
	require.Zero(t, tb.rec.Execs(a.ID))
	_, err := tb.e.ActionGet(ctx, a.ID)
	require.ErrorIs(t, err, outbox.ErrNotFound)
	require.Equal(t, outbox.StateDONE, tb.get(t, keep.ID).State)
	// The idempotency record went too: the key is free again.
	r, err := tb.e.Enqueue(ctx, outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", IdempotencyKey: "k1", Payload: Payload(Script{})})
	require.NoError(t, err)
	require.False(t, r.Existing)
})

var _ = register("EndedHookItemsCommitWithTheEnd", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{Kind: KindHook, LaneKey: "L"})
	tb.drain(t)
	require.Equal(t, outbox.StateDONE, tb.get(t, a.ID).State)
	out, err := tb.b.DB.GetItem(ctx, hookKey(tb.b.Table, a.ID))
	require.NoError(t, err)
	require.NotNil(t, out.Item)
	// The lane tail was cleaned up with the end: the next action of the lane
	// has no predecessor.
	n := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	require.Zero(t, n.PrevSeq)
})

var _ = register("FenceRefusedWhenLeaseTooShort", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{Kind: KindAMO, Payload: Payload(Script{Prepare: "hook"})})
	tb.rec.PrepareHook = func(att *outbox.Attempt) {
		// Preparing took until less than the margin of the lease is left,
		// and meanwhile another drainer reclaimed it.
		tb.b.Clock.Advance(tb.cfg.Lease + time.Second)
		res, _, _ := tb.claim(t, 0, 1)
		require.Len(t, res.Groups, 1)
	}
	tb.drain(t)
	require.Zero(t, tb.rec.Execs(a.ID))
	got := tb.get(t, a.ID)
	require.Equal(t, outbox.StateEXECUTING, got.State)
	require.True(t, got.WriteStartedAt.IsZero())
	require.Equal(t, 2, got.Attempt)
})

var _ = register("DrainHelperRunsEverythingDue", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = 3 })
	var all []string
	for i := range 6 {
		p := outbox.EnqueueParams{Payload: Payload(Script{Do: []string{"retry", "retry", "done"}})}
		if i%2 == 0 {
			p.LaneKey = "L"
		}
		all = append(all, tb.enqueue(t, p).ID)
	}
	rb := tb.enqueue(t, outbox.EnqueueParams{Kind: KindRB, Payload: Payload(Script{Do: []string{"reread"}, ReadBack: "done"})})
	require.NoError(t, tb.settled().Drain(ctx))
	for _, id := range append(all, rb.ID) {
		require.Equal(t, outbox.StateDONE, tb.get(t, id).State, id)
	}
})

// eraseOnStart erases a subject when an attempt starts (after the claim and
// the row read, before the write fence).
type eraseOnStart struct {
	outbox.NopObserver
	erase func()
}

func (o eraseOnStart) AttemptStarted(*outbox.Action) { o.erase() }

var _ = register("ErasureAfterClaimStopsTheProviderCall", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	// At-most-once: fenced by its own write (an idempotent receiver is not:
	// ErasureAfterClaimOfIdempotentCallsAtMostOnce).
	a := tb.enqueue(t, outbox.EnqueueParams{Kind: KindAMO, SubjectID: "alice"})
	erased := 0
	e, err := outbox.New(tb.b.DB, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg,
		outbox.WithObserver(eraseOnStart{erase: func() {
			n, err := tb.e.EraseSubject(ctx, "ws", "alice")
			if err == nil {
				erased += n
			}
		}}))
	require.NoError(t, err)
	tb.settled()
	_, err = e.DrainPartition(ctx, 0, outbox.DrainParams{})
	require.NoError(t, err)
	require.Equal(t, 1, erased)
	require.Zero(t, tb.rec.Execs(a.ID), "a pending action erased before its fence is never carried out")
})

// A library caller finishes, with a Retry or a Defer, a read-back action
// whose earlier attempt passed its write fence and died in the provider
// call (the claim reclaimed it; nothing the caller did read it back). Only
// a read-back proves the effect absent (design.md §7.2): the fence stays,
// as after a Reread, so the next attempt reads back first and does not
// send again. Before, the Retry dropped the fence and the next drain sent
// the action a second time (simulator, issue 27: the library driver).
var _ = register("AttemptFinishKeepsTheFenceAnEarlierAttemptLeft", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	for _, res := range []outbox.Result{outbox.Retry(errors.New("not run")), outbox.Defer(time.Second, errors.New("busy"))} {
		a := tb.enqueue(t, outbox.EnqueueParams{Kind: KindRB, Payload: Payload(Script{Do: []string{"crash", "done"}, ReadBack: "done"})})
		tb.drain(t) // the drainer dies inside the provider call
		require.False(t, tb.get(t, a.ID).WriteStartedAt.IsZero())
		tb.b.Clock.Advance(2 * tb.cfg.Lease)
		cr, _, _ := tb.claim(t, 0, 10)
		require.Equal(t, [][]string{{a.ID}}, ids(cr), "reclaimed by the library caller")
		require.False(t, cr.Groups[0][0].WriteStartedAt.IsZero(), "Claim names the fence the earlier attempt left")
		got, err := tb.e.AttemptFinish(ctx, cr.Groups[0][0], res)
		require.NoError(t, err)
		require.Equal(t, outbox.StateEXECUTING, got.State, "%s: not back to ADMITTED", res.Outcome)
		require.False(t, got.WriteStartedAt.IsZero(), "%s: the fence stays", res.Outcome)
		tb.b.Clock.Advance(tb.cfg.RetryCap + tb.cfg.Lease)
		tb.drain(t)
		require.Equal(t, outbox.StateDONE, tb.get(t, a.ID).State)
		require.Equal(t, 1, tb.rec.Execs(a.ID), "%s: read back, not sent again", res.Outcome)
		require.Equal(t, 1, tb.rec.ReadBacks(a.ID))
	}
})
