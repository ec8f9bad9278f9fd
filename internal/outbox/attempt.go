package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// attemptReport is what one attempt came to.
type attemptReport struct {
	Outcome Outcome
	Ended   bool // the action reached a terminal state
	Started bool // the adapter was called (prepare, read-back or execute)
	Fenced  bool // the write fence passed
	// Settled: the attempt's own outcome write landed, so the action is
	// ended, ADMITTED or back in the due index: its entry in the fence's
	// in-flight map may go (design.md §3.3).
	Settled bool
}

// safeCall runs an adapter method, turning a panic into an error result.
func safeCall(class DeliveryClass, fenced bool, f func() Result) (r Result) {
	defer func() {
		if v := recover(); v != nil {
			r = errorResult(class, fenced, &PanicError{Value: v})
		}
	}()
	return f()
}

// leaseAt is the lease a claim or a renewal at now gives, as the row stores
// it: whole milliseconds. The attempt keeps that one, so that its provider
// call's budget (callBudget) ends inside the lease every other drainer
// reads, not up to a millisecond after it.
func leaseAt(now time.Time, lease time.Duration) time.Time {
	return now.Add(lease).Truncate(time.Millisecond)
}

// leaseRenew extends a held claim's lease to now+Lease, for lane members
// that waited behind their head. It is refused once the claim is lost.
func (e *Engine) leaseRenew(ctx context.Context, a *Action) error {
	now := e.clk.Now().UTC()
	lx := leaseAt(now, e.cfg.Lease)
	c := condHeld(a.Epoch, a.Owner).and(cond{
		expr:  "#lx > :cnow",
		names: map[string]string{"#lx": attrLease},
		vals:  map[string]types.AttributeValue{":cnow": avMs(now.Add(e.cfg.ClockSkew)), ":lx": avMs(lx)},
	})
	_, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: e.table(), Key: actionKey(a.Partition, a.Seq),
		UpdateExpression:    aws.String("SET #lx = :lx"),
		ConditionExpression: aws.String(c.expr), ExpressionAttributeNames: c.names, ExpressionAttributeValues: c.vals,
	})
	if err != nil {
		return err
	}
	a.LeaseExpiresAt = lx
	return nil
}

// fenceWrite sets the write fence (write_started_at) in its own conditional
// write just before the provider call. It is refused when another claim took
// the action, when it was erased, or when less than WriteMargin of the lease
// is left.
func (e *Engine) fenceWrite(ctx context.Context, a *Action) error {
	now := e.clk.Now().UTC()
	c := condHeld(a.Epoch, a.Owner).and(cond{
		expr:  "#lx >= :margin",
		names: map[string]string{"#lx": attrLease, "#wsa": attrWrite},
		vals:  map[string]types.AttributeValue{":margin": avMs(now.Add(e.cfg.WriteMargin)), ":now": avMs(now)},
	})
	err := e.updateSettled(ctx, &dynamodb.UpdateItemInput{
		TableName: e.table(), Key: actionKey(a.Partition, a.Seq),
		UpdateExpression:    aws.String("SET #wsa = :now"),
		ConditionExpression: aws.String(c.expr), ExpressionAttributeNames: c.names, ExpressionAttributeValues: c.vals,
	}, func(it map[string]types.AttributeValue) bool {
		return rowIs(StateEXECUTING, a.Epoch, attrWrite, now)(it) && getS(it, attrOwner) == a.Owner
	})
	if err != nil {
		return err
	}
	a.WriteStartedAt = now
	return nil
}

