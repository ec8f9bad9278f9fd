package sim

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The exhaustive mode (ferry-sim -exhaustive): every schedule of a small
// world, within bounds, against the real engine and the simulator's
// checkers.
//
// A world (explore_worlds.go) is a handful of processes — enqueuers,
// drainers, a reaper, retention, API calls, clock steps — each a script of
// engine calls. A schedule is the order in which their steps run, a step
// being one DynamoDB call, or the start or the end of a provider call;
// with at most MaxFaults of them failed (the process crashes before the
// call, the call's answer is lost after it committed, or a storm of
// transaction conflicts refuses the process's transactions from it on)
// and at most MaxPreemptions switches away from a process that could
// have gone on. The explorer enumerates them depth first, replaying each
// schedule from the start (the engine's goroutines cannot be forked), with
// two reductions:
//
//   - sleep sets: after the schedules that take step a first at a point,
//     a sibling that takes an independent step b first does not take a
//     next (steps of different processes are independent when neither
//     writes a partition key, lane tail, record or provider the other
//     touches; explore_access.go);
//   - state hashing: a point whose state (the table, the clock, every
//     process's history of calls and answers, the providers' records) was
//     reached before with at least the same budgets left and no more
//     steps asleep is not explored again.
//
// Every schedule that runs to its end then quiesces (drainers and the
// reaper until every action that can end has ended) and is judged whole,
// exactly as a random run is: every checker of the simulator runs after
// every step.

// ExploreOptions bound an exhaustive exploration.
type ExploreOptions struct {
	// Worlds names the worlds to explore (ExploreWorlds); empty: all.
	Worlds []string
	// MaxFaults and MaxPreemptions bound each schedule; negative (both):
	// each world's own runs, one per pair of bounds it names.
	MaxFaults, MaxPreemptions int
	// Limit stops a world after that many schedules (0: none).
	Limit int
	// Workers explore subtrees in parallel (0: GOMAXPROCS).
	Workers int
	// Broken runs a broken variant of the engine (see Broken).
	Broken Broken
	// KeepGoing explores on after a violation (else a world stops at its
	// first).
	KeepGoing bool
	// Progress, when set, is called now and then with a world's figures
	// so far (from one goroutine at a time).
	Progress func(ExploreStats)
}

// ExploreStats is what the exploration of one world did and found.
type ExploreStats struct {
	World, About     string
	Procs            []string
	Faults, Preempts int // the bounds
	Runs             int // schedules run (complete + cut + asleep)
	Complete         int // schedules run to their end, quiesced and judged whole
	Cut              int // schedules cut at a state explored before
	Asleep           int // schedules cut where every choice left was asleep or over the bounds
	States           int // distinct states recorded
	Steps            int64
	MaxDepth         int
	Elapsed          time.Duration
	Limited          bool // Limit stopped it
	Violations       []ExploreViolation
}

// ExploreViolation is a broken invariant and the schedule that breaks it.
type ExploreViolation struct {
	Schedule  string // the choices, for -schedule
	Violation Violation
	Trace     []byte // the schedule's trace
}

// Explore explores the chosen worlds one after another.
func Explore(opt ExploreOptions) ([]ExploreStats, error) {
	// A schedule allocates much and keeps little: collect less often
	// (about a third faster).
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	var out []ExploreStats
	worlds, err := pickWorlds(opt.Worlds)
	if err != nil {
		return nil, err
	}
	for _, spec := range worlds {
		bounds := spec.bounds
		if opt.MaxFaults >= 0 || opt.MaxPreemptions >= 0 {
			b := bounds[0]
			if opt.MaxFaults >= 0 {
				b.faults = opt.MaxFaults
			}
			if opt.MaxPreemptions >= 0 {
				b.preempts = opt.MaxPreemptions
			}
			bounds = []exBounds{b}
		}
		for _, b := range bounds {
			out = append(out, exploreWorld(spec, b, opt))
		}
	}
	return out, nil
}

