package bench

import (
	"bytes"
	"container/heap"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// vsched is the scale model's virtual-time scheduler: a discrete-event
// simulation whose processes are goroutines running real engine code.
// Exactly one of them runs at any moment; each has its own virtual time,
// and the scheduler always resumes the one whose time is earliest, so every
// DynamoDB call reaches the embedded DynamoDB in time order and the table
// sees one consistent history. A process gives control back only at its
// DynamoDB calls (modelDB), its provider calls, its sleeps and its waits;
// between them it runs at its own time, which the calls advance.
//
// The scheduler is itself the clock every engine of the model reads: Now
// is the running process's time. The heap breaks ties by the order
// processes were queued, so a run is deterministic for a seed except for
// the order in which one process's kids (below) reach the table among
// themselves.
type vsched struct {
	h    procHeap
	cur  *vproc
	back chan struct{}
	seq  uint64
	live map[*vproc]bool
	// stopping: shutdown resumes every live process once; from then on its
	// yields, sleeps and waits return at once and its DynamoDB calls fail,
	// so it runs to its end without handing control back.
	stopping bool

	// Goroutines the engine starts itself (a drain's lane groups, up to
	// DrainParams.Concurrency at once) are kids of the process that was
	// running: each keeps its own time, from its parent's, and runs its
	// calls without yielding — the parent's lane groups run side by side
	// in one turn of the scheduler, as they run side by side on Lambda.
	// The parent takes the latest of its kids' times when it next runs
	// (fold). procs maps a process's goroutine to it.
	mu    sync.Mutex
	procs map[uint64]*vproc
	kids  map[uint64]*kid
}

// kid is an engine goroutine of a process (see vsched.kids).
type kid struct {
	parent *vproc
	t      time.Time
	listed bool // in parent.kids
}

// actor is what a DynamoDB or provider call runs on: a process, or a kid.
type actor interface {
	now() time.Time
	advance(d time.Duration) // spend d of the actor's time (a call)
	wait(d time.Duration)    // sleep d (a process yields, a kid does not)
	stopped() bool
	roleOf() string
}

func (k *kid) now() time.Time          { return k.t }
func (k *kid) advance(d time.Duration) { k.t = k.t.Add(d) }
func (k *kid) wait(d time.Duration)    { k.t = k.t.Add(d) }
func (k *kid) stopped() bool           { return k.parent.s.stopping }
func (k *kid) roleOf() string          { return k.parent.role }

func (p *vproc) now() time.Time          { p.s.fold(p); return p.t }
func (p *vproc) advance(d time.Duration) { p.t = p.t.Add(d) }
func (p *vproc) wait(d time.Duration)    { p.sleep(d) }
func (p *vproc) roleOf() string          { return p.role }

// goid is the running goroutine's id.
func goid() uint64 {
	var b [64]byte
	n := runtime.Stack(b[:], false)
	f := bytes.Fields(b[:n])
	if len(f) < 2 {
		return 0
	}
	id, _ := strconv.ParseUint(string(f[1]), 10, 64)
	return id
}

// self is the actor of the running goroutine: its process, or a kid of the
// process running now.
func (s *vsched) self() actor {
	g := goid()
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.procs[g]; p != nil {
		s.foldLocked(p)
		return p
	}
	k := s.kids[g]
	if k == nil {
		if s.cur == nil {
			return nil
		}
		k = &kid{parent: s.cur, t: s.cur.t}
		s.kids[g] = k
	}
	if !k.listed {
		k.listed = true
		k.parent.kids = append(k.parent.kids, k)
	}
	return k
}

// fold moves p's time to the latest of its kids'.
func (s *vsched) fold(p *vproc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.foldLocked(p)
}

func (s *vsched) foldLocked(p *vproc) {
	for _, k := range p.kids {
		if k.t.After(p.t) {
			p.t = k.t
		}
		k.listed = false
	}
	p.kids = p.kids[:0]
}

// vproc is one process of the model: an enqueue invocation pool member, a
// drainer slot, the stream poller, a scheduled function.
type vproc struct {
	s     *vsched
	name  string
	t     time.Time
	wake  chan struct{}
	seq   uint64
	index int // position in the heap, -1 when not queued
	// role is what the process stands for in the accounting ("enqueue",
	// "stream", "sweep", "reaper"); group workers take their parent's.
	role string
	kids []*kid
}

func newVsched() *vsched {
	return &vsched{back: make(chan struct{}), live: map[*vproc]bool{}, procs: map[uint64]*vproc{}, kids: map[uint64]*kid{}}
}

// Now is the calling process's or kid's virtual time (clock.Clock).
func (s *vsched) Now() time.Time {
	if a := s.self(); a != nil {
		return a.now()
	}
	return s.cur.t
}

// spawn starts f as a new process at time at; it first runs when the
// scheduler reaches that time.
func (s *vsched) spawn(name string, at time.Time, f func(p *vproc)) *vproc {
	p := &vproc{s: s, name: name, t: at, wake: make(chan struct{}), index: -1}
	if s.stopping {
		return p // never started
	}
	s.live[p] = true
	s.push(p)
	go func() {
		<-p.wake
		g := goid()
		s.mu.Lock()
		s.procs[g] = p
		s.mu.Unlock()
		if !s.stopping {
			f(p)
		}
		s.fold(p)
		s.mu.Lock()
		delete(s.procs, g)
		s.mu.Unlock()
		p.index = -2 // done: never queued again
		delete(s.live, p)
		s.back <- struct{}{}
	}()
	return p
}

// shutdown ends every process: each is resumed once and runs to its end
// (see stopping). Processes must check stopped() in their loops.
func (s *vsched) shutdown() {
	s.stopping = true
	for len(s.live) > 0 {
		var p *vproc
		for q := range s.live {
			if p == nil || q.seq < p.seq {
				p = q
			}
		}
		s.cur = p
		p.wake <- struct{}{}
		<-s.back
	}
	s.h = nil
}

// stopped reports whether the model is shutting down.
func (p *vproc) stopped() bool { return p.s.stopping }

func (s *vsched) push(p *vproc) {
	s.seq++
	p.seq = s.seq
	heap.Push(&s.h, p)
}

// run resumes processes in time order until none is queued at or before
// until. It returns with every process parked, queued or done.
func (s *vsched) run(until time.Time) {
	for s.h.Len() > 0 {
		p := s.h[0]
		if p.t.After(until) {
			return
		}
		heap.Pop(&s.h)
		s.cur = p
		p.wake <- struct{}{}
		<-s.back
	}
}

// yield lets every process queued before p's time run first: p is queued at
// its own time and resumes when it is the earliest.
func (p *vproc) yield() {
	p.s.fold(p)
	if p.s.stopping {
		return
	}
	p.s.push(p)
	p.s.back <- struct{}{}
	<-p.wake
}

// sleep advances p's time by d and yields.
func (p *vproc) sleep(d time.Duration) {
	p.s.fold(p)
	p.t = p.t.Add(d)
	p.yield()
}

// sleepUntil moves p's time to t (if later) and yields.
func (p *vproc) sleepUntil(t time.Time) {
	p.s.fold(p)
	if t.After(p.t) {
		p.t = t
	}
	p.yield()
}

// park hands control back without queueing p: it runs again only when
// another process wakes it (wakeAt).
func (p *vproc) park() {
	p.s.fold(p)
	if p.s.stopping {
		return
	}
	p.s.back <- struct{}{}
	<-p.wake
}

// wakeAt queues a parked process at time t, or at its own time when that is
// later. Only the running process may call it, with t at or after its own
// time.
func (s *vsched) wakeAt(p *vproc, t time.Time) {
	if p.index != -1 {
		return // already queued (or done)
	}
	if t.After(p.t) {
		p.t = t
	}
	s.push(p)
}

// vgroup runs functions as processes, at most limit at once, and lets its
// parent wait for all of them: the fork and join of the model's drainers
// (partitions of a stream batch or a sweep, drained side by side). A
// function may give its place back before it returns (its release
// argument): the next queued function then starts at once, as
// outbox.Engine.Sweep lets a partition that claimed give its place to the
// next.
type vgroup struct {
	parent  *vproc
	limit   int
	queue   []func(w *vproc, release func())
	held    int // places taken
	running int // worker processes not yet ended
	waiting bool
	end     time.Time
	name    string
}

func newVgroup(parent *vproc, name string, limit int) *vgroup {
	return &vgroup{parent: parent, limit: max(limit, 1), name: name, end: parent.t}
}

// Go queues f; a worker process starts it at the parent's current time, or
// when a place frees up.
func (g *vgroup) Go(f func(w *vproc, release func())) {
	g.queue = append(g.queue, f)
	if g.held < g.limit {
		g.worker(g.parent.t)
	}
}

// worker takes a place and starts a worker process at time at: it runs
// queued functions until none is left or one of them gave its place back.
func (g *vgroup) worker(at time.Time) {
	g.held++
	g.running++
	w := g.parent.s.spawn(g.name, at, func(w *vproc) {
		holds := true
		release := func() {
			if !holds {
				return
			}
			holds = false
			g.held--
			if len(g.queue) > 0 && g.held < g.limit {
				g.worker(w.now())
			}
		}
		for holds && len(g.queue) > 0 {
			f := g.queue[0]
			g.queue = g.queue[1:]
			f(w, release)
		}
		if holds {
			g.held--
		}
		w.s.fold(w)
		g.running--
		if w.t.After(g.end) {
			g.end = w.t
		}
		if g.running == 0 && g.waiting {
			g.parent.s.wakeAt(g.parent, g.end)
		}
	})
	w.role = g.parent.role
}

// Wait parks the parent until every queued function has returned; the
// parent resumes at the time the last one finished.
func (g *vgroup) Wait() {
	if g.running == 0 && len(g.queue) == 0 {
		return
	}
	g.waiting = true
	g.parent.park()
	g.waiting = false
}

type procHeap []*vproc

func (h procHeap) Len() int { return len(h) }
func (h procHeap) Less(i, j int) bool {
	if !h[i].t.Equal(h[j].t) {
		return h[i].t.Before(h[j].t)
	}
	return h[i].seq < h[j].seq
}
func (h procHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *procHeap) Push(x any) {
	p := x.(*vproc)
	p.index = len(*h)
	*h = append(*h, p)
}
func (h *procHeap) Pop() any {
	old := *h
	n := len(old)
	p := old[n-1]
	old[n-1] = nil
	p.index = -1
	*h = old[:n-1]
	return p
}
