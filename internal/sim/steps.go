package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

func randDur(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

// decide is the run's fault plan: every DynamoDB call of a process may fail
// before or after committing, be throttled, conflict, or be slow.
func (w *world) decide(c ddblocal.Call) ddblocal.Fault {
	p := w.cur
	if w.ex != nil {
		return w.ex.decide(p, c)
	}
	if f := w.forced; f != nil && p != nil {
		// A schedule's fault for this call (schedules.go).
		w.forced = nil
		w.tracef(p, "  fault: %s conflict (schedule)", c.Op)
		for rec := range p.pending {
			if rec.flagged == "" {
				rec.flagged = "DynamoDB fault conflict before the outcome was written"
			}
		}
		return *f
	}
	if !w.faultsOn || w.checking || p == nil || p.kind == "setup" {
		return ddblocal.Fault{}
	}
	var f ddblocal.Fault
	r := w.rt
	x := w.rng.Float64()
	name := ""
	switch {
	case x < r.failBefore:
		f.Kind, name = ddblocal.FaultFailBefore, "fail_before"
	case x < r.failBefore+r.failAfter:
		f.Kind, name = ddblocal.FaultFailAfter, "fail_after"
	case x < r.failBefore+r.failAfter+r.throttle:
		f.Kind, name = ddblocal.FaultThrottle, "throttle"
	case x < r.failBefore+r.failAfter+r.throttle+r.conflict:
		f.Kind, name = ddblocal.FaultConflict, "conflict"
	}
	if w.rng.Float64() < r.delay {
		f.Delay = randDur(w.rng, time.Millisecond, r.maxDelay)
		w.res.Faults["ddb.latency"]++
		w.tracef(p, "  fault: %s slow by %s", c.Op, f.Delay)
	}
	if name != "" {
		w.res.Faults["ddb."+name]++
		w.tracef(p, "  fault: %s %s", c.Op, name)
		for rec := range p.pending {
			if rec.flagged == "" {
				rec.flagged = "DynamoDB fault " + name + " before the outcome was written"
			}
		}
	}
	return f
}

// Run runs one seed and returns what it did and found.
func Run(opt Options) *Result {
	w := newWorld(opt)
	w.setup()
	for w.step = 1; w.step <= opt.Steps && !w.stopped; w.step++ {
		w.randomStep()
	}
	if !w.stopped {
		w.quiesce()
	}
	if !w.stopped {
		w.finalChecks()
	}
	for len(w.procs) > 0 {
		w.kill(w.procs[0])
	}
	w.tally()
	if w.stopped {
		fmt.Fprintf(&w.trace, "replay: %s\n", w.res.Replay())
	}
	w.res.Trace = w.trace.Bytes()
	return w.res
}

func (w *world) setup() {
	p := w.newProc("setup", w.hosts[0])
	w.cur = nil
	if !w.opt.Classic {
		w.ensureAppTable() // the caller's table: its transactions, the ended hook's rows
		if w.opt.Seed%4 == 0 {
			// The CDK stack created the table: no partition map yet; the
			// first engine that uses it records its count (design.md
			// §3.12).
			if _, err := w.db.CreateTable(context.Background(), outbox.TableInput(w.cfg.Table)); err != nil {
				panic(fmt.Sprintf("sim: table: %v", err))
			}
			// And its custom resource put the layout marker (infra/marker.go).
			if _, err := w.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(w.cfg.Table),
				Item: outbox.LayoutMarker(), ConditionExpression: aws.String("attribute_not_exists(pk)")}); err != nil {
				panic(fmt.Sprintf("sim: layout marker: %v", err))
			}
			w.res.Faults["table.from_stack"]++
		}
	}
	w.called("EnsureTable")
	if err := w.hosts[0].eng.EnsureTable(p.ctx()); err != nil {
		panic(fmt.Sprintf("sim: table: %v", err))
	}
	w.faultsOn = true
	if w.sched.strandedLane {
		// The stranded lane's first batch is the oldest in its partition:
		// a run of it stays at the front of the due index.
		w.strandedLaneStep()
	}
	if w.maxLag > 0 {
		w.res.Faults["ddb.index_lag_runs"]++
	}
	if w.ttlDelay > 0 {
		w.res.Faults["ttl.days_late"] += int(w.ttlDelay / (24 * time.Hour))
	}
	for _, h := range w.hosts {
		if h.skew != 0 {
			w.res.Faults["clock.skewed_hosts"]++
		}
	}
}

