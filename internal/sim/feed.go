package sim

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

// readFeed judges every change committed since the last look, as made by p.
func (w *world) readFeed(p *proc) {
	changed := false
	for _, c := range w.db.Changes(w.cfg.Table, w.feedSeq) {
		w.feedSeq = c.Seq + 1
		if w.ex != nil {
			w.ex.change(c)
		}
		w.observe(p, c)
		changed = true
	}
	if changed && !w.stopped {
		w.checkTracking()
	}
}

// checkTracking holds design.md §3.3's invariant after every call (a transaction's
// changes are all read by then): every EXECUTING action that is not in the
// due index has an entry in its partition's in-flight map, so that claims
// and the reaper find it once its lease ends.
func (w *world) checkTracking() {
	for _, id := range sortedKeys(w.outOfDue) {
		part, seq := parseRowKey(id)
		if !w.inflight[part][seq] {
			w.violate("tracking", []string{id}, "%s is EXECUTING, not in the due index and not in partition %d's in-flight map", id, part)
			return
		}
	}
}

// change is the feed position of the change being observed (it orders a
// claim and an erasure of the same row).
func (w *world) change() uint64 {
	return w.feedSeq
}

func (w *world) observe(p *proc, c ddblocal.Change) {
	w.stale.observe(c)
	pk, sk := str(c.Keys, "pk"), str(c.Keys, "sk")
	if sk == "FENCE" {
		if c.NewImage != nil {
			part, _ := strconv.Atoi(strings.TrimPrefix(pk, "P#"))
			fs := fenceState{cv: num(c.NewImage, "cv"), owner: str(c.NewImage, "owner")}
			inf := map[int64]bool{}
			if m, ok := c.NewImage["inf"].(*types.AttributeValueMemberM); ok {
				for k := range m.Value {
					seq, _ := strconv.ParseInt(k, 10, 64)
					inf[seq] = true
				}
			}
			w.inflight[part] = inf
			w.fences[part] = fs
			if p != nil && p.kind == "drainer" {
				w.fenceWritten(p, part, fs, c)
			}
		}
		return
	}
	if sk == "K" {
		if c.NewImage != nil && has(c.NewImage, "pl") {
			w.recCopy[pk] = str(c.NewImage, "id")
		} else {
			delete(w.recCopy, pk)
			delete(w.stripOwed, pk)
		}
	}
	if sk == "K" && c.NewImage != nil && has(c.NewImage, "ttl") && has(c.NewImage, "pl") {
		// A written-first idempotency record carries its action's payload
		// until the action ends (design.md §4.2); then, like the action, it
		// keeps none.
		w.violate("ended-shape", nil, "idempotency record %s has a TTL (its action ended) and still a payload", pk)
		return
	}
	if strings.HasPrefix(pk, "P#") && strings.HasPrefix(sk, "V#") {
		w.observeEvidence(p, pk, sk, c)
		return
	}
	if !strings.HasPrefix(pk, "P#") || !strings.HasPrefix(sk, "A#") {
		return
	}
	part, _ := strconv.Atoi(pk[2:])
	seq, _ := strconv.ParseInt(sk[2:], 10, 64)
	id := rowKey(part, seq)
	if c.NewImage != nil && state(c.NewImage) == outbox.StateADMITTED && (!has(c.NewImage, "due_pk") || !has(c.NewImage, "due_sk")) {
		// Audit: an ADMITTED action is found only through the due index
		// (design.md §3.3 drops in-flight entries of ADMITTED rows), so every
		// write that leaves a row ADMITTED must leave both due keys.
		w.violate("admitted-in-due", []string{id}, "%s is ADMITTED without due keys (written by %v)", id, p)
	}
	if c.NewImage != nil && state(c.NewImage) == outbox.StateEXECUTING && !has(c.NewImage, "due_pk") {
		w.outOfDue[id] = true
	} else {
		delete(w.outOfDue, id)
	}
	if p != nil && p.kind == "evidence" {
		// Evidence is kept beside its action, which it never changes
		// (design.md §3.9).
		w.violate("evidence", []string{id}, "%s, recording delivery evidence, wrote action %s", p.name, id)
		return
	}
	switch c.EventName {
	case ddblocal.EventInsert:
		w.onInsert(p, id, c.NewImage)
	case ddblocal.EventModify:
		w.onModify(p, id, c.OldImage, c.NewImage)
	case ddblocal.EventRemove:
		w.onRemove(p, id, c.OldImage, c.ByTTL)
	}
}

