package sim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

// The steps issue 27 added (Options.Classic leaves them out): every entry
// point a user, an operator or a function calls, beyond the enqueue, the
// drainers, the reaper, retention and erasure the simulator always drove.
// Each records the Engine methods it calls (Result.Calls): a test requires
// every exported one to be driven.

// entrySteps are the new steps' choices.
func (w *world) entrySteps() []choice {
	cs := []choice{
		{5, "enqueue-items", w.callerStep},
		{2, "enqueue-items-send", w.callerCommitStep},
		{3, "enqueue-batch", w.batchStep},
		{4, "evidence", w.evidenceStep},
		{4, "read", w.readStep},
		{3, "bad-input", w.badInputStep},
		{1, "bad-kind", w.badKindStep},
		{2, "erase", w.eraseStep},
		{2, "admit-late", w.lateAdmitStep},
		{25, "drainer-burst", w.burstStep},
		{1, "ensure-table", w.ensureTableStep},
	}
	if w.opt.Repartition {
		cs = append(cs, choice{1, "partitions-set", w.partitionsSetStep})
	}
	return cs
}

// burstStep runs one drainer through several protocol points in a row: a
// drainer's calls take milliseconds, so most of its run comes between two
// other events (enqueues, seconds on the clock), and its provider calls
// meet the faults of the run, not only the quiet end.
func (w *world) burstStep() {
	if len(w.procs) == 0 {
		return
	}
	p := w.procs[w.rng.IntN(len(w.procs))]
	for n := 1 + w.rng.IntN(60); n > 0 && !p.done && !w.stopped; n-- {
		w.stepDrainer(p)
	}
}

// called counts a call of an exported Engine method.
func (w *world) called(method string) { w.res.Calls[method]++ }

// partitionsSetStep is the operator's live count change (`ferry
// partitions set N`, Engine.PartitionsSet): every engine takes the count
// within MapTTL whatever its Config.Partitions, until the next deploy's
// reaper applies its own.
func (w *world) partitionsSetStep() {
	h := w.hosts[w.rng.IntN(3)]
	n := 2 + w.prng.IntN(5)
	p := w.newProc("api", h)
	// ferry partitions --set says what the count costs before it asks.
	w.tracef(p, "partitions set %d: %s", n, outbox.PartitionCountCost(h.parts, n))
	w.called("PartitionsSet")
	if err := h.eng.PartitionsSet(p.ctx(), n); err != nil {
		w.tracef(p, "partitions set %d: error %s", n, shortErr(err))
		return
	}
	w.res.Ops["partitions set"]++
	w.tracef(p, "partitions set %d (the operator)", n)
	w.called("PartitionLayout")
	if l, err := h.eng.PartitionLayout(p.ctx()); err == nil {
		w.tracef(p, "partition layout: count %d live %d kept %d recorded %v", l.Count, l.Live, l.Kept, l.Recorded)
	}
}