type choice struct {
	weight int
	name   string
	f      func()
}

func (w *world) randomStep() {
	live := len(w.procs)
	cs := []choice{
		{22, "enqueue", w.enqueueStep},
		{4, "admit/cancel", w.admitOrCancel},
		{1, "erase", w.eraseStep},
		{4, "reap", w.reapStep},
		{2, "retain", w.retainStep},
		{1, "ttl-sweep", w.ttlStep},
		{10, "clock", func() { w.advance(randDur(w.rng, 50*time.Millisecond, 5*time.Second)) }},
		{3, "clock", func() { w.advance(randDur(w.rng, 10*time.Second, 2*time.Minute)) }},
	}
	if w.opt.Repartition {
		cs = append(cs, choice{2, "repartition", w.repartitionStep})
	}
	if w.rng.IntN(40) == 0 {
		cs = append(cs, choice{1, "clock", func() { w.advance(randDur(w.rng, time.Hour, 3*24*time.Hour)) }})
	}
	if live < 4 {
		cs = append(cs, choice{8, "drainer-start", func() {
			h := w.hosts[w.rng.IntN(len(w.hosts))]
			if w.opt.Classic {
				w.startDrainer(h, w.rng.IntN(w.sweepRange(h)))
				return
			}
			if w.sched.oldBusy > 0 && w.srng.Float64() < w.sched.oldBusy {
				h = w.hosts[3] // the older build (schedule old_busy)
			}
			if w.sched.pileUp > 0 && w.srng.Float64() < w.sched.pileUp {
				// Two drainers on one partition (schedule pile_up).
				part := w.srng.IntN(w.sweepRange(h))
				w.startDrainer(h, part)
				w.startDrainer(w.hosts[w.srng.IntN(len(w.hosts))], part)
				return
			}
			w.invoke(h)
		}})
	}
	if !w.opt.Classic {
		cs = append(cs, w.entrySteps()...)
		cs = append(cs, w.scheduleSteps()...)
	}
	if live > 0 {
		cs = append(cs, choice{35, "drainer-step", func() {
			if p := w.procs[w.rng.IntN(live)]; w.opt.Classic {
				w.stepProc(p)
			} else {
				w.stepDrainer(p)
			}
		}})
		if k := int(w.rt.kill * 3); k > 0 {
			cs = append(cs, choice{k, "drainer-kill", func() { w.kill(w.procs[w.rng.IntN(live)]) }})
		}
	}
	total := 0
	for _, c := range cs {
		total += c.weight
	}
	x := w.rng.IntN(total)
	for _, c := range cs {
		if x < c.weight {
			w.res.Ops[c.name]++
			c.f()
			return
		}
		x -= c.weight
	}
}

func (w *world) advance(d time.Duration) {
	w.clk.Advance(d)
	w.tracef(nil, "clock +%s", d)
}

var (
	workspaces = []string{"w1", "w2"}
	subjects   = []string{"s1", "s2", "s3"}
)

func (w *world) newToken(h *host) *token {
	w.ntok++
	t := &token{name: fmt.Sprintf("k%d", w.ntok), ws: workspaces[w.rng.IntN(len(workspaces))],
		effectRef: map[string]string{}, maybeSent: map[string]bool{},
		// One token in seven has a receiver that defers with Retry-After
		// 0 (no draw from the seed: the rest of the run stays as it was).
		deferring: w.ntok%7 == 0}
	switch {
	case h == w.future:
		t.kind = kindFuture
	case h.old:
		t.kind = []string{kindRB, kindIdem}[w.rng.IntN(2)]
	default:
		t.kind = []string{kindRB, kindIdem, kindAMO}[w.rng.IntN(3)]
	}
	if t.kind == kindIdem {
		t.variant = "v1"
		if !h.old && w.rng.IntN(2) == 0 {
			t.variant = "v2"
		}
	}
	switch x := w.rng.IntN(20); {
	case h == w.future && x < 14:
		t.lane = "z"
	case h == w.future:
	case x < 10:
		t.lane = []string{"a", "b", "c"}[w.rng.IntN(3)]
	case x < 11:
		t.lane = "z"
	}
	if w.rng.IntN(5) > 0 {
		t.subj = subjects[w.rng.IntN(len(subjects))]
	}
	if w.rng.IntN(5) < 3 {
		t.ikey = t.name
	}
	t.propose = w.rng.IntN(12) == 0
	if !w.opt.Classic {
		w.shapeToken(t)
	}
	w.tokens[t.name] = t
	return t
}

