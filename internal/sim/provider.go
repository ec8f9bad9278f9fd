package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ferryhq/ferry/internal/outbox"
)

// The kinds of a run, one per delivery class, and one that only a newer
// build knows.
const (
	kindRB     = "ledger" // read-back
	kindIdem   = "hook"   // idempotent receiver, tagged variants v1 and v2
	kindAMO    = "mail"   // at most once
	kindFuture = "next"   // known to no build of the run
	kindSuffix = "tally"  // variant from the key's suffix: bad input only
)

// registry builds the kinds of one build, and returns its adapters too:
// old lacks kindAMO and the hook variant v2; future has kindFuture alone.
func (w *world) registry(old, future bool) (*outbox.Registry, []outbox.Adapter) {
	reg := outbox.NewRegistry()
	var all []outbox.Adapter
	add := func(a outbox.Adapter) {
		if err := reg.Register(a); err != nil {
			panic(err)
		}
		all = append(all, a)
	}
	if future {
		add(&adapter{w: w, spec: outbox.KindSpec{Name: kindFuture, Class: outbox.IdempotentReceiver}})
		return reg, all
	}
	add(&rbAdapter{adapter{w: w, spec: outbox.KindSpec{Name: kindRB, Class: outbox.ReadBack}}})
	vars := []string{"v1", "v2"}
	if old {
		vars = vars[:1]
	}
	hook := &adapter{w: w, spec: outbox.KindSpec{Name: kindIdem, Class: outbox.IdempotentReceiver, VariantMode: outbox.TaggedShape, TagProperty: "v", Variants: vars}}
	if w.opt.Classic {
		add(hook)
	} else {
		// Its end writes a row of the caller's table (EndedHook).
		add(&hookAdapter{*hook})
	}
	if !old && !w.opt.Classic {
		// A kind whose variant is its idempotency key's last segment;
		// only the bad-input steps enqueue it (each refused).
		add(&adapter{w: w, spec: outbox.KindSpec{Name: kindSuffix, Class: outbox.IdempotentReceiver, VariantMode: outbox.KeySuffix, Variants: []string{"v1"}}})
	}
	if !old {
		// Email-like: SES events become its delivery evidence, and each
		// attempt checks its recipient first (Preparer); not in the
		// classic runs.
		mail := &adapter{w: w, spec: outbox.KindSpec{Name: kindAMO, Class: outbox.AtMostOnce, DeliveryEvidence: !w.opt.Classic}}
		if w.opt.Classic {
			add(mail)
		} else {
			add(&prepAdapter{*mail})
		}
	}
	return reg, all
}

// adapter is a simulated provider: it records every call and answers what
// the seed draws.
type adapter struct {
	w    *world
	spec outbox.KindSpec
}

type rbAdapter struct{ adapter }

func (a *adapter) Spec() outbox.KindSpec { return a.spec }

func (a *adapter) Validate(_ string, payload json.RawMessage) error {
	return validPayload(a.spec.Class, payload)
}

// behaviour is what the provider does with one call.
type behaviour struct {
	name   string
	accept bool // the provider took the effect
	res    outbox.Result
	hang   bool
	panic  bool
}

var errProvider = errors.New("provider error")

func (w *world) drawBehaviour() behaviour {
	if w.quiet {
		return behaviour{name: "done", accept: true}
	}
	coin := w.rng.IntN(2) == 0
	x := w.rng.Float64()
	switch {
	case x < w.rt.hang:
		w.res.Faults["provider.hang"]++
		return behaviour{name: "hang", accept: coin, hang: true}
	case x < 0.55:
		return behaviour{name: "done", accept: true}
	case x < 0.63:
		return behaviour{name: "retry", res: outbox.Retry(errProvider)}
	case x < 0.68:
		wait := randDur(w.rng, 0, 20e9)
		if wait < 2*time.Second {
			wait = 0 // Retry-After: 0, no usable wait
		}
		return behaviour{name: "defer", res: outbox.Defer(wait, errProvider)}
	case x < 0.72:
		return behaviour{name: "failed", res: outbox.Failed(outbox.StopRejected, errProvider)}
	case x < 0.74:
		return behaviour{name: "cancelled", res: outbox.Cancelled("", nil)}
	case x < 0.78:
		return behaviour{name: "reread", accept: coin, res: outbox.Reread(randDur(w.rng, 0, 30e9), errProvider)}
	case x < 0.81:
		return behaviour{name: "uncertain", accept: coin, res: outbox.Uncertain(errProvider)}
	case x < 0.87:
		w.res.Faults["provider.error"]++
		return behaviour{name: "error", accept: coin, res: outbox.Result{Err: errProvider}}
	case x < 0.94:
		w.res.Faults["provider.fail_after_accept"]++
		return behaviour{name: "fail-after-accept", accept: true, res: outbox.Result{Err: errProvider}}
	default:
		w.res.Faults["provider.panic"]++
		return behaviour{name: "panic", accept: coin, panic: true}
	}
}