func (w *world) histf(r *row, p *proc, format string, args ...any) {
	if w.silent {
		return
	}
	who := "ttl"
	if p != nil {
		who = p.name
	}
	r.hist = append(r.hist, fmt.Sprintf("%04d %s %-14s %s", w.step, fmtDur(w.clk.Now().Sub(epoch0)), who, fmt.Sprintf(format, args...)))
}

func (w *world) onInsert(p *proc, id string, it ddblocal.Item) {
	r := &row{id: id, item: it, createdAt: w.clk.Now(), createdSeq: w.change()}
	if old := w.rows[id]; old != nil && old.gone == "" {
		w.violate("nothing-lost", []string{id}, "action %s was written over by a new action", id)
	}
	w.rows[id] = r
	w.histf(r, p, "created %s", rowState(it))
	if p != nil && (p.kind == "enqueue" || p.kind == "erase") && !has(it, "kind") && !has(it, "pl") && str(it, "sr") == "ERASED" {
		// A sealed slot (design.md §4.2): an abandoned or erased written-first
		// enqueue leaves a tombstone where its action would go, so that a
		// late put of the action fails. It holds nothing and reads as not
		// found; an acknowledged action's slot is never empty, so a seal
		// cannot cover one (the put is conditional).
		w.markGone(r, "sealed")
		w.res.Faults["x.sealed_slots"]++
		return
	}
	if p == nil || p.kind != "enqueue" {
		w.violate("fencing", []string{id}, "action row %s created by %s", id, p.name)
	}
	t := w.tokens[payloadToken(it)]
	if t == nil {
		w.violate("nothing-lost", []string{id}, "action %s carries no known token", id)
		return
	}
	r.tok = t
	if t.ikey != "" {
		for _, prev := range t.ids {
			if w.retained(prev) {
				w.violate("idempotency", []string{prev, id}, "token %s (idempotency key %s) has a second action %s while %s is retained", t.name, t.ikey, id, prev)
			}
		}
	}
	t.ids = append(t.ids, id)
	if ln := str(it, "lane"); ln != "" {
		k := str(it, "ws") + "/" + ln
		w.lanes[k] = append(w.lanes[k], id)
	}
}

