package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

// Fault schedules (issue 27): per-seed weights that make rare paths
// common in some seeds. Each seed draws, from a source of its own, which
// schedules it runs and how hard; most seeds run a few, some none. They are
// never drawn in Options.Classic.
type schedules struct {
	// relinkStorm: the share of an out-of-order end's relinks that start a
	// storm: its end transaction answered TransactionConflict at least
	// maxRelinkTries (8) times in a row, so the member ends without a
	// relink (design.md §7.3).
	relinkStorm float64
	// retention: a lane ("p") starts with a proposal nobody admits, the
	// members behind it expire, and the clock runs past the retention
	// period with retention passes between: retention while a predecessor
	// lives.
	retention bool
	// skewAtBound: every host's clock is off by the whole bound's half,
	// two ahead and two behind (Config.ClockSkew between them).
	skewAtBound bool
	// readBackFail: the share of read-back kinds' calls that take the
	// effect and then fail or time out, and of read-backs that cannot tell
	// (Reread) or fail.
	readBackFail float64
	// deferForever: the share of receivers that defer every call, with
	// Retry-After 0 or a wait.
	deferForever float64
	// staleReads: most eventually consistent tail reads are stale, with the
	// longest window, and many enqueues go to one lane.
	staleReads bool
	// retireRace (Options.Repartition): count changes come often, with
	// enqueues and drains of the old counts between them, and no build
	// enqueues kinds the others do not know (their rows would hold every
	// partition they are in).
	retireRace bool
	// killEvery: the chance that a drainer dies at each protocol point it
	// reaches: drainers die between every pair of calls.
	killEvery float64
	// staleHolder: the chance that a drainer about to write as the holder
	// is frozen past its lease while another drainer reclaims its actions.
	staleHolder float64
	// lateFence: the chance that a drainer about to write its write fence
	// is paused until its lease nearly reaches the write margin.
	lateFence float64
	// oldBusy: the share of drainer starts (function invocations) that
	// run on the older build's host: a rolling deploy that reached few
	// hosts yet, the old build draining most partitions beside the new.
	oldBusy float64
	// pileUp: the share of drainer starts that start two drainers on one
	// partition (a stream wake-up beside the sweep's): they contend for
	// the claim fence.
	pileUp float64
	// readHeavy: how much more often than the mix's the API and the
	// operator read (listings page by page, finds, gets): a console left
	// open, a caller polling its actions.
	readHeavy float64
	// hotLane: the share of lane enqueues whose transactions all answer
	// TransactionConflict, as when every other enqueue into the lane lands
	// first: the enqueue gives up after maxEnqueueRounds (9) tries with
	// *outbox.LaneBusyError, having written nothing (design.md §4.3).
	hotLane float64
	// strandedLane: batches of 8 to 24 members go into lane w1/s (the
	// first at the start, the oldest rows of their partition), whose
	// receiver hangs on half its calls, and whose library driver's worker
	// dies (the driver releases its fence, the head left EXECUTING under
	// its lease); sweeps of the lane's partition come within the lease:
	// claims find a blocked run of two batches and more at the front of
	// the due index, remember it on the claim fence and read past it
	// until the lease ends (ADR 0012 part 3).
	strandedLane bool
	// unprocessed: the share of a BatchGetItem's keys DynamoDB leaves
	// unprocessed (as it does when throttled), for the engine to ask again.
	unprocessed float64
}