func (w *world) enqueueStep() {
	var h *host
	switch x := w.rng.IntN(20); {
	case x < 14:
		h = w.hosts[w.rng.IntN(3)]
	case x < 19:
		h = w.hosts[3]
	default:
		h = w.future
	}
	if h == w.future && w.sched.retireRace {
		// Rows no build knows would hold every partition they are in
		// forever: none is retired then.
		h = w.hosts[0]
	}
	if h != w.future && w.ntok > 0 && w.rng.IntN(10) == 0 {
		t := w.tokens[fmt.Sprintf("k%d", 1+w.rng.IntN(w.ntok))]
		if t.ikey != "" && t.kind != kindFuture && h.decodes(t.kind, t.variant) {
			w.enqueue(h, t, true)
			return
		}
	}
	w.enqueue(h, w.newToken(h), false)
}

func (w *world) enqueue(h *host, t *token, resend bool) {
	pl := fmt.Sprintf(`{"t":%q}`, t.name)
	if t.variant != "" {
		pl = fmt.Sprintf(`{"t":%q,"v":%q}`, t.name, t.variant)
	}
	ep := outbox.EnqueueParams{Kind: t.kind, WorkspaceID: t.ws, LaneKey: t.lane, IdempotencyKey: t.ikey,
		SubjectID: t.subj, Payload: []byte(pl), Propose: t.propose}
	if w.rng.IntN(8) == 0 {
		ep.ExpiresAt = h.now().Add(randDur(w.rng, 5*time.Second, 10*time.Minute))
	}
	if w.rng.IntN(4) == 0 {
		ep.MaxAttempts = 1 + w.rng.IntN(5)
	}
	if t.expiresIn > 0 {
		ep.ExpiresAt = h.now().Add(t.expiresIn)
	}
	if t.loseFirst {
		ep.MaxAttempts = 8 // room for the read-back after the lost call
	}
	if h.old {
		w.res.Faults["build.old_enqueue"]++
	}
	p := w.newProc("enqueue", h)
	if w.opt.KillEnqueues && w.krng.IntN(4) == 0 {
		p.dieAfter = 1 + w.krng.IntN(3)
	}
	var res *outbox.EnqueueResult
	var err error
	w.called("Enqueue")
	res, err = h.engine().Enqueue(p.ctx(), ep)
	what := fmt.Sprintf("enqueue %s %s/%s lane=%s/%s subj=%s key=%q propose=%v resend=%v", t.name, t.kind, t.variant, t.ws, t.lane, t.subj, t.ikey, t.propose, resend)
	if err != nil {
		w.tracef(p, "%s: error %s", what, shortErr(err))
		w.judgeLaneBusy(p, t, resend, err)
		return
	}
	id := keyID(&res.Action)
	w.tracef(p, "%s: %s existing=%v", what, id, res.Existing)
	if k, ok := w.minted[res.Action.ID]; ok && k != id {
		w.violate("ids", []string{k, id}, "action id %s was given to %s and to %s", res.Action.ID, k, id)
	}
	w.minted[res.Action.ID] = id
	t.acked = true
	if res.Existing {
		known := false
		for _, x := range t.ids {
			known = known || x == id
		}
		if !resend || !known {
			w.violate("idempotency", append([]string{id}, t.ids...), "enqueue of %s answered existing action %s, which is not its own", t.name, id)
		}
		if r := w.rows[id]; r != nil && len(r.hist) > 0 && strings.Contains(r.hist[0], " "+p.name+" ") {
			// The resend wrote the first request's action from its
			// idempotency record (design.md §4.2): the first one died between
			// its two puts.
			w.res.Faults["x.idem_finished"]++
		}
		return
	}
	if r := w.rows[id]; r == nil || r.gone != "" || r.tok != t {
		w.violate("nothing-lost", []string{id}, "acknowledged enqueue of %s (%s) is not in the table", t.name, id)
	}
}