func (w *world) onModify(p *proc, id string, old, nw ddblocal.Item) {
	r := w.rows[id]
	if r == nil {
		r = &row{id: id}
		w.rows[id] = r
	}
	r.item = nw
	w.histf(r, p, "%s", rowState(nw))
	if r.gone == "erased" && p.kind == "erase" && str(old, "sr") == "ERASED" {
		return // a lagging subject index showed the tombstone to a later erasure
	}
	if r.gone != "" {
		w.violate("nothing-lost", []string{id}, "%s changed %s after it was %s", p.name, id, r.gone)
		return
	}
	if p.kind == "erase" && str(nw, "sr") == "ERASED" && !has(nw, "pl") {
		// Erasure leaves a tombstone (keys and prev only) so the lane
		// behind it still waits for earlier members; it reads as not found.
		if str(old, "ws") != p.erasing[0] || str(old, "subj") != p.erasing[1] {
			w.violate("nothing-lost", []string{id}, "%s erased %s of another subject", p.name, id)
			return
		}
		w.markGone(r, "erased")
		r.goneBy, r.goneCall = p, p.ncalls
		return
	}
	ost, nst := state(old), state(nw)
	oep, nep := num(old, "ep"), num(nw, "ep")
	if ost.Ended() {
		w.violate("ended-final", []string{id}, "ended action %s changed (%s -> %s) by %s", id, ost, nst, p.name)
		return
	}
	if ost != nst && !outbox.CanTransition(ost, nst) {
		w.violate("state-machine", []string{id}, "%s moved %s from %s to %s", p.name, id, ost, nst)
		return
	}
	if nst.Ended() {
		w.checkEndedHook(p, id, nw)
	}
	if onlyLinks(old, nw) {
		// A lane relink (design.md §7.3) changes only the links of a live row:
		// any engine process may write it, whatever the row's kind.
		return
	}
	kind, variant := str(nw, "kind"), str(nw, "var")
	if !p.host.decodes(kind, variant) {
		w.violate("rolling-upgrade", []string{id}, "%s wrote action %s of kind %s variant %q, which its build does not decode", p.name, id, kind, variant)
		return
	}
	if p.makesDue && makesDue(old, nw) {
		// Drain (a user's test) brings a waiting action forward: it
		// neither claims, reaps, counts nor fails it.
		w.res.Faults["x.made_due"]++
		return
	}
	part, _ := strconv.Atoi(strings.TrimPrefix(str(nw, "pk"), "P#"))
	switch {
	case nep == oep+1:
		if p.kind != "drainer" || str(nw, "own") != p.owner || nst != outbox.StateEXECUTING {
			w.violate("fencing", []string{id}, "epoch of %s rose to %d by %s (owner %q, %s), not a drainer's claim", id, nep, p.name, str(nw, "own"), nst)
			return
		}
		if seq, _ := strconv.ParseInt(strings.TrimPrefix(str(nw, "sk"), "A#"), 10, 64); !p.entered[id] && w.inflight[part][seq] {
			// (Not in the map at all: the tracking checker reports it.)
			// ADR 0016: a claim's action update may land after its claimer
			// lost the fence, but only for an action its claimer recorded in
			// the in-flight map first, by a write made while it held the fence.
			fs := w.fences[part]
			w.violate("claim-fence", []string{id}, "%s claimed %s without recording it in partition %d's in-flight map under its fence (version %d; the fence is version %d held by %s)",
				p.name, id, part, p.fenceV, fs.cv, fs.owner)
			return
		}
		if r.claims == nil {
			r.claims = map[int64]claimRec{}
		}
		// A claim that wrote the fence (design.md §5) changed wsa; a reclaim of
		// another kind keeps whatever fence the row had.
		r.claims[nep] = claimRec{owner: p.owner, fenced: has(nw, "wsa") && !reflect.DeepEqual(old["wsa"], nw["wsa"]), at: w.change()}
		if r.tok != nil {
			for _, c := range r.tok.accepted {
				if c.p.pending[c] && c.flagged == "" {
					c.flagged = "its lease was lost: " + id + " was claimed again before the outcome was written"
				}
			}
		}
	case nep != oep:
		w.violate("fencing", []string{id}, "epoch of %s changed %d -> %d without a claim, by %s", id, oep, nep, p.name)
		return
	default:
		switch p.kind {
		case "drainer":
			if ost != outbox.StateEXECUTING || str(old, "own") != p.owner {
				w.violate("fencing", []string{id}, "stale write landed: %s changed %s (%s -> %s) while it is held by %q at epoch %d",
					p.name, id, ost, nst, str(old, "own"), oep)
				return
			}
		case "reaper":
			if ost == outbox.StateEXECUTING && msTime(old, "lx").After(p.host.now()) {
				w.violate("fencing", []string{id}, "reaper %s ended %s under a live lease", p.name, id)
				return
			}
		case "api":
			if ost != outbox.StatePROPOSED && ost != outbox.StateADMITTED {
				w.violate("fencing", []string{id}, "%s moved %s from %s", p.name, id, ost)
				return
			}
		default:
			w.violate("fencing", []string{id}, "unexpected write to %s by %s", id, p.name)
			return
		}
	}
	if p.kind == "drainer" && nep == oep {
		w.checkDeferral(p, r, old, nw)
	}
	if nst.Ended() {
		r.ended++
		r.endedBy = p
		r.endedSeq = w.change()
		// No TTL only on a held row, a link of its lane's chain (ADR
		// 0019): the onRemove check judges when it goes.
		if str(nw, "sr") == "" || has(nw, "pl") || (!has(nw, "ttl") && !has(nw, "prev")) {
			w.violate("ended-shape", []string{id}, "ended action %s has stop reason %q, payload %v, TTL %v", id, str(nw, "sr"), has(nw, "pl"), has(nw, "ttl"))
			return
		}
		if rpk := "K#" + str(nw, "ws") + "#" + str(nw, "ikey"); p != nil && str(nw, "ikey") != "" && w.recCopy[rpk] == str(nw, "id") {
			// (The record names its action by the row's id, not by the
			// simulator's partition-seq name.)
			// The record's copy goes right after the end lands (design.md
			// §3.5): the ending process owes it (settleStrips).
			w.stripOwed[rpk] = stripDebt{id: id, p: p, errs: p.errs}
		}
	}
	// A write of the process that made an accepted provider call settles it.
	for c := range p.pending {
		if c.tok == r.tok {
			delete(p.pending, c)
		}
	}
}