// drawSchedules draws the run's schedules and applies those that shape
// the world (the hosts' skews, the stale reads). A schedule is off in
// about one seed in twenty; otherwise its weight is drawn between its least
// and its most, most seeds near the least (level squared): a few seeds
// run it hard, most a little.
func (w *world) drawSchedules() {
	r := rand.New(rand.NewPCG(w.opt.Seed, 0x73636864756c65))
	weight := func(lo, hi float64) float64 {
		if r.IntN(20) == 0 {
			return 0
		}
		x := r.Float64()
		return lo + (hi-lo)*x*x
	}
	on := func() bool { return r.IntN(20) > 0 }
	s := &w.sched
	s.relinkStorm = weight(0.2, 1)
	s.retention = on()
	s.skewAtBound = on()
	s.readBackFail = weight(0.3, 0.9)
	s.deferForever = weight(0.1, 0.5)
	s.staleReads = on()
	s.retireRace = w.opt.Repartition && on()
	s.killEvery = weight(0.005, 0.06)
	s.staleHolder = weight(0.2, 0.6)
	// Never off: the probe of the fence margin's edge (and of the clock
	// skew bound's, where a host is off by it).
	s.lateFence = 0.2 + 0.6*r.Float64()*r.Float64()
	s.strandedLane = on()
	s.hotLane = weight(0.02, 0.2)
	s.oldBusy = weight(0.25, 0.75)
	s.pileUp = weight(0.1, 0.5)
	s.readHeavy = weight(0.5, 3)
	if r.IntN(2) == 0 {
		// Room for more attempts: an action whose calls keep getting lost
		// is read back, rather than ended by the reaper with its attempts
		// spent.
		w.cfg.MaxAttempts = 8
	}
	// Drawn last: the draws above are those of the seeds before it.
	s.unprocessed = weight(0.05, 0.5)
	if s.unprocessed > 0 {
		ddblocal.WithUnprocessed(s.unprocessed, w.opt.Seed)(w.db)
	}
	if s.skewAtBound {
		for i, h := range w.hosts {
			if w.opt.Broken&BreakSkewBound != 0 && i == 3 {
				continue // the broken variant's own skew
			}
			h.skew = w.cfg.ClockSkew / 2
			if i%2 == 1 {
				h.skew = -h.skew
			}
			h.clk = clock.Offset{Base: w.clk, Skew: h.skew}
		}
	}
	if s.staleReads {
		w.stale.rate, w.stale.window = 0.95, 5*time.Second
	}
	for name, v := range map[string]bool{"relink_storm": s.relinkStorm > 0, "retention": s.retention, "skew_at_bound": s.skewAtBound,
		"read_back_fail": s.readBackFail > 0, "defer_forever": s.deferForever > 0, "stale_reads": s.staleReads, "retire_race": s.retireRace,
		"kill_every_call": s.killEvery > 0, "stale_holder": s.staleHolder > 0, "late_fence": s.lateFence > 0,
		"stranded_lane": s.strandedLane, "hot_lane": s.hotLane > 0, "old_busy": s.oldBusy > 0, "pile_up": s.pileUp > 0, "read_heavy": s.readHeavy > 0,
		"unprocessed": s.unprocessed > 0} {
		if v {
			w.res.Faults["schedule."+name]++
		}
	}
}

// traceSchedules writes the run's schedules into the trace.
func (w *world) traceSchedules() {
	if !w.opt.Classic {
		w.tracef(nil, "schedules: %+v", w.sched)
	}
}

// scheduleSteps are the steps the schedules add to the mix.
func (w *world) scheduleSteps() []choice {
	var cs []choice
	if w.sched.retention {
		cs = append(cs,
			choice{1, "clock", func() { w.advance(randDur(w.rng, w.cfg.Retention/4, 2*w.cfg.Retention)) }},
			choice{4, "retain", w.retainStep})
	}
	if w.sched.retireRace {
		cs = append(cs, choice{6, "repartition", w.repartitionStep}, choice{2, "partitions-set", w.partitionsSetStep},
			choice{4, "reap", w.reapStep})
	}
	if w.sched.strandedLane {
		cs = append(cs, choice{1, "stranded-lane", w.strandedLaneStep}, choice{3, "stranded-sweep", w.strandedSweepStep})
	}
	if k := int(4 * w.sched.readHeavy); k > 0 {
		cs = append(cs, choice{k, "read", w.readStep})
	}
	return cs
}

// strandedSweepStep starts a drainer on the stranded lane's partition (the
// next sweep of it, within a lease of a library driver's lost worker).
func (w *world) strandedSweepStep() {
	if part, ok := w.strandedPartition(); ok && len(w.procs) < 6 {
		w.startDrainer(w.hosts[w.rng.IntN(3)], part)
	}
}

// strandedPartition is the partition of the stranded lane's live members.
func (w *world) strandedPartition() (int, bool) {
	for _, id := range sortedKeys(w.rows) {
		if r := w.rows[id]; r.gone == "" && str(r.item, "ws") == "w1" && str(r.item, "lane") == "s" && partOf(r.item) < w.parts {
			return partOf(r.item), true
		}
	}
	return 0, false
}

