package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ferryhq/ferry/internal/outbox"
)

// A library driver (issue 27): a caller that drives the engine's
// conformance entry points itself, as a custom driver or a test does:
// FenceTake, Claim, its own attempts finished with AttemptFinish, and
// FenceRelease. It keeps the contract those calls state: it calls a
// provider only for an action whose claim set its write fence, in lane
// order (every earlier member of its group ended by it), with the lease
// and the fence's lease covering the call; every other action it finishes
// without a call (a Retry gives back a claim-fenced one, as Claim asks; a
// blind Retry or Defer of one an earlier attempt fenced is AttemptFinish's
// to judge).

// startLibrary starts a library driver of h on a partition.
func (w *world) startLibrary(h *host) {
	part := w.rng.IntN(w.sweepRange(h))
	if sp, ok := w.strandedPartition(); ok && sp < w.sweepRange(h) && w.srng.IntN(2) == 0 {
		part = sp // the stranded lane's
	}
	p := w.newDrainer(h, "", "library")
	p.owner = fmt.Sprintf("lib%d-%s", p.id, h.name)
	p.partition = part
	limit, conc := 1+w.rng.IntN(w.cfg.BatchSize), 1+w.rng.IntN(3)
	if w.srng.IntN(4) == 0 {
		limit = 0 // the engine's BatchSize
	}
	until := h.now().Add(randDur(w.rng, w.cfg.WriteMargin, w.cfg.Lease))
	w.startCoroutine(p, func() { p.err = w.libraryRun(p, h, part, limit, conc, until) })
	w.tracef(p, "library driver on partition %d (limit %d, %d groups at once)", part, limit, conc)
	w.stepProc(p)
}

func (w *world) libraryRun(p *proc, h *host, part, limit, conc int, until time.Time) error {
	ctx := p.ctx()
	w.called("FenceTake")
	v, err := h.eng.FenceTake(ctx, part, p.owner, until)
	if errors.Is(err, outbox.ErrFenceRefused) {
		w.res.Ops["library fence refused"]++
		return nil
	}
	if err != nil {
		return err
	}
	defer func() {
		w.called("FenceRelease")
		_ = h.eng.FenceRelease(context.WithoutCancel(ctx), part, p.owner, v)
	}()
	w.called("Claim")
	cr, err := h.eng.Claim(ctx, part, outbox.ClaimParams{Owner: p.owner, Version: v, Limit: limit, Concurrency: conc})
	if err != nil {
		return err
	}
	for _, g := range cr.Groups {
		inOrder := true
		for _, a := range g {
			if w.sched.strandedLane && !w.quiet && a.WorkspaceID == "w1" && a.LaneKey == "s" {
				// The driver's worker for the stranded lane died: the
				// driver releases its fence, the action left EXECUTING
				// under its lease with the lane behind it.
				w.res.Ops["library worker lost"]++
				inOrder = false
				continue
			}
			res := w.libraryAttempt(ctx, p, h, a, inOrder, until)
			if res.Outcome == outbox.OutcomeNone {
				w.res.Ops["library left to its lease"]++
				inOrder = false
				continue
			}
			if res.Outcome == outbox.OutcomeDefer {
				// A deferral the driver decided (the deferral-bound checker
				// counts the holder's deferral writes).
				p.deferred[keyID(&a)] = a.Epoch
			}
			w.called("AttemptFinish")
			got, err := h.eng.AttemptFinish(ctx, a, res)
			switch {
			case errors.Is(err, outbox.ErrNotHeld):
				w.res.Ops["library not held"]++
				inOrder = false
			case err != nil:
				return err
			default:
				w.res.Ops["library finished"]++
				inOrder = inOrder && got.State.Ended()
			}
		}
	}
	return nil
}

// libraryAttempt runs one attempt of a, or decides it without a call.
// Claim names the actions without their payloads: the driver reads each
// first (a consistent read). Only an idempotent receiver's claim sets its
// write fence (Claim), so only such an action may be called; any other is
// decided without a call — one whose write fence an earlier attempt left
// (reclaimed) with a blind Retry or Defer, which AttemptFinish must not
// take for proof that nothing was written (it keeps the fence: the next
// attempt reads back first).
func (w *world) libraryAttempt(ctx context.Context, p *proc, h *host, a outbox.Action, inOrder bool, until time.Time) outbox.Result {
	w.called("ActionGet")
	full, err := h.eng.ActionGet(ctx, a.ID)
	if err != nil || full.Epoch != a.Epoch || full.Owner != a.Owner {
		// Not knowing whether an earlier attempt wrote, it finishes
		// nothing: the claim's lease runs out and a drainer reclaims it.
		return outbox.Result{}
	}
	ad, ok := h.reg.Lookup(a.Kind)
	if !ok {
		return outbox.Retry(errors.New("unknown kind"))
	}
	claimFenced := ad.Spec().Class == outbox.IdempotentReceiver && !a.WriteStartedAt.IsZero()
	if !claimFenced || !inOrder {
		return w.libraryDecide(a, claimFenced, inOrder)
	}
	a.Payload = full.Payload
	now := h.now()
	budget := min(w.cfg.WriteMargin, a.LeaseExpiresAt.Sub(now)) - w.cfg.ClockSkew
	if budget <= 0 || !now.Add(w.cfg.WriteMargin).Before(until) {
		return outbox.Retry(errors.New("no time left to call"))
	}
	cctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	res := callAdapter(cctx, ad, &outbox.Attempt{Action: a, Number: a.Attempt})
	if res.Outcome == outbox.OutcomeNone {
		// An error without a verdict: the driver tries again later.
		res = outbox.Retry(res.Err)
	}
	w.res.Ops["library call"]++
	return res
}

// callAdapter calls the adapter, a panic turned into an error.
func callAdapter(ctx context.Context, ad outbox.Adapter, att *outbox.Attempt) (res outbox.Result) {
	defer func() {
		if r := recover(); r != nil {
			res = outbox.Result{Err: fmt.Errorf("panic: %v", r)}
		}
	}()
	return ad.Execute(ctx, att)
}

// libraryDecide finishes an attempt without a call: a claim-fenced one,
// or one behind a member that did not end, is given back; one whose fence
// an earlier attempt left is given back blind (a Retry or a Defer: the
// engine keeps the fence); another is decided as a test decides it.
func (w *world) libraryDecide(a outbox.Action, claimFenced, inOrder bool) outbox.Result {
	if claimFenced || !inOrder {
		return outbox.Retry(errors.New("not run"))
	}
	if !a.WriteStartedAt.IsZero() {
		w.res.Ops["library blind on an earlier fence"]++
		if w.rng.IntN(3) == 0 {
			return outbox.Defer(randDur(w.rng, 0, 20*time.Second), errors.New("not run"))
		}
		return outbox.Retry(errors.New("not run"))
	}
	switch x := w.rng.IntN(10); {
	case x < 5:
		return outbox.Retry(errProvider)
	case x < 7:
		return outbox.Defer(randDur(w.rng, 0, 20*time.Second), errProvider)
	case x < 8:
		return outbox.Failed(outbox.StopRejected, errProvider)
	case x < 9 && a.Kind == kindRB:
		return outbox.Reread(randDur(w.rng, 0, 30*time.Second), errProvider)
	default:
		return outbox.Cancelled("", nil)
	}
}