// release gives back a claimed action that was not started (a lane member
// whose head did not end, or the drainer's deadline): the attempt does not
// count. One whose write fence is set stays EXECUTING with its lease ended,
// so the next claim reads back first; but a fence its own claim set
// (design.md §5) goes with the release, since the provider was not called — unless
// the claim was a reclaim: an earlier claim's attempt may have called, and
// the fence is the only proof of it left, so it stays (EXECUTING, lease
// ended) and the action is never taken for one that did not start.
// Either way the row goes back into the due index (design.md §3.3). settled
// reports that the write landed.
func (e *Engine) release(ctx context.Context, a *Action) (settled bool, err error) {
	now := e.clk.Now().UTC()
	var upd string
	c := condHeld(a.Epoch, a.Owner).and(cond{
		names: map[string]string{"#lx": attrLease, "#dpk": attrDuePK, "#dsk": attrDueSK},
		vals:  map[string]types.AttributeValue{":dpk": avS(duePK(a.Partition))},
	})
	if a.WriteStartedAt.IsZero() || (a.claim.fenced && !a.claim.reclaimed) {
		// Back where it was due when claimed (the index's order is the
		// claims' order, design.md §11 (invariant 5)).
		at := a.NextAttemptAt
		if at.IsZero() {
			at = now
		}
		upd = "SET #st = :adm, #att = #att - :one, #nat = :nat, #dpk = :dpk, #dsk = :dsk REMOVE #lx, #own"
		c.names["#st"], c.names["#att"], c.names["#nat"] = attrState, attrAttempt, attrNext
		c.vals[":adm"], c.vals[":one"], c.vals[":nat"] = avS(string(StateADMITTED)), avN(1), avMs(at)
		c.vals[":dsk"] = avS(timeSK(at, a.Seq))
		if a.claim.fenced {
			upd += ", #wsa, #wsh"
			c = c.and(cond{expr: "#wsa = :mywsa", names: map[string]string{"#wsa": attrWrite, "#wsh": attrWriteHead},
				vals: map[string]types.AttributeValue{":mywsa": avMs(a.WriteStartedAt)}})
		} else {
			c = c.and(cond{expr: "attribute_not_exists(#wsa)", names: map[string]string{"#wsa": attrWrite}})
		}
	} else {
		// Due at its lease expiry, now.
		upd = "SET #lx = :now, #dpk = :dpk, #dsk = :dsk REMOVE #own"
		c.vals[":now"], c.vals[":dsk"] = avMs(now), avS(timeSK(now, a.Seq))
	}
	_, err = e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: e.table(), Key: actionKey(a.Partition, a.Seq), UpdateExpression: aws.String(upd),
		ConditionExpression: aws.String(c.expr), ExpressionAttributeNames: c.names, ExpressionAttributeValues: c.vals,
	})
	if err != nil && !isCondFailed(err) {
		return false, fmt.Errorf("error releasing action %s: %w", a.Label(), err)
	}
	return err == nil, nil
}

// runAttempt carries out one attempt of a claimed action: read it (payload,
// still ours?), renew its lease if it waited, read back when an earlier
// attempt may have written, prepare, set the write fence, execute within
// the margin, and write the outcome conditioned on the epoch and owner.
//
// row, when not nil, is the row as the batch's eventually consistent read
// found it (readClaimed); it stands in for the consistent read when
// usableClaimedRow accepts it.
func (e *Engine) runAttempt(ctx context.Context, claimed Action, row map[string]types.AttributeValue) (attemptReport, error) {
	a, ok, err := e.attemptRow(ctx, claimed, row)
	if err != nil || !ok {
		return attemptReport{Outcome: OutcomeAbandoned}, err
	}
	ad, ok := e.reg.Decodes(a.Kind, a.Variant)
	if !ok {
		settled, err := e.release(ctx, &a)
		return attemptReport{Outcome: OutcomeAbandoned, Settled: settled}, err
	}
	held, err := e.leaseForCall(ctx, &a)
	if err != nil {
		return attemptReport{}, err
	}
	if !held {
		return attemptReport{Outcome: OutcomeAbandoned}, nil
	}
	e.obs.AttemptStarted(&a)
	st := &attemptRun{ad: ad, spec: ad.Spec(), a: &a, rep: attemptReport{Started: true}}
	mayHaveWritten := !a.WriteStartedAt.IsZero()
	if a.claim.fenced {
		// The fence is this claim's own: only an earlier claim's attempt
		// may have written.
		mayHaveWritten = a.claim.reclaimed
	}
	st.att = &Attempt{Action: a, Number: a.Attempt, MayHaveWritten: mayHaveWritten}

	res, readBack := e.readBackFirst(ctx, st)
	if res.Outcome == OutcomeNone {
		readBack = false
		res = prepareCall(ctx, st)
	}
	switch {
	case res.Outcome == OutcomeNone:
		var done bool
		if res, done, err = e.fenceAndCall(ctx, st); done || err != nil {
			return st.rep, err
		}
	case !readBack:
		res = normalizeResult(st.spec.Class, false, res)
	case res.Outcome == OutcomeReread:
		res = normalizeResult(st.spec.Class, true, res)
	}
	st.rep.Outcome = res.Outcome
	d := e.decideAttempt(&a, res)
	// runGroup starts a member only after the one before it ended.
	ended, refused, err := e.applyDecision(ctx, &a, d, res, true)
	st.rep.Ended = ended
	st.rep.Settled = d.Write && !refused && err == nil
	return st.rep, err
}