// strandedLaneStep enqueues a batch of 8 to 24 members into lane w1/s in
// one EnqueueBatch (the tail moves once), of the idempotent receiver every
// build decodes, whose provider hangs on half the calls (token.strands).
func (w *world) strandedLaneStep() {
	h := w.hosts[w.rng.IntN(3)]
	n := 8 + w.rng.IntN(17)
	var ts []*token
	var ps []outbox.EnqueueParams
	for range n {
		t := w.newToken(h)
		t.kind, t.variant, t.ws, t.lane, t.strands = kindIdem, "v1", "w1", "s", true
		// It does not defer: a lane of 24 receivers that defer
		// forever takes longer than the quiet end's rounds (each drain
		// ends one member, its deferrals spent).
		t.deferring, t.forever = false, false
		t.propose, t.unadmitted, t.expiresIn = false, false, 0
		ts = append(ts, t)
		ps = append(ps, w.enqueueParams(h, t))
	}
	p := w.newProc("enqueue", h)
	w.called("EnqueueBatch")
	rs, err := h.eng.EnqueueBatch(p.ctx(), ps)
	if err != nil {
		w.tracef(p, "stranded lane: batch of %d: error %s", n, shortErr(err))
		return
	}
	w.res.Ops["stranded lane batch"]++
	w.tracef(p, "stranded lane: batch of %d enqueued", n)
	for i := range rs {
		w.judgeAck(p, ts[i], &rs[i], false)
	}
}

// shapeToken applies the schedules to a new token: proposals, deferring
// receivers, lanes.
func (w *world) shapeToken(t *token) {
	s := &w.sched
	if t.kind == kindAMO && t.subj == "" {
		// An email goes to someone: its subject.
		t.subj = subjects[w.srng.IntN(len(subjects))]
	}
	if s.retention && t.lane != "" && t.kind != kindFuture && w.srng.IntN(4) == 0 {
		// Lane "p": it starts with a proposal nobody admits, and the
		// members behind it expire (the reaper ends them out of order);
		// retention deletes them while the proposal lives on.
		t.lane = "p"
		if len(w.liveRows(func(r *row) bool { return r.tok != nil && r.tok.lane == "p" && r.tok.ws == t.ws })) == 0 {
			t.propose, t.unadmitted = true, true
		} else {
			t.propose = false
			t.expiresIn = randDur(w.srng, 5*time.Second, 5*time.Minute)
		}
	}
	if s.deferForever > 0 && w.srng.Float64() < s.deferForever {
		t.deferring, t.forever = true, true
		if w.srng.IntN(2) == 0 {
			t.deferWait = randDur(w.srng, time.Second, 2*w.cfg.MaxDeferTime)
		}
	}
	if s.staleReads && t.kind != kindFuture && w.srng.IntN(5) == 0 {
		t.lane = "a"
	}
	if s.readBackFail > 0 && t.kind == kindRB && w.srng.IntN(3) == 0 {
		t.loseFirst = true
	}
}

// readBackFails says whether the schedule makes this read-back fail.
func (w *world) readBackFails() bool {
	return w.sched.readBackFail > 0 && !w.quiet && w.srng.Float64() < w.sched.readBackFail
}

// stepDrainer steps a drainer; the schedule may kill it at the point it
// reaches.
func (w *world) stepDrainer(p *proc) {
	s := &w.sched
	w.stepProc(p)
	if p.done {
		return
	}
	if !p.done && s.killEvery > 0 && w.srng.Float64() < s.killEvery {
		w.kill(p)
	}
}

// atPark applies the schedules looked at whenever a drainer parks: one
// parked before its write fence may be paused until its lease nearly runs
// out (lateFence), one parked before a holder write frozen past its lease
// (maybeFreeze).
func (w *world) atPark(p *proc, t *thread) {
	if w.quiet || p.kind != "drainer" {
		return
	}
	chance := w.sched.lateFence
	if p.host == w.mostSkewed() {
		// The host whose clock is furthest off probes its fences late
		// most of the time: the skew bound's edge.
		chance = max(chance, 0.8)
	}
	if chance > 0 && isWriteFence(t.point) && w.srng.Float64() < chance {
		w.lateFence(p, t)
		return
	}
	w.maybeFreeze(p, t)
}

