package sim

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

// One schedule of an explored world (explore.go): the world's processes
// are all coroutines, handing control back before every DynamoDB call and
// at the start and end of every provider call; the explorer picks, at each
// such point, which process takes its next step and whether that step's
// call fails (a crash before it, a lost answer after it, or a storm of
// transaction conflicts from it on). Everything else a random run draws is
// fixed: no index lag, no stale reads, TTL on time, providers that answer
// Done, one clock that moves only in the world's clock steps.

// exFault is what the explorer does to a step.
type exFault uint8

const (
	exNone  exFault = iota
	exCrash         // the process dies before the step's call
	exLost          // the call commits and its answer is lost
	exStorm         // the call and every later transaction of the process are refused (TransactionConflict)
	exFaultKinds
)

var exFaultLetter = [exFaultKinds]string{"", "c", "l", "s"}

// exProcState is the explorer's view of one process.
type exProcState struct {
	idx   int
	hist  uint64 // what it did and learnt so far (its replies, the clock at each)
	op    string // its next step
	acc   access // what its next step touches
	fault ddblocal.FaultKind
	storm bool
	write bool // its next step is a DynamoDB write (a lost answer applies)
}

// exRun is the explorer's hold on one schedule's world.
type exRun struct {
	w      *world
	spec   *exWorld
	procs  []*proc // by the world's process index
	keyH   map[string]uint64
	table  uint64 // the table's hash: the xor of every item's
	active bool   // faults apply (not during the setup and the final quiesce)
}

// newExploreWorld builds a world for one schedule of spec.
func newExploreWorld(spec *exWorld, broken Broken, silent bool) *world {
	w := newWorld(Options{Seed: 1, Steps: 0, Broken: broken, Classic: true}) // no fault schedules: the explorer decides
	w.silent = silent
	w.maxLag, w.ttlDelay = 0, 0
	w.stale.window = 0
	w.quiet = true
	w.rt = rates{}
	w.cfg.Partitions = 1
	if spec.cfg != nil {
		spec.cfg(&w.cfg)
	}
	w.db = ddblocal.New(
		ddblocal.WithClock(w.clk),
		ddblocal.WithFaults(ddblocal.FaultPlanFunc(w.decide)),
		ddblocal.WithSleeper(func(_ context.Context, d time.Duration) error { w.clk.Advance(d); return nil }),
		ddblocal.WithChangeRetention(100*365*24*time.Hour),
	)
	w.wrap = &simDB{w: w, db: w.db}
	w.parts = w.cfg.Partitions
	for _, h := range append(append([]*host(nil), w.hosts...), w.future) {
		h.skew, h.clk = 0, clock.Offset{Base: w.clk}
		w.build(h, w.cfg.Partitions)
	}
	w.ex = &exRun{w: w, spec: spec, keyH: map[string]uint64{}}
	return w
}

// exHost is a host of the newer build with an engine of its own: each
// process of an explored world is a Lambda instance of its own, so that
// an engine's state (its random source, its seq block, its caches)
// follows from its own process's steps alone.
func (w *world) exHost(name string, idx int) *host {
	h := &host{name: name, idx: 10 + idx, clk: clock.Offset{Base: w.clk}}
	h.reg, h.adapters = w.registry(false, false)
	w.build(h, w.cfg.Partitions)
	return h
}

// start starts the world's processes, each up to its first step.
func (x *exRun) start() {
	w := x.w
	for i, ps := range x.spec.procs {
		h := w.exHost(ps.name, i)
		p := w.newProc(ps.kind, h)
		p.name = ps.name
		p.ex = &exProcState{idx: i}
		x.procs = append(x.procs, p)
		if ps.clock > 0 || ps.ttl {
			p.ex.op, p.ex.acc = ps.name, access{{anyKey, true}}
			continue
		}
		if ps.kind == "drainer" {
			p.owner = fmt.Sprintf("d%d-%s", p.id, ps.name)
		}
		run := ps.run
		w.startCoroutine(p, func() { p.err = run(p.ctx(), w, p) })
		w.stepProc(p)
	}
}

// pending records what p's next DynamoDB call touches.
func (x *exRun) pending(p *proc, op string, in any) {
	if p.ex == nil {
		return
	}
	p.ex.op, p.ex.acc = op, accessOf(op, in)
	if p.kind == "drainer" {
		// A provider call may start right after it (see alternatives).
		p.ex.acc = p.ex.acc.add("prov", true)
	}
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem":
		p.ex.write = true
	default:
		p.ex.write = false
	}
}