// attemptRun is one attempt in progress: the kind's adapter and spec, the
// action as the attempt holds it, what the adapter sees, and the report.
type attemptRun struct {
	ad   Adapter
	spec KindSpec
	a    *Action
	att  *Attempt
	rep  attemptReport
}

// attemptRow is the claimed action as the attempt runs it: from the
// batch's read when usable (usableClaimedRow), else read consistently. ok
// is false when the action is gone or no longer held by this claim.
func (e *Engine) attemptRow(ctx context.Context, claimed Action, row map[string]types.AttributeValue) (Action, bool, error) {
	a, ok := usableClaimedRow(row, &claimed, e.clk.Now())
	if !ok {
		it, err := e.getRow(ctx, claimed.Partition, claimed.Seq)
		if err != nil {
			return Action{}, false, nil //nolint:nilerr // erased: nothing to do
		}
		a, _ = decodeAction(it)
		if a.State != StateEXECUTING || a.Epoch != claimed.Epoch || a.Owner != claimed.Owner {
			return Action{}, false, nil
		}
		a.claim.fenced = claimed.claim.fenced && a.WriteStartedAt.Equal(claimed.WriteStartedAt)
		a.claim.reclaimed = claimed.claim.reclaimed
	}
	// What the claim and the drainer know beyond the row.
	fenced := a.claim.fenced
	a.claim = claimed.claim
	a.claim.fenced = fenced
	return a, true, nil
}

// leaseForCall renews the lease when less than the write margin (and the
// skew bound) is left; held is false when the renewal was refused (another
// holder has the action).
func (e *Engine) leaseForCall(ctx context.Context, a *Action) (held bool, err error) {
	if a.LeaseExpiresAt.Sub(e.clk.Now()) >= e.cfg.WriteMargin+e.cfg.ClockSkew {
		return true, nil
	}
	if err := e.leaseRenew(ctx, a); err != nil {
		if isCondFailed(err) {
			e.obs.FenceRefused(a)
			return false, nil
		}
		return false, fmt.Errorf("error renewing lease of %s: %w", a.Label(), err)
	}
	return true, nil
}

// readBackFirst reads back an attempt of a read-back kind that may have
// written (design.md §6 step 3); readBack says it did.
func (e *Engine) readBackFirst(ctx context.Context, st *attemptRun) (Result, bool) {
	if !st.att.MayHaveWritten || st.spec.Class != ReadBack {
		return Result{}, false
	}
	rb, ok := st.ad.(ReadBacker)
	if !ok {
		return Result{Outcome: OutcomeUncertain, Err: fmt.Errorf("kind %s reads back but its adapter has no ReadBack", st.a.Kind)}, true
	}
	res := safeCall(st.spec.Class, true, func() Result { return rb.ReadBack(ctx, st.att) })
	if res.Outcome == OutcomeNone && res.Err != nil {
		// The read-back failed: the effect may still exist.
		res = Result{Outcome: OutcomeReread, Err: res.Err}
	}
	if res.Outcome == OutcomeCancelled && res.StopReason == "" {
		res.StopReason = StopAbsent
	}
	return res, true
}