func (a *adapter) Execute(ctx context.Context, att *outbox.Attempt) outbox.Result {
	w := a.w
	p := procOf(ctx)
	if p == nil || p.killed {
		return outbox.Result{Err: errKilled}
	}
	t := w.tokens[tokenOf(att.Action.Payload)]
	if t == nil {
		w.violate("nothing-lost", []string{keyID(&att.Action)}, "provider call for %s with an unknown payload", keyID(&att.Action))
		return outbox.Result{Err: errProvider}
	}
	if w.ex != nil {
		// The call's start is a step of its own when schedules are
		// explored: it reads the lane's rows and the calls in flight.
		w.ex.pendingProvider(p, att.Action.Partition, "start")
		p.yield("provider start " + keyID(&att.Action))
		if p.killed {
			return outbox.Result{Err: errKilled}
		}
	}
	now := w.clk.Now()
	w.checkCallStart(p, t, att)
	deadline := w.callDeadline(ctx, keyID(&att.Action), now)
	b := w.drawBehaviour()
	if t.deferring && (!w.quiet || t.forever) {
		b = behaviour{name: "defer", res: outbox.Defer(t.deferWait, errProvider)}
	}
	if t.strands && !w.quiet && w.srng.IntN(2) == 0 {
		b = behaviour{name: "hang", accept: true, hang: true}
	}
	if a.spec.Class == outbox.ReadBack && w.readBackFails() {
		// The schedule's read-back provider takes the effect and then
		// fails or times out: the attempt cannot tell, a read-back must.
		w.res.Faults["fault.read_back_call_lost"]++
		b = behaviour{name: "fail-after-accept", accept: true, res: outbox.Result{Err: errProvider}}
		if w.srng.IntN(2) == 0 {
			b = behaviour{name: "hang", accept: true, hang: true}
		}
	}
	if a.spec.Class == outbox.ReadBack && t.loseFirst && !t.lostFirst && !w.quiet {
		// The schedule's token whose first call always loses its answer.
		t.lostFirst = true
		w.res.Faults["fault.read_back_first_call_lost"]++
		b = behaviour{name: "fail-after-accept", accept: true, res: outbox.Result{Err: errProvider}}
	}
	rec := &callRec{tok: t, p: p, id: keyID(&att.Action), start: now, deadline: deadline,
		accepted: b.accept, inflight: true}
	w.calls = append(w.calls, rec)
	t.execs++
	if a.spec.Class == outbox.AtMostOnce && (b.accept || (b.name != "retry" && b.name != "defer" && b.name != "failed" && b.name != "cancelled")) {
		t.maybeSent[keyID(&att.Action)] = true
	}
	w.tracef(p, "provider %s call %d for %s (%s attempt %d epoch %d): %s", a.spec.Class, t.execs, keyID(&att.Action), t.name, att.Number, att.Action.Epoch, b.name)
	if b.accept {
		w.accept(t, rec, a.spec.Class, keyID(&att.Action))
		if a.spec.Class == outbox.AtMostOnce && w.opt.Broken&BreakProviderTwice != 0 {
			second := *rec
			t.execs++
			w.accept(t, &second, a.spec.Class, keyID(&att.Action))
		}
	}
	if !b.accept && b.name != "retry" && b.name != "defer" && b.name != "failed" && b.name != "cancelled" {
		rec.flagged = "the provider answered " + b.name
	}
	if w.ex != nil {
		w.ex.pendingProvider(p, att.Action.Partition, "end")
	}
	p.yield("in provider call " + keyID(&att.Action))
	rec.inflight = false
	if p.killed {
		rec.flagged = "drainer killed during the provider call"
		return outbox.Result{Err: errKilled}
	}
	if b.hang {
		w.clk.Advance(randDur(w.rng, w.cfg.WriteMargin-w.cfg.ClockSkew, 2*w.cfg.Lease))
	}
	if w.clk.Now().After(rec.deadline) {
		if rec.flagged == "" && b.accept {
			rec.flagged = "the provider call outlived its deadline"
		}
		w.tracef(p, "provider call for %s ran past its deadline", keyID(&att.Action))
		return outbox.Result{Err: context.DeadlineExceeded}
	}
	if b.accept && b.name != "done" && rec.flagged == "" {
		rec.flagged = "the provider answered " + b.name + " after accepting"
	}
	if b.panic {
		panic("simulated provider panic")
	}
	if b.name == "defer" {
		p.deferred[keyID(&att.Action)] = att.Action.Epoch
	}
	if b.name == "done" {
		if a.spec.Class == outbox.IdempotentReceiver && w.opt.Broken&BreakIdemResend != 0 {
			return outbox.Retry(errProvider)
		}
		return outbox.Done("ref-" + t.name)
	}
	return b.res
}