// pendingProvider records p's next step inside a provider call: its start
// (the lane checker reads the partition's rows and the calls in flight),
// its end, or a read-back.
func (x *exRun) pendingProvider(p *proc, part int, what string) {
	if p.ex == nil {
		return
	}
	p.ex.op, p.ex.write = "provider "+what, false
	p.ex.acc = access{{"prov", true}, {fmt.Sprintf("P#%d", part), false}}
}

// pendingStart records p's next step as its start: it reads the clock
// (a clock step moves every key, so the two are ordered both ways) and
// touches nothing else.
func (x *exRun) pendingStart(p *proc) {
	p.ex.op, p.ex.write = "start", false
	p.ex.acc = access{{"clock", false}}
}

// answered folds a call's answer, and the clock it was read at, into p's
// history.
func (x *exRun) answered(p *proc, op string, out any, err error) {
	if p.ex == nil {
		return
	}
	p.ex.hist = mix(mix(p.ex.hist, answerDigest(op, out, err)), uint64(x.w.clk.Now().UnixMilli()))
}

// change keeps the table's hash.
func (x *exRun) change(c ddblocal.Change) {
	k := str(c.Keys, "pk") + "\x00" + str(c.Keys, "sk")
	nh := keyHash(k, c.NewImage)
	x.table ^= x.keyH[k] ^ nh
	if nh == 0 {
		delete(x.keyH, k)
	} else {
		x.keyH[k] = nh
	}
}

// decide is the fault of the call p is about to make.
func (x *exRun) decide(p *proc, c ddblocal.Call) ddblocal.Fault {
	if !x.active || p == nil || p.ex == nil {
		return ddblocal.Fault{}
	}
	if p.ex.storm && c.Op == "TransactWriteItems" {
		x.w.res.Faults["explore.storm_refusal"]++
		return ddblocal.Fault{Kind: ddblocal.FaultConflict}
	}
	f := p.ex.fault
	p.ex.fault = ddblocal.FaultNone
	if f != ddblocal.FaultNone {
		for rec := range p.pending {
			if rec.flagged == "" {
				rec.flagged = "DynamoDB answer lost before the outcome was written"
			}
		}
	}
	return ddblocal.Fault{Kind: f}
}

// exAlt is one choice at a scheduling point: which process steps, and how.
type exAlt struct {
	proc  int
	fault exFault
}

func (a exAlt) bit() uint64 { return 1 << (uint(a.proc)*uint(exFaultKinds) + uint(a.fault)) }

func (a exAlt) String() string { return fmt.Sprintf("%d%s", a.proc, exFaultLetter[a.fault]) }

// enabled lists the processes that can take a step.
func (x *exRun) enabled() []int {
	var out []int
	for i, p := range x.procs {
		if !p.done {
			out = append(out, i)
		}
	}
	return out
}

// alternatives lists the choices at a point, with last's next step
// first (no preemption).
func (x *exRun) alternatives(last int) []exAlt {
	en := x.enabled()
	// A provider call starts right after the step before it (the write
	// fence, the claim, a row read): nothing else runs in between, as in a
	// random run, where an erasure after the fence cannot recall the call
	// (design.md §10) and the call's deadline is a real timer set from the
	// engine's clock just before. The process may only die there.
	for _, i := range en {
		if x.procs[i].ex.op == "provider start" {
			return []exAlt{{i, exNone}, {i, exCrash}}
		}
	}
	var out []exAlt
	for _, i := range en {
		if i == last {
			out = append(out, exAlt{i, exNone})
		}
	}
	for _, i := range en {
		if i != last {
			out = append(out, exAlt{i, exNone})
		}
	}
	for _, i := range en {
		p := x.procs[i]
		if !p.co {
			continue // a clock step
		}
		// A crash before a read leaves the world as a crash before the
		// process's next write or provider step does (a read changes
		// nothing): only those are offered.
		if p.ex.write || strings.HasPrefix(p.ex.op, "provider") {
			out = append(out, exAlt{i, exCrash})
		}
		if p.ex.write && !strings.HasPrefix(p.ex.op, "provider") {
			out = append(out, exAlt{i, exLost})
		}
		if p.ex.op == "TransactWriteItems" && !p.ex.storm {
			out = append(out, exAlt{i, exStorm})
		}
	}
	return out
}

// accessOfAlt is what a choice touches.
func (x *exRun) accessOfAlt(a exAlt) access {
	p := x.procs[a.proc]
	if a.fault == exCrash {
		if p.kind == "drainer" {
			return access{{"prov", true}} // its calls in flight become ambiguous
		}
		return nil
	}
	return p.ex.acc
}