// evidenceStep records a delivery event (the sesevents function,
// Engine.DeliveryRecord) about an email: live, ending, ended, gone or
// never there, now and then one recorded before. It runs as a coroutine,
// so an erasure may come between its reads and its write.
func (w *world) evidenceStep() {
	h := w.hosts[w.rng.IntN(3)]
	var id, label string
	var mails []*row
	for _, k := range sortedKeys(w.rows) {
		// Mostly emails the table holds; now and then one gone.
		if r := w.rows[k]; r.tok != nil && r.tok.kind == kindAMO && (r.gone == "" || w.rng.IntN(6) == 0) {
			mails = append(mails, r)
		}
	}
	switch {
	case len(mails) > 0 && w.rng.IntN(8) > 0:
		r := mails[w.rng.IntN(len(mails))]
		id, label = str(r.item, "id"), r.id
	case len(w.rows) > 0 && w.rng.IntN(2) == 0:
		r := w.rows[sortedKeys(w.rows)[w.rng.IntN(len(w.rows))]]
		id, label = str(r.item, "id"), r.id
	default:
		id, label = fmt.Sprintf("not-an-id-%d", w.rng.IntN(3)), "none"
	}
	if id == "" {
		return
	}
	ev := outbox.DeliveryEvent{Status: deliveryStatuses[w.rng.IntN(len(deliveryStatuses))],
		At: w.clk.Now().Add(-randDur(w.rng, 0, time.Minute)).Truncate(time.Second)}
	if w.srng.IntN(3) == 0 {
		ev.Detail = []string{"bounce: Permanent/General", "complaint: abuse", "delay: MailboxFull"}[w.srng.IntN(3)]
	}
	if old, ok := w.events[id]; ok && w.rng.IntN(3) == 0 {
		ev = old // providers deliver events at least once
	}
	w.events[id] = ev
	wrongRef := ""
	if r := w.rows[label]; r != nil && str(r.item, "ref") != "" && w.srng.IntN(8) == 0 {
		// An event about another message of the same recipient: it must
		// be refused (MISMATCH), recording nothing.
		wrongRef = str(r.item, "ref") + "-other"
		ev.Ref = wrongRef
	}
	p := w.newProc("evidence", h)
	w.startCoroutine(p, func() {
		w.called("DeliveryRecord")
		res, err := h.eng.DeliveryRecord(p.ctx(), id, ev)
		p.err = err
		if err == nil {
			w.res.Ops["evidence "+string(res.Outcome)]++
			w.tracef(p, "evidence %s about %s: %s (uncertain confirmed %v)", ev.Status, label, res.Outcome, res.UncertainConfirmed)
			if wrongRef != "" && res.Outcome == outbox.DeliveryRecorded {
				w.violate("evidence", []string{label}, "%s recorded an event about message %s for %s, whose message is another", p.name, wrongRef, label)
			}
			w.judgeEvidence(p, label, res)
		}
		if r := w.rows[label]; err == nil && (res.Outcome == outbox.DeliveryRecorded || res.Outcome == outbox.DeliveryErased) && r != nil && r.gone == "erased" && r.evWriter == p &&
			!failed(p) && !failedNear(r.goneBy, r.goneCall) && w.evidencePresent(label) {
			w.violate("evidence", []string{label}, "%s recorded evidence about %s, erased meanwhile, and left it", p.name, label)
		}
	})
	w.tracef(p, "evidence %s about %s", ev.Status, label)
	w.stepProc(p)
}

var deliveryStatuses = []outbox.DeliveryStatus{outbox.DeliverySent, outbox.DeliveryDelayed, outbox.DeliveryDelivered,
	outbox.DeliveryBounced, outbox.DeliveryComplained, outbox.DeliveryRejected}

// judgeEvidence holds DeliveryRecord's answer to the shadow: an UNCERTAIN
// action is confirmed at most once, and only an UNCERTAIN one.
func (w *world) judgeEvidence(p *proc, label string, res *outbox.DeliveryRecordResult) {
	if !res.UncertainConfirmed {
		return
	}
	if w.confirmed[label] {
		w.violate("evidence", []string{label}, "%s confirmed %s as gone out a second time", p.name, label)
		return
	}
	w.confirmed[label] = true
	if res.Action == nil || res.Action.State != outbox.StateUNCERTAIN {
		w.violate("evidence", []string{label}, "%s confirmed %s, which is not UNCERTAIN", p.name, label)
	}
}

// observeEvidence notes who wrote an action's delivery evidence.
func (w *world) observeEvidence(p *proc, pk, sk string, c ddblocal.Change) {
	part, _ := strconv.Atoi(strings.TrimPrefix(pk, "P#"))
	seq, _ := strconv.ParseInt(strings.TrimPrefix(sk, "V#"), 10, 64)
	if r := w.rows[rowKey(part, seq)]; r != nil && c.NewImage != nil && p != nil {
		r.evWriter = p
	}
}

