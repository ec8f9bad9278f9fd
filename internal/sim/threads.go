package sim

import (
	"fmt"
	"slices"
	"strings"
)

// A coroutine process (a drainer, a function's invocation, a library
// driver) runs as threads: its main goroutine and the goroutines the
// engine starts for work that may run at once (outbox.Parallel: a drain's
// lane groups, a sweep's partitions, a claim's updates). Exactly one thread
// of one process runs at a time; every other one is parked at a protocol
// point (before a DynamoDB call, inside a provider call), waits for the
// scheduler to start it, or waits for the threads it started to finish.
// The scheduler chooses which runnable thread of a process goes on (the
// schedule's source, drawn only when there is a choice), so a seed
// replays exactly whatever the concurrency.

// thread is one goroutine of a coroutine process.
type thread struct {
	name   string
	resume chan struct{}
	point  string // where it is parked ("" before it started)
	// waits: the group of threads it started and waits for (Parallel).
	waits *group
	// in: the group it belongs to (nil: the main thread).
	in    *group
	index int
	// freed: it gave its place in its group to the next call before it
	// returned (outbox.Parallel's free).
	freed bool
}

// group is one Parallel call: n calls of f, at most limit at once.
type group struct {
	parent           *thread
	n, limit         int
	f                func(int, func())
	started, running int
	finished         int
	id               int
}

// event is what a thread tells the scheduler when it stops running.
type event struct {
	t     *thread
	point string // a protocol point; "" the main thread ended
	kind  eventKind
}

type eventKind int

const (
	evPark  eventKind = iota // parked at point
	evSpawn                  // started a group and waits for it
	evDone                   // a thread of a group finished
	evEnd                    // the main thread ended: the process is done
)

// spawn runs f(0..n-1) as threads of p, at most limit at once, and returns
// when every one has returned (called by p's running thread).
func (p *proc) spawn(n, limit int, f func(int, func())) {
	t := p.cur
	p.ngroups++
	t.waits = &group{parent: t, n: n, limit: limit, f: f, id: p.ngroups}
	p.events <- event{t: t, kind: evSpawn}
	<-t.resume
	t.waits = nil
}

// runnable lists the threads of p that may go on, in a fixed order: a
// parked thread, a group's next call (started as a new thread), a parent
// whose group finished. forced: one thread must go on before any other.
func (p *proc) runnable() (opts []func() *thread, forced bool) {
	var out []func() *thread
	for _, t := range p.threads {
		t := t
		switch g := t.waits; {
		case g == nil:
			if strings.Contains(t.point, "fence-extend") {
				// It holds the hold's extending lock across this call
				// (outbox fenceCovers): nothing else of the process may
				// run before it, or a thread waiting for the lock would
				// never park.
				return []func() *thread{func() *thread { return t }}, true
			}
			out = append(out, func() *thread { return t })
		case g.finished == g.n:
			out = append(out, func() *thread { return t })
		case g.started < g.n && g.running < g.limit:
			out = append(out, func() *thread { return p.startThread(g) })
		}
	}
	return out, false
}

// startThread starts the next call of g as a new thread, parked before
// its first instruction.
func (p *proc) startThread(g *group) *thread {
	i := g.started
	g.started++
	g.running++
	c := &thread{name: fmt.Sprintf("%s.%d", g.parent.name, i), resume: make(chan struct{}), in: g, index: i}
	if g.parent.name == "" {
		c.name = fmt.Sprintf("g%d.%d", g.id, i)
	}
	p.threads = append(p.threads, c)
	go func() {
		<-c.resume
		g.f(i, func() { c.free() })
		p.events <- event{t: c, kind: evDone}
	}()
	return c
}

// resume runs one runnable thread of p (chosen by the schedule's source
// when there is a choice) until it stops, and returns what it said.
func (w *world) resume(p *proc) event {
	opts, forced := p.runnable()
	if len(opts) == 0 {
		panic(fmt.Sprintf("sim: %s has no runnable thread", p.name))
	}
	pick := opts[0]
	if len(opts) > 1 {
		pick = opts[w.srng.IntN(len(opts))]
	}
	if p.want != nil && !forced && p.want.waits == nil && slices.Contains(p.threads, p.want) {
		// A schedule resumes this thread (schedules.go): it is parked.
		want := p.want
		pick = func() *thread { return want }
	}
	p.want = nil
	t := pick()
	p.cur = t
	w.running = p
	t.resume <- struct{}{}
	ev := <-p.events
	w.running = nil
	switch ev.kind {
	case evDone:
		g := ev.t.in
		ev.t.free()
		g.finished++
		p.dropThread(ev.t)
	case evPark:
		ev.t.point = ev.point
	}
	return ev
}

// free gives t's place in its group to the group's next call (called by
// t, the running thread, or for it once it finished).
func (t *thread) free() {
	if !t.freed {
		t.freed = true
		t.in.running--
	}
}

func (p *proc) dropThread(t *thread) {
	for i, x := range p.threads {
		if x == t {
			p.threads = append(p.threads[:i], p.threads[i+1:]...)
			return
		}
	}
}

// parallel is the engines' outbox.Parallel: inside a coroutine process the
// calls become threads the scheduler interleaves; elsewhere (an atomic
// step) they run one after another.
func (w *world) parallel(n, limit int, f func(int, func())) {
	p := w.running
	if p == nil {
		for i := range n {
			f(i, func() {})
		}
		return
	}
	w.res.Faults["x.parallel_groups"]++
	p.spawn(n, limit, f)
}