// maybeFreeze is the stale-holder schedule: a drainer parked before a
// holder write may be frozen past its lease while another drainer
// reclaims its action, then goes on with its write.
func (w *world) maybeFreeze(p *proc, t *thread) {
	if w.sched.staleHolder == 0 || w.freezing || w.quiet || p.kind != "drainer" || !holderWrite(t.point) ||
		w.srng.Float64() >= w.sched.staleHolder {
		return
	}
	w.freezing = true
	if w.freeze(p, t) && !p.done && !w.stopped {
		w.stepProc(p) // its write meets the new holder
	}
	w.freezing = false
}

// mostSkewed is the host whose clock is furthest off (the first of
// those).
func (w *world) mostSkewed() *host {
	var m *host
	for _, h := range w.hosts {
		if m == nil || h.skew.Abs() > m.skew.Abs() {
			m = h
		}
	}
	return m
}

// lateFence pauses a drainer before its write fence until its lease has,
// by its clock, about the write margin left (from 6 s over to 6 s under):
// the fence
// lands just in time, and the provider call runs late in the lease, where
// its budget is cut by the lease and the clock skew (callBudget), or the
// fence is refused for too little lease.
func (w *world) lateFence(p *proc, t *thread) {
	var part int
	var seq int64
	i := strings.Index(t.point, "P#")
	if i < 0 {
		return
	}
	if n, _ := fmt.Sscanf(t.point[i:], "P#%d/A#%d", &part, &seq); n < 2 {
		return
	}
	r := w.rows[rowKey(part, seq)]
	if r == nil || r.gone != "" || state(r.item) != "EXECUTING" {
		return
	}
	// As the drainer's own clock reads the lease: a host off by the skew
	// bound's half lands its fence just in time by its clock.
	d := msTime(r.item, "lx").Sub(p.host.now()) - w.cfg.WriteMargin + randDur(w.srng, -6*time.Second, 6*time.Second)
	if d <= 0 {
		return
	}
	w.res.Faults["fault.late_fence"]++
	w.tracef(p, "paused %s before its write fence", d)
	w.clk.Advance(d)
}

func isWriteFence(at string) bool { return strings.Contains(at, "write-fence") }

// parkedAt is a thread of p parked at a point ok accepts (the first in
// the process's order), nil when none is.
func parkedAt(p *proc, ok func(string) bool) *thread {
	for _, t := range p.threads {
		if t.waits == nil && ok(t.point) {
			return t
		}
	}
	return nil
}

// holderWrite tells a protocol point before a write of the holder of a
// claim to its action: the write fence, an outcome, a release, a lease
// renewal.
func holderWrite(at string) bool {
	if !strings.HasPrefix(at, "UpdateItem P#") && !strings.HasPrefix(at, "TransactWriteItems upd P#") || !strings.Contains(at, "/A#") {
		return false
	}
	for _, v := range []string{"write-fence", " end", "retry/defer", "release", "lease-renew", "reread-wait"} {
		if strings.Contains(at, v) {
			return true
		}
	}
	return false
}

// freeze makes p a stale holder: the clock passes its lease (a Lambda
// frozen, a long pause), and a drainer of the partition its write names
// runs meanwhile until it has claimed the action p holds (or ended): p's
// write then meets the new holder.
func (w *world) freeze(p *proc, t *thread) bool {
	var part int
	var seq int64
	i := strings.Index(t.point, "P#")
	if i < 0 {
		return false
	}
	if n, _ := fmt.Sscanf(t.point[i:], "P#%d/A#%d", &part, &seq); n < 2 {
		return false
	}
	p.want = t
	id := rowKey(part, seq)
	r := w.rows[id]
	if r == nil || r.gone != "" || !w.reclaimable(r) {
		return false
	}
	ep := num(r.item, "ep")
	w.res.Faults["fault.frozen_holder"]++
	w.tracef(p, "frozen before %s past its lease", t.point)
	w.clk.Advance(w.cfg.Lease + w.cfg.ClockSkew + randDur(w.srng, time.Second, w.cfg.WriteMargin))
	// Drainers of the partition run until one claims the action again
	// (the new holder is then at work) or three have tried.
	for try := 0; try < 3 && !w.stopped; try++ {
		q := w.startDrainerBatch(w.hosts[w.srng.IntN(len(w.hosts))], part, 25)
		for n := 0; !q.done && !w.stopped && n < 400; n++ {
			if r := w.rows[id]; r == nil || r.gone != "" || num(r.item, "ep") > ep {
				return true
			}
			w.stepProc(q)
		}
	}
	return true
}