// liveRows lists the shadow rows that exist and have not ended, by id.
func (w *world) liveRows(keep func(r *row) bool) []*row {
	var out []*row
	for _, id := range sortedKeys(w.rows) {
		r := w.rows[id]
		if r.gone == "" && !state(r.item).Ended() && keep(r) {
			out = append(out, r)
		}
	}
	return out
}

func (w *world) admitOrCancel() {
	rs := w.liveRows(func(r *row) bool {
		st := state(r.item)
		return str(r.item, "kind") != kindFuture && (st == outbox.StatePROPOSED || st == outbox.StateADMITTED) &&
			(r.tok == nil || !r.tok.unadmitted)
	})
	if len(rs) == 0 {
		return
	}
	r := rs[w.rng.IntN(len(rs))]
	h := w.hosts[w.rng.IntN(3)]
	p := w.newProc("api", h)
	// The API addresses an action by the id its row holds (a global id
	// since 982bfa7); r.id is the simulator's own <p>-<seq> label.
	id := str(r.item, "id")
	if id == "" {
		id = r.id
	}
	var err error
	op := "cancel"
	if state(r.item) == outbox.StatePROPOSED && w.rng.IntN(4) > 0 {
		op = "admit"
		w.called("Admit")
		_, err = h.engine().Admit(p.ctx(), id)
	} else if state(r.item) == outbox.StateADMITTED && w.rng.IntN(3) > 0 {
		op = "cancel"
		w.called("Cancel")
		_, err = h.engine().Cancel(p.ctx(), id)
	} else if state(r.item) == outbox.StatePROPOSED {
		w.called("Cancel")
		_, err = h.engine().Cancel(p.ctx(), id)
	} else {
		return
	}
	if err != nil {
		var te *outbox.TransitionError
		if errors.As(err, &te) {
			w.res.Ops[op+" refused"]++
			w.tracef(p, "%s %s: refused (%s)", op, r.id, te.From)
			return
		}
		w.res.Ops[op+" error"]++
		w.tracef(p, "%s %s: error %s", op, r.id, shortErr(err))
		return
	}
	w.res.Ops[op+" done"]++
	w.tracef(p, "%s %s", op, r.id)
}

func (w *world) eraseStep() {
	ws, subj := workspaces[w.rng.IntN(len(workspaces))], subjects[w.rng.IntN(len(subjects))]
	if !w.opt.Classic {
		ws, subj = w.erasureSubject(ws, subj)
	}
	h := w.hosts[w.rng.IntN(3)]
	p := w.newProc("erase", h)
	p.erasing = [2]string{ws, subj}
	var n int
	var err error
	if w.opt.Classic || w.rng.IntN(2) == 0 {
		w.called("EraseSubject")
		n, err = h.engine().EraseSubject(p.ctx(), ws, subj)
	} else {
		// The operator's erasure, with its progress bar.
		w.called("SubjectErase")
		n, err = h.eng.SubjectErase(p.ctx(), outbox.SubjectEraseParams{WorkspaceID: ws, SubjectID: subj, Progress: func(int) {}})
	}
	if err != nil {
		w.tracef(p, "erase %s/%s: %d then error %s", ws, subj, n, shortErr(err))
	} else {
		w.tracef(p, "erase %s/%s: %d actions", ws, subj, n)
	}
	if !w.opt.Classic {
		// An erasure that failed later still deleted the evidence of the
		// actions it erased before (checkErasedEvidence excuses a row only
		// when a call near its erasure failed).
		w.checkErasedEvidence(p)
	}
}

func (w *world) reapStep() {
	h := w.hosts[w.rng.IntN(len(w.hosts))]
	w.reap(h)
}

func (w *world) reap(h *host) {
	p := w.newProc("reaper", h)
	w.called("Reap")
	res, err := h.engine().Reap(p.ctx())
	if err != nil {
		w.tracef(p, "reap: error %s", shortErr(err))
		return
	}
	w.tracef(p, "reap: uncertain %d exhausted %d expired %d", res.Uncertain, res.Exhausted, res.Expired)
}