func pickWorlds(names []string) ([]*exWorld, error) {
	if len(names) == 0 {
		return exWorlds(), nil
	}
	var out []*exWorld
	for _, n := range names {
		w := exWorldNamed(n)
		if w == nil {
			return nil, fmt.Errorf("no world %q (worlds: %s)", n, strings.Join(ExploreWorlds(), ", "))
		}
		out = append(out, w)
	}
	return out, nil
}

// ExploreWorlds names the worlds.
func ExploreWorlds() []string {
	var out []string
	for _, w := range exWorlds() {
		out = append(out, w.name)
	}
	return out
}

// exNode is one scheduling point on the current path.
type exNode struct {
	alts        []exAlt
	acc         []access
	sleep, done uint64
	chosen      int
	last        int  // the process that took the step before
	lastEnabled bool // it can go on (switching away is a preemption)
	faults      int  // budgets left at this point
	preempts    int
}

// cost is what choosing alternative i costs: a fault, a preemption.
func (n *exNode) cost(i int) (fault, preempt int) {
	a := n.alts[i]
	if a.fault != exNone {
		fault = 1
	}
	if n.lastEnabled && a.proc != n.last {
		preempt = 1
	}
	return fault, preempt
}

// next is the first alternative left to explore: not explored, not
// asleep, within the budgets (-1: none).
func (n *exNode) next() int {
	for i, a := range n.alts {
		if (n.done|n.sleep)&a.bit() != 0 {
			continue
		}
		f, p := n.cost(i)
		if f <= n.faults && p <= n.preempts {
			return i
		}
	}
	return -1
}

// childSleep is the sleep set after the chosen step: what was asleep or
// explored before it here and does not conflict with it.
func (n *exNode) childSleep() uint64 {
	c := n.alts[n.chosen]
	ca := n.acc[n.chosen]
	var s uint64
	for i, a := range n.alts {
		if (n.sleep|n.done)&a.bit() == 0 || a.proc == c.proc {
			continue
		}
		if !n.acc[i].conflicts(ca) {
			s |= a.bit()
		}
	}
	return s
}

type visit struct {
	faults, preempts int
	sleep            uint64
}

// explorer explores one world.
type explorer struct {
	spec     *exWorld
	opt      ExploreOptions
	maxF     int
	maxP     int
	mu       sync.Mutex
	seen     map[uint64][]visit
	stats    ExploreStats
	stop     atomic.Bool
	runs     atomic.Int64
	progress time.Time
}

// maxStates bounds the states recorded (memory): past it no new state is
// recorded, which only cuts fewer schedules.
const maxStates = 8_000_000

// visited reports whether a state was explored with at least these
// budgets and no more asleep, and records it otherwise.
func (e *explorer) visited(h uint64, v visit) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, o := range e.seen[h] {
		if o.faults >= v.faults && o.preempts >= v.preempts && o.sleep&^v.sleep == 0 {
			return true
		}
	}
	if len(e.seen) < maxStates {
		if _, ok := e.seen[h]; !ok {
			e.stats.States++
		}
		e.seen[h] = append(e.seen[h], v)
	}
	return false
}

// exSetup runs a world's setup, then lets a second pass: what it enqueued
// is due when the processes start.
func exSetup(w *world, spec *exWorld) {
	if spec.setup != nil {
		spec.setup(w)
		w.clk.Advance(time.Second)
	}
}

// runEnd is how one schedule ended.
type runEnd int

const (
	endComplete runEnd = iota
	endCut
	endAsleep
	endViolation
)