// prepareCall runs the kind's Prepare, when it has one; an error is a Retry.
func prepareCall(ctx context.Context, st *attemptRun) Result {
	pr, ok := st.ad.(Preparer)
	if !ok {
		return Result{}
	}
	res := safeCall(st.spec.Class, false, func() Result { return pr.Prepare(ctx, st.att) })
	if res.Outcome == OutcomeNone && res.Err != nil {
		res = Result{Outcome: OutcomeRetry, Err: res.Err}
	}
	return res
}

// fenceAndCall passes the write fence (design.md §6 step 4) and calls the
// adapter within the call budget (step 5). done says the attempt is over
// without an outcome write: the fence was refused, or a claim-fenced head
// was given back.
func (e *Engine) fenceAndCall(ctx context.Context, st *attemptRun) (res Result, done bool, err error) {
	a := st.a
	callable := true
	if a.claim.fenced {
		if callable, done, err = e.claimFenceHolds(ctx, st); done || err != nil {
			return Result{}, done, err
		}
	} else if err := e.fenceWrite(ctx, a); err != nil {
		if isCondFailed(err) {
			e.obs.FenceRefused(a)
			st.rep.Outcome = OutcomeAbandoned
			return Result{}, true, nil
		}
		return Result{}, true, fmt.Errorf("error setting write fence of %s: %w", a.ID, err)
	}
	st.rep.Fenced = true
	st.att.Action.WriteStartedAt = a.WriteStartedAt
	if budget := e.callBudget(a); budget > 0 && callable {
		xctx, cancel := context.WithTimeout(ctx, budget)
		res = safeCall(st.spec.Class, true, func() Result { return st.ad.Execute(xctx, st.att) })
		cancel()
		return normalizeResult(st.spec.Class, true, res), false, nil
	}
	if a.claim.fenced && a.claim.reclaimed {
		// Set by a reclaim, the fence also stands for the earlier claim's
		// attempt, which may have called: it must not go (design.md §7.2).
		// The lease ends after the backoff with the fence kept, as after a
		// Reread, and the last attempt ends UNCERTAIN, never FAILED.
		return Result{Outcome: OutcomeReread, Err: errNoCallBudget}, false, nil
	}
	// The fence landed (or, set by the claim, was still there after
	// Prepare) with no lease left to call within: nothing was sent, so the
	// fence goes with a retry. It counts, so a Prepare that always overruns
	// the lease ends the action in the end.
	return Result{Outcome: OutcomeRetry, Err: errNoCallBudget}, false, nil
}

// claimFenceHolds checks the other guard of a fence the claim set (design.md
// §5): enough lease left for the call, on our own clock with the skew bound
// on top (only the holder extends the lease and nobody claims before it
// ends; Prepare may have used it up; a member's lease was renewed while it
// waited). done: the claimer's lease on the claim fence could end during
// the call (see nearFenceEnd) — for a member behind a head, and it could
// not take that lease longer (fenceCovers, ADR 0015) — so the action is
// given back, uncounted.
func (e *Engine) claimFenceHolds(ctx context.Context, st *attemptRun) (callable, done bool, err error) {
	a := st.a
	now := e.clk.Now()
	if a.LeaseExpiresAt.Sub(now) < e.cfg.WriteMargin+e.cfg.ClockSkew {
		e.obs.FenceRefused(a)
		return false, false, nil
	}
	var near bool
	if a.claim.head != 0 && a.claim.hold != nil {
		near = !e.fenceCovers(ctx, a.claim.hold, a.claim.deadline)
	} else {
		near = !a.claim.fenceUntil.IsZero() && now.Add(e.cfg.WriteMargin).After(a.claim.fenceUntil)
	}
	if near {
		st.rep.Outcome = OutcomeAbandoned
		settled, err := e.release(ctx, a)
		st.rep.Settled = settled
		return false, true, err
	}
	return true, false, nil
}