// reclaimable says whether another drainer could claim r once its lease
// ran out: EXECUTING with attempts left, and no earlier member of its lane
// live.
func (w *world) reclaimable(r *row) bool {
	if state(r.item) != "EXECUTING" || num(r.item, "att") >= num(r.item, "max") {
		return false
	}
	if r.tok == nil || r.tok.lane == "" {
		return true
	}
	for _, e := range w.lanes[r.tok.ws+"/"+r.tok.lane] {
		if e == r.id {
			return true
		}
		if o := w.rows[e]; o.gone == "" && !state(o.item).Ended() {
			return false
		}
	}
	return true
}

// clearProposals is the operator finishing a shrink (retireRace): every
// proposal still waiting is cancelled, so that the partitions above the
// count can drain and be retired.
func (w *world) clearProposals() {
	for _, r := range w.liveRows(func(r *row) bool { return state(r.item) == "PROPOSED" && str(r.item, "kind") != kindFuture }) {
		p := w.newProc("api", w.hosts[0])
		w.called("Cancel")
		if _, err := w.hosts[0].eng.Cancel(p.ctx(), str(r.item, "id")); err != nil {
			w.tracef(p, "cancel %s: %s", r.id, shortErr(err))
			continue
		}
		w.tracef(p, "cancel %s (the operator clears proposals before the shrink ends)", r.id)
	}
}

// stormFault answers an end transaction that carries a relink with
// TransactionConflict while its storm lasts (relinkStorm).
func (w *world) stormFault(in *dynamodb.TransactWriteItemsInput) {
	if w.sched.relinkStorm == 0 || w.checking || !w.faultsOn || len(in.TransactItems) < 2 {
		return
	}
	relink := false
	for _, it := range in.TransactItems[1:] {
		if u := it.Update; u != nil && (strings.Contains(aws.ToString(u.UpdateExpression), "SET #prev = :prev") ||
			strings.HasPrefix(str(u.Key, "pk"), "L#")) {
			relink = true
		}
	}
	first := in.TransactItems[0].Update
	if !relink || first == nil {
		return
	}
	k := keyName(first.Key)
	left, ok := w.storms[k]
	if !ok {
		left = 0
		if w.srng.Float64() < w.sched.relinkStorm {
			left = maxRelinkTries + w.srng.IntN(4)
		}
	}
	if left == 0 {
		w.storms[k] = 0
		return
	}
	w.storms[k] = left - 1
	w.forced = &ddblocal.Fault{Kind: ddblocal.FaultConflict}
	w.res.Faults["fault.relink_refused"]++
}

// hotLaneFault answers an enqueue's transaction into a lane with
// TransactionConflict while the lane's storm lasts (hotLane): a storm
// starts at an enqueue into a lane and refuses every try it makes.
func (w *world) hotLaneFault(p *proc, in *dynamodb.TransactWriteItemsInput) {
	if w.sched.hotLane == 0 || w.checking || !w.faultsOn || p == nil || p.kind != "enqueue" {
		return
	}
	tail, action := "", false
	for _, it := range in.TransactItems {
		if pt := it.Put; pt != nil && strings.HasPrefix(str(pt.Item, "sk"), "A#") {
			action = true
		}
		if pt := it.Put; pt != nil && strings.HasPrefix(str(pt.Item, "pk"), "L#") {
			tail = str(pt.Item, "pk")
		}
		if u := it.Update; u != nil && strings.HasPrefix(str(u.Key, "pk"), "L#") {
			tail = str(u.Key, "pk")
		}
	}
	if tail == "" || !action {
		return
	}
	k := p.name + " " + tail
	left, ok := w.storms[k]
	if !ok {
		left = 0
		if w.srng.Float64() < w.sched.hotLane {
			left = 1000 // every try, and each try's own retries
		}
	}
	if left == 0 {
		w.storms[k] = 0
		return
	}
	w.storms[k] = left - 1
	w.forced = &ddblocal.Fault{Kind: ddblocal.FaultConflict}
	w.res.Faults["fault.lane_enqueue_refused"]++
}

// maxEnqueueRounds is the engine's bound on an enqueue's transactions
// refused by a lane tail that moved (outbox enqueue.go).
const maxEnqueueRounds = 9

// maxRelinkTries is the engine's bound on an end's relinks (outbox
// end.go).
const maxRelinkTries = 8