func (w *world) retainStep() {
	h := w.hosts[w.rng.IntN(len(w.hosts))]
	p := w.newProc("retain", h)
	w.called("Retain")
	res, err := h.engine().Retain(p.ctx())
	if err != nil {
		w.tracef(p, "retain: error %s", shortErr(err))
		return
	}
	w.tracef(p, "retain: deleted %d trimmed %d", res.Deleted, res.Trimmed)
}

func (w *world) ttlStep() {
	n := w.db.SweepTTL()
	w.tracef(nil, "TTL sweep deleted %d items", n)
	w.readFeed(nil)
}

// quiesce stops every fault, lets the live drainers finish, then runs a
// bounded number of drainer and reaper periods: every action that is not
// poisoned must end within them.
func (w *world) quiesce() {
	w.step = w.opt.Steps + 1
	w.faultsOn, w.quiet = false, true
	w.tracef(nil, "quiesce: faults stop")
	if w.sched.retireRace && w.parts > 2 {
		// The run ends with a shrink (retireRace): its partitions above
		// the count drain and are retired while the run settles.
		w.parts = 2
		w.tracef(nil, "repartition: deploy of 2 partitions to end the run")
	}
	if w.opt.Repartition {
		// The deploy finishes: every host runs the last count.
		for _, h := range append(append([]*host(nil), w.hosts...), w.future) {
			if h.parts != w.parts {
				w.build(h, w.parts)
				w.tracef(nil, "repartition: %s now on %d partitions", h.name, w.parts)
			}
		}
	}
	if w.sched.retireRace {
		w.clearProposals()
	}
	for len(w.procs) > 0 && !w.stopped {
		w.stepProc(w.procs[0])
	}
	idle := 0
	rounds := maxQuiesceRounds
	if !w.opt.Classic {
		// A lane of deferring receivers takes a few rounds a member.
		rounds = 3 * maxQuiesceRounds
	}
	for round := 0; round < rounds && idle < 2 && !w.stopped; round++ {
		before := w.feedSeq
		w.advance(w.cfg.Lease + w.cfg.RetryCap + 10*time.Second)
		for part := 0; part < w.sweepRange(w.hosts[0]) && !w.stopped; part++ {
			p := w.startDrainer(w.hosts[0], part)
			for !p.done && !w.stopped {
				w.stepProc(p)
			}
		}
		if !w.stopped {
			w.reap(w.hosts[0])
		}
		// Rounds that change nothing but fences and seq blocks are idle.
		if w.actionChangesSince(before) == 0 {
			idle++
		} else {
			idle = 0
		}
		w.res.Faults["x.quiesce_rounds"]++
	}
	if !w.stopped {
		w.checkLiveness()
	}
}

// maxQuiesceRounds bounds liveness: drainer and reaper periods after faults
// stop within which every action that is not poisoned must end. The rounds
// stop early after two rounds that changed no action.
const maxQuiesceRounds = 40

// checkLiveness requires every live action to be poisoned: of a kind no
// build knows, a proposal nobody admitted, or queued behind one in its lane.
func (w *world) checkLiveness() {
	blocked := map[string]bool{} // lane -> an excused live action holds it
	excused := map[string]string{}
	for _, ids := range w.sortedLanes() {
		for _, id := range ids {
			r := w.rows[id]
			if r.gone != "" || state(r.item).Ended() {
				continue
			}
			k := str(r.item, "ws") + "/" + str(r.item, "lane")
			switch {
			case str(r.item, "kind") == kindFuture:
				excused[id], blocked[k] = "unknown kind", true
			case state(r.item) == outbox.StatePROPOSED:
				excused[id], blocked[k] = "proposed", true
			case blocked[k]:
				excused[id] = "behind a poisoned action"
			}
		}
	}
	w.excused = excused
	for _, r := range w.liveRows(func(*row) bool { return true }) {
		if excused[r.id] != "" {
			continue
		}
		if str(r.item, "kind") == kindFuture {
			excused[r.id] = "unknown kind"
			continue
		}
		if state(r.item) == outbox.StatePROPOSED {
			excused[r.id] = "proposed"
			continue
		}
		ids := []string{r.id}
		if ln := str(r.item, "lane"); ln != "" {
			ids = w.lanes[str(r.item, "ws")+"/"+ln]
		}
		w.violate("liveness", ids, "%s still %s after faults stopped and the drainer and reaper periods settled", r.id, state(r.item))
		return
	}
}