func (w *world) onRemove(p *proc, id string, old ddblocal.Item, byTTL bool) {
	r := w.rows[id]
	if r == nil {
		r = &row{id: id, item: old}
		w.rows[id] = r
	}
	if r.gone != "" {
		w.histf(r, p, "tombstone deleted")
		return
	}
	ended := state(old).Ended()
	why := ""
	switch {
	case byTTL && ended:
		why = "deleted by TTL"
	case p != nil && p.kind == "retain" && ended:
		why = "deleted by retention"
	case p != nil && p.kind == "erase" && str(old, "ws") == p.erasing[0] && str(old, "subj") == p.erasing[1]:
		why = "erased"
	}
	w.histf(r, p, "deleted (%s)", why)
	if why != "" && why != "erased" {
		w.checkChainCut(r, old, who(p))
	}
	if why == "" {
		who := "TTL"
		if p != nil {
			who = p.name
		}
		w.violate("nothing-lost", []string{id}, "action %s (%s) deleted by %s", id, state(old), who)
		why = "lost"
	}
	w.markGone(r, why)
	r.goneBy = p
	if p != nil {
		r.goneCall = p.ncalls
	}
}

// checkChainCut judges the deletion of an ended lane member (retention,
// TTL): while a live member names it as its predecessor and an earlier
// member of its lane is live, the row is a link of its lane's chain, and
// deleting it cuts the chain there (a claim's walk would stop at the
// missing row and let its successor run beside the earlier member:
// design.md §7.3, ADR 0006, ADR 0019).
func (w *world) checkChainCut(r *row, old ddblocal.Item, by string) {
	if r.tok == nil || r.tok.lane == "" || !has(old, "prev") {
		return
	}
	k := r.tok.ws + "/" + r.tok.lane
	seq := strings.TrimLeft(strings.TrimPrefix(str(old, "sk"), "A#"), "0")
	var succ, live string
	before := true
	for _, e := range w.lanes[k] {
		if e == r.id {
			before = false
			continue
		}
		er := w.rows[e]
		if er == nil || er.gone != "" || state(er.item).Ended() {
			continue
		}
		if before && live == "" {
			live = e
		}
		if !before && str(er.item, "pk") == str(old, "pk") && strconv.FormatInt(num(er.item, "prev"), 10) == seq {
			succ = e
		}
	}
	if succ != "" && live != "" {
		w.violate("lanes", w.lanes[k], "%s deleted %s while %s names it as its predecessor and the earlier %s of lane %s is %s: the lane's chain is cut",
			by, r.id, succ, live, k, state(w.rows[live].item))
	}
}

func who(p *proc) string {
	if p == nil {
		return "TTL"
	}
	return p.name
}

func (w *world) markGone(r *row, why string) {
	r.gone, r.goneAt = why, w.change()
	if r.tok != nil {
		for _, c := range r.tok.accepted {
			if c.id == r.id && c.flagged == "" {
				c.flagged = why
			}
		}
	}
}