// checkEvidenceLeft requires, at the end of a run, that no delivery
// evidence outlives its action (design.md §3.9: retention and erasure
// delete it with its action, TTL at the same time): a row whose action was
// erased or deleted by retention is left only when a process that had to
// delete it died or lost a call, and then only until its TTL.
func (w *world) checkEvidenceLeft() {
	var start map[string]types.AttributeValue
	for {
		out, err := w.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(w.cfg.Table), ExclusiveStartKey: start,
			FilterExpression: aws.String("begins_with(sk, :v)"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": avStr("V#")}})
		if err != nil {
			panic(fmt.Sprintf("sim: evidence scan: %v", err))
		}
		for _, it := range out.Items {
			part, _ := strconv.Atoi(strings.TrimPrefix(str(it, "pk"), "P#"))
			seq, _ := strconv.ParseInt(strings.TrimPrefix(str(it, "sk"), "V#"), 10, 64)
			id := rowKey(part, seq)
			r := w.rows[id]
			if r == nil || r.gone == "" || r.gone == "sealed" || num(it, "ttl") <= w.clk.Now().Unix() {
				continue
			}
			if failed(r.goneBy) || failed(r.evWriter) {
				w.res.Faults["evidence.left_after_a_failure"]++
				continue
			}
			w.violate("evidence", []string{id}, "%s's delivery evidence outlives it (%s by %v)", id, r.gone, r.goneBy)
			return
		}
		if out.LastEvaluatedKey == nil {
			return
		}
		start = out.LastEvaluatedKey
	}
}

// erasureSubject is whose erasure is asked: half the time the recipient of
// an email the table holds, one with delivery events if there is one (an
// erasure request comes from someone the service wrote to, often one who
// complained), else ws and subj as drawn.
func (w *world) erasureSubject(ws, subj string) (string, string) {
	if w.srng.IntN(2) == 0 {
		return ws, subj
	}
	var mails []*row
	for _, id := range sortedKeys(w.rows) {
		if r := w.rows[id]; r.gone == "" && r.tok != nil && r.tok.kind == kindAMO && r.tok.subj != "" {
			mails = append(mails, r)
		}
	}
	if len(mails) == 0 {
		return ws, subj
	}
	var heard []*row
	for _, r := range mails {
		if r.evWriter != nil {
			heard = append(heard, r)
		}
	}
	if len(heard) > 0 {
		mails = heard
	}
	r := mails[w.srng.IntN(len(mails))]
	return r.tok.ws, r.tok.subj
}

// checkErasedEvidence requires an erasure to leave no delivery evidence of
// the actions it erased (design.md §3.9), but where a call of it near the
// action's erasure failed: one that failed later deleted the evidence of
// those it erased before.
func (w *world) checkErasedEvidence(p *proc) {
	if p.killed {
		return
	}
	for _, id := range sortedKeys(w.rows) {
		if r := w.rows[id]; r.gone == "erased" && r.goneBy == p && !failedNear(p, r.goneCall) && !failed(r.evWriter) && w.evidencePresent(id) {
			w.violate("evidence", []string{id}, "%s erased %s and left its delivery evidence", p.name, id)
			return
		}
	}
}

// evidencePresent reads an action's evidence row straight from the table.
func (w *world) evidencePresent(id string) bool {
	part, seq, _ := strings.Cut(id, "-")
	n, _ := strconv.ParseInt(seq, 10, 64)
	return w.getItem("P#"+part, fmt.Sprintf("V#%020d", n)) != nil
}

// failedNear says whether p died or a call of it failed among call n and
// the few calls after it (an erasure deletes an action's evidence right
// after its row; call n itself may have written and then failed).
func failedNear(p *proc, n int) bool {
	if p.killed {
		return true
	}
	for _, c := range p.errCalls {
		if c >= n && c <= n+3 {
			return true
		}
	}
	return false
}

// failed says whether a process died or had a call fail.
func failed(p *proc) bool { return p != nil && (p.killed || p.errs > 0) }

// lateAdmitStep admits or cancels an action that started or ended
// already (a user's second click, an API call racing the drainer): the
// write's condition must refuse it with a *TransitionError, changing
// nothing (the feed's checkers see any change: ended-final, fencing).
func (w *world) lateAdmitStep() {
	rs := w.liveRows(func(*row) bool { return false })
	for _, id := range sortedKeys(w.rows) {
		r := w.rows[id]
		if r.gone == "" && r.tok != nil && r.tok.kind != kindFuture && !w.nearTTL(r) &&
			(state(r.item).Ended() || state(r.item) == outbox.StateEXECUTING) {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return
	}
	r := rs[w.rng.IntN(len(rs))]
	h := w.hosts[w.rng.IntN(3)]
	p := w.newProc("api", h)
	id, op := str(r.item, "id"), "admit"
	var err error
	if w.rng.IntN(2) == 0 {
		w.called("Admit")
		_, err = h.eng.Admit(p.ctx(), id)
	} else {
		op = "cancel"
		w.called("Cancel")
		_, err = h.eng.Cancel(p.ctx(), id)
	}
	var te *outbox.TransitionError
	switch {
	case errors.As(err, &te):
		w.res.Ops[op+" late refused"]++
		w.tracef(p, "%s %s (%s): refused (%s)", op, r.id, te.From, te.Error())
		// Admit leaves PROPOSED, cancel PROPOSED or ADMITTED: a refusal
		// names another state, and from an ended one the state machine
		// allows no move at all.
		if te.From == outbox.StatePROPOSED || op == "cancel" && te.From == outbox.StateADMITTED ||
			te.From.Ended() && outbox.CanTransition(te.From, te.To) {
			w.violate("state-machine", []string{r.id}, "%s: %s of %s refused from %s", p.name, op, r.id, te.From)
		}
	case err == nil && !w.stopped:
		w.violate("ended-final", []string{r.id}, "%s: %s of %s, which was %s, was accepted", p.name, op, r.id, state(r.item))
	default:
		w.tracef(p, "%s %s: %v", op, r.id, err)
	}
}

// badInputStep sends a request that must be refused with a clear error and
// change nothing (design.md §5: bad input changes nothing).
func (w *world) badInputStep() {
	h := w.hosts[w.rng.IntN(3)]
	p := w.newProc("api", h)
	before := w.feedSeq
	name, err := w.badRequest(p, h)
	w.readFeed(p)
	w.res.Ops["bad input"]++
	switch {
	case err == nil:
		w.violate("bad-input", nil, "%s: %s was accepted", p.name, name)
	case w.feedSeq != before:
		w.violate("bad-input", nil, "%s: %s was refused (%s) and changed the table", p.name, name, shortErr(err))
	default:
		if !clearRefusal(err) {
			// A fault may fail the request before it is judged: only an
			// unclear refusal of a request that reached the engine's
			// checks counts.
			w.tracef(p, "bad input %s: %s", name, shortErr(err))
			return
		}
		w.tracef(p, "bad input %s: refused (%s)", name, shortErr(err))
	}
}

// ensureTableStep runs EnsureTable against the table in use, as a deploy's
// table step or `ferry table create` run again does, with the run's
// faults: it fails or succeeds, and writes no item either way (an
// existing table keeps its layout; its TTL stays enabled).
func (w *world) ensureTableStep() {
	h := w.hosts[w.rng.IntN(len(w.hosts))]
	p := w.newProc("api", h)
	before := w.feedSeq
	w.called("EnsureTable")
	err := h.eng.EnsureTable(p.ctx())
	w.readFeed(p)
	w.res.Ops["ensure table"]++
	if w.feedSeq != before {
		w.violate("bad-input", nil, "%s: EnsureTable of the table in use wrote to it (%v)", p.name, err)
		return
	}
	if err != nil {
		w.tracef(p, "ensure table: error %s", shortErr(err))
		return
	}
	w.tracef(p, "ensure table: the table is as it was")
}