func (w *world) sortedLanes() [][]string {
	var out [][]string
	for _, k := range sortedKeys(w.lanes) {
		out = append(out, w.lanes[k])
	}
	return out
}

// finalChecks compares the shadow kept from the change feed with the table.
func (w *world) finalChecks() {
	w.checking = true
	defer func() { w.checking = false }()
	seen := map[string]bool{}
	journaled := map[string]bool{}
	tails := map[string]int{} // "<ws>#<lane>" -> the partition its tail names
	var pmap map[string]types.AttributeValue
	var start map[string]types.AttributeValue
	for {
		out, err := w.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(w.cfg.Table), ExclusiveStartKey: start})
		if err != nil {
			panic(fmt.Sprintf("sim: final scan: %v", err))
		}
		for _, it := range out.Items {
			if s := str(it, "sk"); len(s) > 2 && s[:2] == "A#" && str(it, "sr") != "ERASED" {
				part, _ := strconv.Atoi(strings.TrimPrefix(str(it, "pk"), "P#"))
				seq, _ := strconv.ParseInt(s[2:], 10, 64)
				seen[rowKey(part, seq)] = true
			}
			if str(it, "sk") == "L" && strings.HasPrefix(str(it, "pk"), "L#") {
				tails[strings.TrimPrefix(str(it, "pk"), "L#")] = int(num(it, "p"))
			}
			if str(it, "pk") == "M#partitions" {
				pmap = it
			}
			if s := str(it, "sk"); strings.HasPrefix(s, "R#") || strings.HasPrefix(s, "H#") {
				part, _ := strconv.Atoi(strings.TrimPrefix(str(it, "pk"), "P#"))
				if ns, ok := it["seqs"].(*types.AttributeValueMemberNS); ok {
					for _, v := range ns.Value {
						seq, _ := strconv.ParseInt(v, 10, 64)
						journaled[rowKey(part, seq)] = true
					}
				}
			}
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		start = out.LastEvaluatedKey
	}
	for _, id := range sortedKeys(w.rows) {
		if exists := w.rows[id].gone == ""; exists != seen[id] && w.rows[id].gone != "erased" {
			w.violate("model", []string{id}, "the change feed says %s exists=%v, the table says %v", id, exists, seen[id])
			return
		}
	}
	for _, id := range sortedKeys(seen) {
		if w.rows[id] == nil {
			w.violate("model", []string{id}, "%s is in the table but never in the change feed", id)
			return
		}
	}
	if w.opt.Repartition && !w.checkPartitions(tails, pmap) {
		return
	}
	// Every ended row still in the table is listed by a retention journal
	// item (design.md §3.6), unless the process that ended it died or failed to
	// write its journal: then only TTL removes it.
	for _, id := range sortedKeys(w.rows) {
		r := w.rows[id]
		if r.gone != "" || !state(r.item).Ended() || journaled[id] {
			continue
		}
		if p := r.endedBy; p != nil && !p.killed && !p.journalLost {
			w.violate("retention-journal", []string{id}, "%s ended %s and no retention journal item lists it", p.name, id)
			return
		}
	}
	if !w.opt.Classic {
		w.checkEvidenceLeft()
	}
}

// tally counts actions by how they ended.
func (w *world) tally() {
	for _, r := range w.rows {
		switch {
		case r.gone != "":
			w.res.Actions[r.gone]++
		case str(r.item, "sr") == string(outbox.StopDeferralsExhausted):
			w.res.Actions[string(state(r.item))+" ("+string(outbox.StopDeferralsExhausted)+")"]++
		case state(r.item).Ended():
			w.res.Actions[string(state(r.item))]++
		case w.excused[r.id] != "":
			w.res.Actions["live "+string(state(r.item))+" ("+w.excused[r.id]+")"]++
		default:
			w.res.Actions["live "+string(state(r.item))]++
		}
	}
}

func (w *world) actionChangesSince(seq uint64) int {
	n := 0
	for _, c := range w.db.Changes(w.cfg.Table, seq) {
		if sk := str(c.Keys, "sk"); len(sk) > 2 && sk[:2] == "A#" {
			n++
		}
		if !w.opt.Classic && str(c.Keys, "pk") == "M#partitions" {
			n++ // a retirement step (ADR 0011 §2): the run settles on
		}
	}
	return n
}