// runOne runs the schedule path describes, extending path with new
// points past its end (their default choices) until the schedule ends.
func (e *explorer) runOne(path *[]*exNode, probe bool) (runEnd, *world) {
	w := newExploreWorld(e.spec, e.opt.Broken, true)
	x := w.ex
	w.setup()
	w.faultsOn = false
	exSetup(w, e.spec)
	x.start()
	x.active = true
	last, faults, preempts := -1, e.maxF, e.maxP
	steps := 0
	defer func() {
		e.mu.Lock()
		e.stats.Steps += int64(steps)
		if steps > e.stats.MaxDepth {
			e.stats.MaxDepth = steps
		}
		e.mu.Unlock()
	}()
	for d := 0; ; d++ {
		if w.stopped {
			x.finish(false)
			return endViolation, w
		}
		if len(x.enabled()) == 0 {
			x.finish(true)
			if w.stopped {
				return endViolation, w
			}
			return endComplete, w
		}
		var n *exNode
		if d < len(*path) {
			n = (*path)[d]
		} else {
			var sleep uint64
			if d > 0 {
				sleep = (*path)[d-1].childSleep()
			}
			if !probe && e.visited(x.stateHash(last), visit{faults, preempts, sleep}) {
				x.finish(false)
				return endCut, w
			}
			n = &exNode{alts: x.alternatives(last), sleep: sleep, last: last, faults: faults, preempts: preempts}
			n.lastEnabled = last >= 0 && !x.procs[last].done
			for _, a := range n.alts {
				n.acc = append(n.acc, x.accessOfAlt(a))
			}
			if n.chosen = n.next(); n.chosen < 0 {
				x.finish(false)
				return endAsleep, w
			}
			*path = append(*path, n)
			if probe {
				// expand wanted this point's choices only.
				x.finish(false)
				return endCut, w
			}
		}
		f, p := n.cost(n.chosen)
		faults, preempts = faults-f, preempts-p
		a := n.alts[n.chosen]
		w.step = d + 1
		x.apply(a)
		last = a.proc
		steps++
	}
}

// dfs explores every schedule below path[:floor] (those points' choices
// are fixed), backtracking depth first.
func (e *explorer) dfs(path []*exNode, floor int) {
	for !e.stop.Load() {
		end, w := e.runOne(&path, false)
		e.count(end, w, path)
		for len(path) > floor {
			n := path[len(path)-1]
			n.done |= n.alts[n.chosen].bit()
			if j := n.next(); j >= 0 {
				n.chosen = j
				break
			}
			path = path[:len(path)-1]
		}
		if len(path) <= floor {
			return
		}
	}
}

// count books one schedule's end.
func (e *explorer) count(end runEnd, w *world, path []*exNode) {
	runs := e.runs.Add(1)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stats.Runs++
	switch end {
	case endComplete:
		e.stats.Complete++
	case endCut:
		e.stats.Cut++
	case endAsleep:
		e.stats.Asleep++
	case endViolation:
		e.stats.Complete++
		sched := scheduleString(path)
		if len(e.stats.Violations) < 10 {
			e.stats.Violations = append(e.stats.Violations, ExploreViolation{Schedule: sched, Violation: w.res.Violations[0]})
		}
		if !e.opt.KeepGoing {
			e.stop.Store(true)
		}
	}
	if e.opt.Limit > 0 && runs >= int64(e.opt.Limit) {
		e.stats.Limited = true
		e.stop.Store(true)
	}
	if e.opt.Progress != nil && time.Since(e.progress) > time.Second {
		e.progress = time.Now()
		e.opt.Progress(e.snapshot())
	}
}

func (e *explorer) snapshot() ExploreStats {
	s := e.stats
	s.Violations = append([]ExploreViolation(nil), e.stats.Violations...)
	return s
}

func scheduleString(path []*exNode) string {
	parts := make([]string, len(path))
	for i, n := range path {
		parts[i] = n.alts[n.chosen].String()
	}
	return strings.Join(parts, ",")
}

// splitDepth is how deep the first points are expanded into subtrees for
// the workers.
const splitDepth = 2