// onlyLinks reports whether a write changed nothing but a row's lane link
// (prev).
func onlyLinks(old, nw ddblocal.Item) bool {
	changed := false
	for k, v := range nw {
		if k == "prev" {
			changed = changed || !reflect.DeepEqual(old[k], v)
			continue
		}
		if !reflect.DeepEqual(old[k], v) {
			return false
		}
	}
	for k := range old {
		if _, ok := nw[k]; !ok {
			if k != "prev" {
				return false
			}
			changed = true
		}
	}
	return changed
}

// makesDue reports whether a write only brought a waiting action forward
// (Engine.Drain's makeDue): an ADMITTED action's next attempt, or an
// unheld EXECUTING action's wait, and its due key.
func makesDue(old, nw ddblocal.Item) bool {
	allowed := map[string]bool{"nat": true, "due_sk": true}
	switch {
	case state(old) == outbox.StateADMITTED && state(nw) == outbox.StateADMITTED:
	case state(old) == outbox.StateEXECUTING && state(nw) == outbox.StateEXECUTING && !has(old, "own"):
		allowed = map[string]bool{"lx": true, "due_sk": true}
	default:
		return false
	}
	for k := range nw {
		if !allowed[k] && !reflect.DeepEqual(old[k], nw[k]) {
			return false
		}
	}
	for k := range old {
		if _, ok := nw[k]; !ok {
			return false
		}
	}
	return true
}

// retained says whether action row id is still retained: not gone and not
// past its TTL (reads treat an expired row as gone while DynamoDB's TTL
// lags, so its idempotency key may be used again).
//
// A held row (ended without a TTL: a lane's chain passes through it while
// an earlier member is live, ADR 0019) is retained for the retention
// period from its end, as if it had the TTL; after that it is only a link
// of its lane's chain and its key may be used again.
func (w *world) retained(id string) bool {
	pr := w.rows[id]
	if pr != nil && pr.gone == "" && state(pr.item).Ended() && !has(pr.item, "ttl") {
		return msTime(pr.item, "ea").Add(w.cfg.Retention).After(w.clk.Now().Add(-w.cfg.ClockSkew))
	}
	return pr != nil && pr.gone == "" &&
		!(has(pr.item, "ttl") && num(pr.item, "ttl") < w.clk.Now().Add(w.cfg.ClockSkew).Unix())
}

// checkDeferral keeps the row's run of deferrals from the holder's writes
// and holds it to the configured bounds (design.md §7.2): no
// action defers more than MaxDeferrals times in a row, none waits past
// MaxDeferTime from the first deferral of its run, and none ends
// DEFERRALS_EXHAUSTED before either bound. A deferral's write leaves
// EXECUTING for ADMITTED with the attempt given back, after a provider
// call of that epoch answered Defer (a release gives it back without a
// call). The checker counts those writes itself; only the end of a run
// (the row's streak attributes removed by another outcome) it takes from
// the row.
func (w *world) checkDeferral(p *proc, r *row, old, nw ddblocal.Item) {
	if state(old) != outbox.StateEXECUTING || has(nw, "own") {
		return // not the holder's outcome write (a lease renewal, the fence)
	}
	id, now := r.id, w.clk.Now()
	ep, answered := p.deferred[id]
	deferral := answered && ep == num(old, "ep") && state(nw) == outbox.StateADMITTED && num(nw, "att") == num(old, "att")-1
	switch {
	case deferral:
		r.defers++
		// The run starts when its first deferral was decided, which the
		// row records (dfs); a start later than the write landed would
		// stretch the bound, a start that moves would lift it.
		since := msTime(nw, "dfs")
		if !has(nw, "dfs") {
			// No start recorded: the run began when its first write
			// landed, as far as this checker knows.
			since = r.deferSince
			if r.defers == 1 {
				since = now
			}
		}
		if r.defers == 1 {
			if since.After(now.Add(2 * w.cfg.ClockSkew)) {
				w.violate("deferral-bound", []string{id}, "%s began %s's run of deferrals at %s, after its write landed", p.name, id, fmtDur(since.Sub(epoch0)))
				return
			}
			r.deferSince = since
		} else if !since.Equal(r.deferSince) {
			w.violate("deferral-bound", []string{id}, "%s moved the start of %s's run of deferrals from %s to %s", p.name, id, fmtDur(r.deferSince.Sub(epoch0)), fmtDur(since.Sub(epoch0)))
			return
		}
		if r.defers > w.cfg.MaxDeferrals {
			w.violate("deferral-bound", []string{id}, "%s deferred %s %d times in a row (MaxDeferrals %d)", p.name, id, r.defers, w.cfg.MaxDeferrals)
			return
		}
		if bound := r.deferSince.Add(w.cfg.MaxDeferTime); msTime(nw, "nat").After(bound) {
			w.violate("deferral-bound", []string{id}, "%s deferred %s until %s, past its run's bound %s (MaxDeferTime %s from %s)",
				p.name, id, fmtDur(msTime(nw, "nat").Sub(epoch0)), fmtDur(bound.Sub(epoch0)), w.cfg.MaxDeferTime, fmtDur(r.deferSince.Sub(epoch0)))
		}
	case str(nw, "sr") == string(outbox.StopDeferralsExhausted):
		early := r.defers < w.cfg.MaxDeferrals && (r.defers == 0 || now.Sub(r.deferSince) < w.cfg.MaxDeferTime-2*w.cfg.ClockSkew)
		if early {
			w.violate("deferral-bound", []string{id}, "%s ended %s DEFERRALS_EXHAUSTED after %d deferrals in %s", p.name, id, r.defers, now.Sub(r.deferSince))
		}
	case !has(nw, "dfn"):
		// The run ended with another answer (a retry, a reread): the row
		// says so. A release keeps the run, as an attempt that lost its
		// lease does.
		r.defers, r.deferSince = 0, time.Time{}
	}
}