// repartitionStep (Options.Repartition) is one step of a rolling deploy of
// a new partition count: now and then a deploy chooses a new count, and
// each step moves one host that does not run it yet to it.
func (w *world) repartitionStep() {
	all := append(append([]*host(nil), w.hosts...), w.future)
	var behind []*host
	for _, h := range all {
		if h.parts != w.parts {
			behind = append(behind, h)
		}
	}
	if len(behind) == 0 || w.prng.IntN(4) == 0 {
		n := 2 + w.prng.IntN(5)
		if n == w.parts {
			n = 2 + (n-1)%5
		}
		w.tracef(nil, "repartition: deploy of %d partitions (was %d)", n, w.parts)
		w.parts = n
		behind = all
	}
	h := behind[w.prng.IntN(len(behind))]
	if h.parts == w.parts {
		return
	}
	w.build(h, w.parts)
	w.tracef(nil, "repartition: %s now on %d partitions", h.name, w.parts)
}

// sweepRange is how many partitions a drainer of h visits: its count, or,
// with Options.Repartition, every partition the partition map says may
// hold a live row (ADR 0011 §2: what Engine.Sweep visits; stream wake-ups
// name any partition). Read straight from the table, outside the faults.
func (w *world) sweepRange(h *host) int {
	if !w.opt.Repartition {
		return h.parts
	}
	out, err := w.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(w.cfg.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "M#partitions"}, "sk": &types.AttributeValueMemberS{Value: "M"}},
	})
	if err != nil {
		panic(fmt.Sprintf("sim: partition map: %v", err))
	}
	return max(h.parts, int(num(out.Item, "n")), int(num(out.Item, "live")))
}

// checkPartitions (Options.Repartition, ADR 0011) requires, at the end of a
// run: no live row in a partition the partition map retired (at or above
// `live`) and no row at all at or above `kept` ("retired-empty"), and every
// live lane member in the partition its lane's tail names ("one-tail": one
// chain per lane).
func (w *world) checkPartitions(tails map[string]int, pmap map[string]types.AttributeValue) bool {
	live, kept := int(num(pmap, "live")), int(num(pmap, "kept"))
	w.tracef(nil, "partition map at the end: count %d live %d kept %d", num(pmap, "n"), live, kept)
	for _, id := range sortedKeys(w.rows) {
		r := w.rows[id]
		if r.gone != "" {
			continue
		}
		part, _ := strconv.Atoi(strings.TrimPrefix(str(r.item, "pk"), "P#"))
		ended := state(r.item).Ended()
		if (live > 0 && part >= live && !ended) || (kept > 0 && part >= kept) {
			w.violate("retired-empty", []string{id}, "%s (%s) is in partition %d, the map says live %d kept %d", id, state(r.item), part, live, kept)
			return false
		}
		if lane := str(r.item, "lane"); lane != "" && !ended {
			tp, ok := tails[str(r.item, "ws")+"#"+lane]
			if !ok || tp != part {
				w.violate("one-tail", []string{id}, "live lane member %s is in partition %d, its lane's tail (found %v) names %d", id, part, ok, tp)
				return false
			}
		}
	}
	return true
}

// judgeLaneBusy holds an enqueue that gave up on a busy lane to its word:
// nothing of it was written (design.md §4.3), so a first enqueue of a
// token left no action; its message says what to do.
func (w *world) judgeLaneBusy(p *proc, t *token, resend bool, err error) {
	var lb *outbox.LaneBusyError
	if !errors.As(err, &lb) {
		return
	}
	w.res.Ops["enqueue lane busy"]++
	if lb.Tries != maxEnqueueRounds || lb.Unwrap() == nil || !strings.Contains(lb.Error(), "retry after a short wait") {
		w.violate("bad-input", nil, "%s: a lane-busy answer after %d tries without its cause or advice: %v", p.name, lb.Tries, lb)
	}
	w.readFeed(nil)
	if !resend && len(t.ids) > 0 {
		w.violate("nothing-lost", t.ids, "%s: the enqueue of %s answered the lane busy and wrote %v", p.name, t.name, t.ids)
	}
}