// decideAttempt maps an attempt's result to its write: decide, and for a
// Defer outcome decideDeferral with the row's streak and the configured
// bounds.
func (e *Engine) decideAttempt(a *Action, res Result) decision {
	backoff := time.Duration(e.backoff(a.Attempt))
	if res.Outcome != OutcomeDefer {
		return decide(res, a.Attempt, a.MaxAttempts, backoff)
	}
	if res.Wait <= 0 {
		// No usable wait: back off by the deferral's number in its streak.
		backoff = time.Duration(e.backoff(a.Deferrals + 1))
	}
	return decideDeferral(res, deferStreak{Count: a.Deferrals, Since: a.DeferredSince},
		deferBounds{Max: e.cfg.MaxDeferrals, For: e.cfg.MaxDeferTime}, e.clk.Now().UTC(), backoff)
}

// condDeferral is the condition a Defer outcome's write puts on the row:
// below both bounds to defer again, at or past one of them to end.
func condDeferral(w *deferralWrite) cond {
	c := cond{
		names: map[string]string{"#dfn": attrDefers, "#dfs": attrDeferAt},
		vals:  map[string]types.AttributeValue{":dmax": avN(int64(w.Max)), ":dcut": avMs(w.Cutoff)},
	}
	if w.Exhausted {
		c.expr = "#dfn >= :dmax OR #dfs <= :dcut"
	} else {
		c.expr = "(attribute_not_exists(#dfn) OR #dfn < :dmax) AND (attribute_not_exists(#dfs) OR #dfs > :dcut)"
	}
	return c
}

// applyDecision writes what an attempt decided, guarded by the claim's
// epoch and owner.
// inOrder says every earlier member of the action's lane has ended (see
// endParams.InOrder).
func (e *Engine) applyDecision(ctx context.Context, a *Action, d decision, res Result, inOrder bool) (ended, refused bool, err error) {
	if !d.Write {
		return false, false, nil
	}
	if d.To.Ended() {
		return e.applyEnd(ctx, a, d, res, inOrder)
	}
	at := e.clk.Now().UTC().Add(d.Wait)
	c := condHeld(a.Epoch, a.Owner).and(cond{
		names: map[string]string{"#lx": attrLease, "#own": attrOwner},
		vals:  map[string]types.AttributeValue{":at": avMs(at)},
	})
	var upd string
	settled := rowIs(StateADMITTED, a.Epoch, attrNext, at)
	switch d.To {
	case StateADMITTED:
		upd, c = backToAdmitted(a, d, at, c)
	case StateEXECUTING:
		upd, c = rereadWait(a, at, c)
		settled = rowIs(StateEXECUTING, a.Epoch, attrLease, at)
	default:
		return false, false, fmt.Errorf("outbox: no write for decision to %s", d.To)
	}
	err = e.updateSettled(ctx, &dynamodb.UpdateItemInput{
		TableName: e.table(), Key: actionKey(a.Partition, a.Seq), UpdateExpression: aws.String(upd),
		ConditionExpression: aws.String(c.expr), ExpressionAttributeNames: c.names, ExpressionAttributeValues: c.vals,
	}, settled)
	if err != nil {
		if isCondFailed(err) {
			e.obs.FenceRefused(a)
			return false, true, nil
		}
		return false, false, fmt.Errorf("error writing %s outcome of %s: %w", res.Outcome, a.ID, err)
	}
	e.attemptFinished(a, res, d.To)
	return false, false, nil
}

// attemptFinished tells an AttemptObserver how an attempt went.
func (e *Engine) attemptFinished(a *Action, res Result, to State) {
	if o, ok := e.obs.(AttemptObserver); ok {
		o.AttemptFinished(a, res, to)
	}
}