// apply takes the step a chooses.
func (x *exRun) apply(a exAlt) {
	w := x.w
	p := x.procs[a.proc]
	ps := x.spec.procs[a.proc]
	p.ex.hist = mixStr(p.ex.hist, p.ex.op+exFaultLetter[a.fault])
	switch {
	case ps.clock > 0:
		w.clk.Advance(ps.clock)
		w.tracef(nil, "clock +%s", ps.clock)
		p.done = true
	case ps.ttl:
		n := w.db.SweepTTL()
		w.tracef(nil, "TTL sweep deleted %d items", n)
		w.readFeed(nil)
		p.done = true
	case a.fault == exCrash:
		w.kill(p)
	default:
		switch a.fault {
		case exLost:
			p.ex.fault = ddblocal.FaultFailAfter
			w.res.Faults["explore.lost_answer"]++
		case exStorm:
			p.ex.storm = true
			w.res.Faults["explore.storm"]++
			w.tracef(p, "  fault: transaction conflicts from here on")
		}
		w.stepProc(p)
		// A call the storm refuses changes nothing and learns nothing
		// another step could change: it commutes with every step, so it
		// is taken at once (not a scheduling point).
		for !p.done && p.ex.storm && p.ex.op == "TransactWriteItems" && !w.stopped {
			w.stepProc(p)
		}
	}
}

// stateHash is the hash of the world at a scheduling point: the table,
// the clock, each process's history (what it did and learnt, hence its
// engine's state), the providers' records, and the last process to step.
func (x *exRun) stateHash(last int) uint64 {
	w := x.w
	h := mix(x.table, uint64(w.clk.Now().UnixMilli()))
	for _, p := range x.procs {
		v := p.ex.hist
		if p.done {
			v = mix(v, 1)
		}
		if p.killed {
			v = mix(v, 2)
		}
		if p.ex.storm {
			v = mix(v, 3)
		}
		h = mix(h, v)
	}
	names := make([]string, 0, len(w.tokens))
	for n := range w.tokens {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := w.tokens[n]
		h = mix(mixStr(h, n), uint64(t.execs)<<32|uint64(len(t.accepted))<<16|uint64(len(t.effectRef))<<8|uint64(len(t.maybeSent)))
		for _, c := range t.accepted {
			if c.flagged != "" {
				h = mix(h, 7)
			}
		}
	}
	return mix(h, uint64(last+1))
}

// finish ends a schedule: the processes still running die, and a
// schedule that ran to its end quiesces and is judged whole.
func (x *exRun) finish(complete bool) {
	w := x.w
	x.active = false
	if complete && !w.stopped {
		w.quiesce()
	}
	if complete && !w.stopped {
		w.finalChecks()
	}
	for len(w.procs) > 0 {
		w.kill(w.procs[0])
	}
}

// exToken is a token of an explored world, named by the world.
func (w *world) exToken(name, kind, lane string) *token {
	t := &token{name: name, kind: kind, ws: "w1", lane: lane, effectRef: map[string]string{}, maybeSent: map[string]bool{}}
	if kind == kindIdem {
		t.variant = "v1"
	}
	w.tokens[name] = t
	return t
}

// exEnqueue enqueues t from process p and judges the answer as a random
// run's enqueue step does.
func (w *world) exEnqueue(ctx context.Context, p *proc, t *token, ep outbox.EnqueueParams) error {
	ep.Kind, ep.WorkspaceID, ep.LaneKey, ep.IdempotencyKey, ep.SubjectID = t.kind, t.ws, t.lane, t.ikey, t.subj
	ep.Payload = []byte(fmt.Sprintf(`{"t":%q}`, t.name))
	if t.variant != "" {
		ep.Payload = []byte(fmt.Sprintf(`{"t":%q,"v":%q}`, t.name, t.variant))
	}
	res, err := p.host.eng.Enqueue(ctx, ep)
	if err != nil {
		w.tracef(p, "enqueue %s: error %s", t.name, shortErr(err))
		return err
	}
	id := keyID(&res.Action)
	w.tracef(p, "enqueue %s: %s existing=%v", t.name, id, res.Existing)
	if k, ok := w.minted[res.Action.ID]; ok && k != id {
		w.violate("ids", []string{k, id}, "action id %s was given to %s and to %s", res.Action.ID, k, id)
	}
	w.minted[res.Action.ID] = id
	t.acked = true
	if r := w.rows[id]; !res.Existing && (r == nil || r.gone != "" || r.tok != t) {
		w.violate("nothing-lost", []string{id}, "acknowledged enqueue of %s (%s) is not in the table", t.name, id)
	}
	return nil
}

// exActionID is the id of token t's action, "" when none was written.
func (w *world) exActionID(t *token) string {
	if len(t.ids) == 0 {
		return ""
	}
	r := w.rows[t.ids[len(t.ids)-1]]
	if r == nil || r.gone != "" {
		return ""
	}
	return str(r.item, "id")
}