// accept records that the provider took the effect, and judges duplicates.
func (w *world) accept(t *token, rec *callRec, class outbox.DeliveryClass, id string) {
	rec.accepted = true
	switch class {
	case outbox.ReadBack:
		if t.acceptedOf(id) > 0 {
			w.violate("exactly-once", t.ids, "read-back action %s (%s) delivered %d times", id, t.name, len(t.accepted)+1)
		}
		t.effectRef[id] = "ref-" + t.name
	case outbox.IdempotentReceiver:
		for _, c := range t.accepted {
			if c.id != id && w.retained(c.id) {
				w.violate("idempotent-duplicates", t.ids, "%s delivered with id %s while its action %s is retained", t.name, id, c.id)
				break
			}
			if c.id == id && c.flagged == "" {
				w.violate("idempotent-duplicates", t.ids, "%s (%s) delivered again with no injected ambiguity after its accepted call at %s",
					id, t.name, fmtDur(c.start.Sub(epoch0)))
				break
			}
		}
	case outbox.AtMostOnce:
		if t.acceptedOf(id) > 0 {
			w.violate("at-most-once", t.ids, "at-most-once action %s (%s) reached its provider %d times", id, t.name, len(t.accepted)+1)
		}
	}
	t.accepted = append(t.accepted, rec)
	rec.p.pending[rec] = true
	if class == outbox.IdempotentReceiver {
		w.res.Faults["x.idem_accepts"]++
	}
}

// checkCallStart judges the start of a provider call: the fence passed for
// this holder, the lane's earlier actions ended, no other action of the lane
// (nor this one) is in a provider call, and an at-most-once action was never
// sent before.
//
// The fence is the row's state at the call: EXECUTING under this holder's
// epoch with its fence set. An idempotent receiver claimed at the head of
// its lane group has its fence set by the claim (design.md §5): it is in flight
// from that claim on, so an erasure after the claim cannot recall its call.
// For it, and only for it, an erased row passes when the claim of this
// epoch, by this holder, set the fence and committed before the erasure.
func (w *world) checkCallStart(p *proc, t *token, att *outbox.Attempt) {
	id := keyID(&att.Action)
	r := w.rows[id]
	if r == nil {
		w.violate("fencing", []string{id}, "provider call for %s, which is not in the table", id)
		return
	}
	if r.gone != "" {
		cl, claimed := r.claims[att.Action.Epoch]
		switch {
		case w.spec(t.kind) != outbox.IdempotentReceiver || r.gone != "erased":
			w.violate("fencing", []string{id}, "provider call for %s, which is not in the table (%s)", id, r.gone)
		case !claimed || cl.owner != p.owner:
			w.violate("fencing", []string{id}, "provider call for erased %s by %s (epoch %d) with no claim of that epoch by it", id, p.name, att.Action.Epoch)
		case !cl.fenced:
			w.violate("fencing", []string{id}, "provider call for erased %s by %s (epoch %d): its claim did not set the fence, so its own fence must have failed", id, p.name, att.Action.Epoch)
		case cl.at >= r.goneAt:
			w.violate("fencing", []string{id}, "provider call for %s by %s (epoch %d), erased before that claim committed", id, p.name, att.Action.Epoch)
		default:
			w.res.Faults["x.erased_after_claim_call"]++
			w.tracef(p, "call for %s erased after its claim (design.md §5: in flight from the claim)", id)
			w.checkLaneAtCall(p, t, id)
			return
		}
		return
	}
	it := r.item
	if state(it) != outbox.StateEXECUTING || str(it, "own") != p.owner || num(it, "ep") != att.Action.Epoch || !has(it, "wsa") {
		w.violate("fencing", []string{id}, "provider call for %s by %s (epoch %d) without a passed fence: row is %s", id, p.name, att.Action.Epoch, rowState(it))
		return
	}
	if w.checkLaneAtCall(p, t, id) {
		return
	}
	if w.spec(t.kind) == outbox.AtMostOnce {
		if t.acceptedOf(id) > 0 || t.maybeSent[id] {
			w.violate("at-most-once", t.ids, "at-most-once action %s (%s) sent again after a call that may have delivered", id, t.name)
		}
	}
}