// applyEnd ends the action as decided, guarded by the claim (and the
// deferral bounds, when a deferral ends it).
func (e *Engine) applyEnd(ctx context.Context, a *Action, d decision, res Result, inOrder bool) (ended, refused bool, err error) {
	c := condHeld(a.Epoch, a.Owner)
	if d.Deferral != nil {
		c = c.and(condDeferral(d.Deferral))
	}
	_, err = e.end(ctx, a, endParams{To: d.To, Reason: d.Reason, Ref: res.ReadbackRef, Cond: c, Result: res, InOrder: inOrder})
	if err != nil {
		if isCondFailed(err) {
			e.obs.FenceRefused(a)
			return false, true, nil
		}
		return false, false, err
	}
	e.attemptFinished(a, res, d.To)
	return true, false, nil
}

// backToAdmitted is the write of a Retry or Defer (design.md §7.2): ADMITTED
// again at its next due time in the due index (a claim took it out: one
// index insert), so claims do not read past rows that wait; the fence goes.
// A Defer gives the attempt back and grows its streak of deferrals within
// their bounds (the condition); any other answer ends the streak.
func backToAdmitted(a *Action, d decision, at time.Time, c cond) (string, cond) {
	upd := "SET #st = :adm, #nat = :at, #dpk = :dpk, #dsk = :dsk"
	c.names["#st"], c.names["#nat"], c.names["#wsa"], c.names["#dsk"] = attrState, attrNext, attrWrite, attrDueSK
	c.names["#wsh"] = attrWriteHead
	c.names["#dpk"], c.vals[":dpk"] = attrDuePK, avS(duePK(a.Partition))
	c.vals[":adm"], c.vals[":dsk"] = avS(string(StateADMITTED)), avS(timeSK(at, a.Seq))
	if d.Uncount {
		upd += ", #att = #att - :one"
		c.names["#att"] = attrAttempt
		c.vals[":one"] = avN(1)
	}
	if d.Deferral != nil {
		upd += ", #dfn = if_not_exists(#dfn, :zero) + :one, #dfs = if_not_exists(#dfs, :dsince)"
		c = c.and(condDeferral(d.Deferral))
		c.vals[":zero"], c.vals[":one"], c.vals[":dsince"] = avN(0), avN(1), avMs(d.Deferral.Since)
		return upd + " REMOVE #lx, #own, #wsa, #wsh", c
	}
	c.names["#dfn"], c.names["#dfs"] = attrDefers, attrDeferAt
	return upd + " REMOVE #lx, #own, #wsa, #wsh, #dfn, #dfs", c
}

// rereadWait is the write of a Reread (design.md §7.2): the fence stays; the
// lease ends after the wait and the next claim reads back first. The row
// re-enters the due index at its lease expiry, where claims and the reaper
// find it (EXECUTING), at the end of its wait so that a storm of rereads
// does not sit in front of claimable work.
func rereadWait(a *Action, at time.Time, c cond) (string, cond) {
	c.names["#dsk"], c.names["#dpk"] = attrDueSK, attrDuePK
	c.names["#dfn"], c.names["#dfs"] = attrDefers, attrDeferAt
	c.vals[":dsk"], c.vals[":dpk"] = avS(timeSK(at, a.Seq)), avS(duePK(a.Partition))
	// The attempt started, so every earlier member of the lane had ended:
	// a fence the claim set behind a head now stands for a start in lane
	// order (`wsh` goes, ADR 0015).
	c.names["#wsh"] = attrWriteHead
	return "SET #lx = :at, #dpk = :dpk, #dsk = :dsk REMOVE #own, #dfn, #dfs, #wsh", c
}

// ErrNotHeld is returned by AttemptFinish when the write's condition refused
// it: the action is not EXECUTING under that epoch and owner (another claim
// took it, it ended, or it was erased).
var ErrNotHeld = errors.New("outbox: claim not held")