// exploreWorld explores one world with opt's bounds.
func exploreWorld(spec *exWorld, b exBounds, opt ExploreOptions) ExploreStats {
	start := time.Now()
	e := &explorer{spec: spec, opt: opt, maxF: b.faults, maxP: b.preempts, seen: map[uint64][]visit{}}
	e.stats = ExploreStats{World: spec.name, About: spec.about, Faults: e.maxF, Preempts: e.maxP}
	for _, p := range spec.procs {
		e.stats.Procs = append(e.stats.Procs, p.name)
	}
	var tasks [][]*exNode
	e.expand(nil, &tasks)
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ch := make(chan []*exNode)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range ch {
				e.dfs(t, len(t))
			}
		}()
	}
	for _, t := range tasks {
		if e.stop.Load() {
			break
		}
		ch <- t
	}
	close(ch)
	wg.Wait()
	e.stats.Elapsed = time.Since(start)
	for i, v := range e.stats.Violations {
		if i == 0 {
			r := ReplaySchedule(spec.name, opt.Broken, v.Schedule)
			e.stats.Violations[i].Trace = r.Trace
		}
	}
	return e.stats
}

// expand runs the first points of the world one by one and makes each
// path of splitDepth choices a task (a subtree for one worker), keeping
// the sleep sets as a depth-first walk would have them.
func (e *explorer) expand(path []*exNode, tasks *[][]*exNode) {
	if len(path) == splitDepth {
		*tasks = append(*tasks, copyPath(path))
		return
	}
	probe := copyPath(path)
	end, w := e.runOne(&probe, true)
	if len(probe) <= len(path) {
		// The schedule ended before another point.
		e.count(end, w, probe)
		return
	}
	n := probe[len(path)]
	for j := n.chosen; j >= 0; j = n.next() {
		n.chosen = j
		e.expand(append(copyPath(path), cloneNode(n)), tasks)
		n.done |= n.alts[j].bit()
	}
}

func cloneNode(n *exNode) *exNode {
	c := *n
	return &c
}

func copyPath(path []*exNode) []*exNode {
	out := make([]*exNode, len(path))
	for i, n := range path {
		out[i] = cloneNode(n)
	}
	return out
}

// ReplaySchedule runs one schedule of a world (as ExploreViolation.Schedule
// writes it) with its trace.
func ReplaySchedule(world string, broken Broken, schedule string) *Result {
	spec := exWorldNamed(world)
	if spec == nil {
		return &Result{Trace: []byte(fmt.Sprintf("no world %q\n", world))}
	}
	var alts []exAlt
	for _, s := range strings.Split(schedule, ",") {
		if s == "" {
			continue
		}
		a := exAlt{}
		for f := exFault(1); f < exFaultKinds; f++ {
			if strings.HasSuffix(s, exFaultLetter[f]) {
				a.fault, s = f, strings.TrimSuffix(s, exFaultLetter[f])
			}
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return &Result{Trace: []byte(fmt.Sprintf("bad schedule step %q\n", s))}
		}
		a.proc = n
		alts = append(alts, a)
	}
	w := newExploreWorld(spec, broken, false)
	x := w.ex
	w.setup()
	w.faultsOn = false
	exSetup(w, spec)
	x.start()
	x.active = true
	last := -1
	for i := 0; !w.stopped; i++ {
		var a exAlt
		switch en := x.enabled(); {
		case i < len(alts):
			a = alts[i]
		case len(en) == 0:
		case last >= 0 && !x.procs[last].done:
			// Past the schedule given: each process on to its end, in order.
			a = exAlt{proc: last}
		default:
			a = exAlt{proc: en[0]}
		}
		if len(x.enabled()) == 0 {
			break
		}
		if a.proc >= len(x.procs) || x.procs[a.proc].done {
			w.tracef(nil, "schedule step %d (%s): no such process can step", i, a)
			break
		}
		w.step = i + 1
		w.tracef(nil, "schedule step %d: %s (%s) %s", i, a, x.procs[a.proc].name, x.procs[a.proc].ex.op)
		x.apply(a)
		last = a.proc
	}
	x.finish(len(x.enabled()) == 0)
	w.tally()
	w.res.Trace = w.trace.Bytes()
	return w.res
}