// checkLaneAtCall judges a provider call against its lane and the calls in
// flight, and reports whether it found a violation.
func (w *world) checkLaneAtCall(p *proc, t *token, id string) bool {
	now := w.clk.Now()
	if t.lane != "" {
		k := t.ws + "/" + t.lane
		ids := w.lanes[k]
		for _, e := range ids {
			if e == id {
				break
			}
			if er := w.rows[e]; er != nil && er.gone == "" && !state(er.item).Ended() {
				w.violate("lanes", w.lanes[k], "%s of lane %s started while the earlier %s is %s", id, k, e, state(er.item))
				return true
			}
		}
	}
	for _, c := range w.calls {
		// A call of a row erased since it started is judged as well: an
		// erasure recalls no call in flight (design.md §10), so the lane
		// behind it must still wait for it to end.
		if !c.inflight || !now.Before(c.deadline) {
			continue
		}
		if c.id == id {
			w.violate("fencing", []string{id}, "%s in two provider calls at once (%s and %s)", id, c.p.name, p.name)
			return true
		}
		if t.lane != "" && c.tok.lane == t.lane && c.tok.ws == t.ws {
			w.violate("lanes", []string{c.id, id}, "%s and %s of lane %s/%s in provider calls at once", c.id, id, t.ws, t.lane)
			return true
		}
	}
	kept := w.calls[:0]
	for _, c := range w.calls {
		if c.inflight && now.Before(c.deadline) {
			kept = append(kept, c)
		}
	}
	w.calls = kept
	return false
}

func (w *world) spec(kind string) outbox.DeliveryClass {
	switch kind {
	case kindRB:
		return outbox.ReadBack
	case kindAMO:
		return outbox.AtMostOnce
	}
	return outbox.IdempotentReceiver
}

func tokenOf(pl json.RawMessage) string {
	var p struct {
		T string `json:"t"`
	}
	_ = json.Unmarshal(pl, &p)
	return p.T
}

// ReadBack answers from what the provider holds; sometimes it cannot tell.
func (a *rbAdapter) ReadBack(ctx context.Context, att *outbox.Attempt) outbox.Result {
	w := a.w
	p := procOf(ctx)
	if p == nil || p.killed {
		return outbox.Result{Err: errKilled}
	}
	if w.ex != nil {
		w.ex.pendingProvider(p, att.Action.Partition, "read-back")
	}
	p.yield("in provider read-back " + keyID(&att.Action))
	if p.killed {
		return outbox.Result{Err: errKilled}
	}
	t := w.tokens[tokenOf(att.Action.Payload)]
	if t == nil {
		return outbox.Result{Err: errProvider}
	}
	if w.readBackFails() {
		w.res.Faults["fault.read_back_failed"]++
		if w.srng.IntN(2) == 0 {
			return outbox.Result{Err: errProvider}
		}
		return outbox.Reread(randDur(w.srng, 0, 30*time.Second), errProvider)
	}
	var res outbox.Result
	switch x := w.rng.Float64(); {
	case !w.quiet && x < 0.1:
		res = outbox.Reread(randDur(w.rng, 0, 30e9), fmt.Errorf("cannot tell yet"))
	case t.effectRef[keyID(&att.Action)] != "" && w.opt.Broken&BreakReadBackBlind == 0:
		res = outbox.Done(t.effectRef[keyID(&att.Action)])
	case !w.quiet && x < 0.15:
		res = outbox.Cancelled(outbox.StopAbsent, nil)
	}
	w.tracef(p, "provider read-back of %s (%s): %s", keyID(&att.Action), t.name, res.Outcome)
	return res
}

func (t *token) acceptedOf(id string) int {
	n := 0
	for _, c := range t.accepted {
		if c.id == id {
			n++
		}
	}
	return n
}

// callDeadline is when the engine's context ends the provider call, on the
// simulated clock: the engine sets a real timer just before the call, so the
// time left on it now is (to the microseconds spent since) what it gave.
// Invariant 7: the call must end before the lease, as another process's clock
// may read it, runs out.
func (w *world) callDeadline(ctx context.Context, id string, now time.Time) time.Time {
	dl, ok := ctx.Deadline()
	if !ok {
		w.violate("fence-margin", []string{id}, "provider call of %s without a deadline", id)
		return now.Add(w.cfg.WriteMargin)
	}
	left := time.Until(dl).Truncate(time.Millisecond) + time.Millisecond
	d := now.Add(left)
	if r := w.rows[id]; r != nil && r.gone == "" {
		lx := msTime(r.item, "lx")
		// One millisecond of slack: the timer's remainder was rounded up.
		if limit := lx.Add(-w.cfg.ClockSkew / 2); d.Add(-time.Millisecond).After(limit) {
			w.violate("fence-margin", []string{id}, "provider call of %s may run until %s, after its lease %s less the clock skew",
				id, fmtDur(d.Sub(epoch0)), fmtDur(lx.Sub(epoch0)))
		}
	}
	return d
}