// AttemptFinish writes the outcome of an attempt of a claimed action, exactly
// as the drainer does after Execute: held must carry the claim's epoch and
// owner (as Claim returned it). It is for callers that run attempts
// themselves (tests, custom drivers). The write is refused with ErrNotHeld
// when the claim is no longer held. A Retry or Defer of an action whose
// write fence an earlier attempt left (held.WriteStartedAt set by no claim
// of the caller's: Claim reclaimed it) proves nothing about that attempt's
// call: it is written as the engine writes an attempt that could not read
// back (unprovenRetry: a read-back kind stays EXECUTING with its fence and
// is read back first; the last attempt ends UNCERTAIN).
func (e *Engine) AttemptFinish(ctx context.Context, held Action, res Result) (*Action, error) {
	if res.Outcome <= OutcomeNone || res.Outcome >= OutcomeAbandoned {
		return nil, &ValidationError{Field: "outcome", Message: fmt.Sprintf("outcome %s cannot be written", res.Outcome)}
	}
	it, err := e.getRow(ctx, held.Partition, held.Seq)
	if err != nil {
		return nil, err
	}
	cur, _ := decodeAction(it)
	// The write is guarded by the epoch and owner the caller holds, not by
	// what was just read.
	cur.Epoch, cur.Owner = held.Epoch, held.Owner
	res = e.unprovenRetry(&cur, &held, res)
	d := e.decideAttempt(&cur, res)
	// A caller may finish a lane member claimed behind a head that has not
	// ended; only a set write fence proves the lane before it ended, and not
	// one a claim set behind a head (`wsh`, ADR 0015).
	inOrder := !cur.WriteStartedAt.IsZero() && getN(it, attrWriteHead) == 0
	_, refused, err := e.applyDecision(ctx, &cur, d, res, inOrder)
	if err != nil {
		return nil, err
	}
	if refused {
		return nil, fmt.Errorf("action %s epoch %d owner %q: %w", cur.ID, held.Epoch, held.Owner, ErrNotHeld)
	}
	return e.ActionGet(ctx, cur.ID)
}

// unprovenRetry is what AttemptFinish writes for a caller's Retry or Defer
// of an action whose write fence an earlier attempt left: that attempt may
// have called the provider, and only a read-back proves the effect absent
// (design.md §7.2), which the caller's answer does not. It is what the
// engine's own attempt writes when it cannot read back: a Reread for a kind
// that reads back (the fence stays, the next attempt reads back first; at
// the last attempt UNCERTAIN), UNCERTAIN for an at-most-once kind; an
// idempotent receiver may be sent again: its answer stands. A fence the
// caller's own
// claim set (Claim, design.md §5) was set when nothing had been sent: the
// answer stands.
func (e *Engine) unprovenRetry(cur, held *Action, res Result) Result {
	if (res.Outcome != OutcomeRetry && res.Outcome != OutcomeDefer) || cur.WriteStartedAt.IsZero() {
		return res
	}
	if held.claim.fenced && !held.claim.reclaimed && cur.WriteStartedAt.Equal(held.WriteStartedAt) {
		return res
	}
	class := ReadBack // a kind this build does not know: the fence stays
	if ad, ok := e.reg.Lookup(cur.Kind); ok {
		class = ad.Spec().Class
	}
	if class == IdempotentReceiver {
		return res
	}
	return normalizeResult(class, true, Result{Outcome: OutcomeReread, Wait: res.Wait, Err: res.Err})
}

// errNoCallBudget is the cause recorded when the write fence landed too late
// to call the provider within the lease.
var errNoCallBudget = errors.New("write fence landed with no lease left for the provider call")

// callBudget is how long the provider call may run: the write margin less
// the clock skew, and never past the lease as another drainer's clock may
// read it. The fence's margin condition was evaluated with the time the
// request was built; a slow request can land with less lease left, so the
// budget is taken again from the lease once the fence has landed.
func (e *Engine) callBudget(a *Action) time.Duration {
	budget := e.cfg.WriteMargin - e.cfg.ClockSkew
	if left := a.LeaseExpiresAt.Sub(e.clk.Now()) - e.cfg.ClockSkew; left < budget {
		budget = max(left, 0)
	}
	return budget
}