// fenceSetsWritten notes the in-flight entries a drainer's fence write
// set, from its request: an entry set to the value it had already (a
// claim in the same millisecond as an earlier holder's, whose stale entry
// is left) is recorded under the fence all the same, though the feed shows
// no change.
func (w *world) fenceSetsWritten(p *proc, in *dynamodb.UpdateItemInput) {
	if p.kind != "drainer" {
		return
	}
	part, _ := strconv.Atoi(strings.TrimPrefix(str(in.Key, "pk"), "P#"))
	upd := aws.ToString(in.UpdateExpression)
	for n, v := range in.ExpressionAttributeNames {
		if strings.HasPrefix(n, "#s") && strings.Contains(upd, "#inf."+n+" = ") {
			seq, _ := strconv.ParseInt(v, 10, 64)
			if p.entered == nil {
				p.entered = map[string]bool{}
			}
			p.entered[rowKey(part, seq)] = true
		}
	}
}

// fenceWritten judges a drainer's write of a partition's fence row: every
// one of them (take, claim, release) lands only while the drainer holds the
// fence, so the row names it as the owner afterwards. The entries it set or
// changed are the actions it recorded in the in-flight map under its fence:
// the only ones it may claim (ADR 0016: entry first, action second).
func (w *world) fenceWritten(p *proc, part int, fs fenceState, c ddblocal.Change) {
	if fs.owner != p.owner && p.adoptOwner && fs.cv > num(c.OldImage, "cv") {
		// A take by a drainer whose owner the engine drew.
		p.owner = fs.owner
	}
	if fs.owner != p.owner {
		w.violate("claim-fence", nil, "%s wrote partition %d's fence row while version %d is held by %s", p.name, part, fs.cv, fs.owner)
		return
	}
	p.fenceV = fs.cv
	nm, _ := c.NewImage["inf"].(*types.AttributeValueMemberM)
	if nm == nil {
		return
	}
	var om map[string]types.AttributeValue
	if o, ok := c.OldImage["inf"].(*types.AttributeValueMemberM); ok {
		om = o.Value
	}
	for k, v := range nm.Value {
		if ov, ok := om[k]; ok && reflect.DeepEqual(ov, v) {
			continue
		}
		seq, _ := strconv.ParseInt(k, 10, 64)
		if p.entered == nil {
			p.entered = map[string]bool{}
		}
		p.entered[rowKey(part, seq)] = true
	}
}
