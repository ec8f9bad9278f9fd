package bench

import (
	"container/heap"
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
// is the running process's time. Runs are deterministic for a seed: the
// heap breaks ties by the order processes were queued.
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
}

func newVsched() *vsched { return &vsched{back: make(chan struct{}), live: map[*vproc]bool{}} }

// Now is the running process's virtual time (clock.Clock).
func (s *vsched) Now() time.Time { return s.cur.t }

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
		if !s.stopping {
			f(p)
		}
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
	if p.s.stopping {
		return
	}
	p.s.push(p)
	p.s.back <- struct{}{}
	<-p.wake
}

// sleep advances p's time by d and yields.
func (p *vproc) sleep(d time.Duration) {
	p.t = p.t.Add(d)
	p.yield()
}

// sleepUntil moves p's time to t (if later) and yields.
func (p *vproc) sleepUntil(t time.Time) {
	if t.After(p.t) {
		p.t = t
	}
	p.yield()
}

// park hands control back without queueing p: it runs again only when
// another process wakes it (wakeAt).
func (p *vproc) park() {
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
// (partitions of a stream batch or a sweep, drained side by side).
type vgroup struct {
	parent  *vproc
	limit   int
	queue   []func(p *vproc)
	active  int
	waiting bool
	end     time.Time
	name    string
}

func newVgroup(parent *vproc, name string, limit int) *vgroup {
	return &vgroup{parent: parent, limit: max(limit, 1), name: name, end: parent.t}
}

// Go queues f; a worker process starts it at the parent's current time, or
// when a worker frees up.
func (g *vgroup) Go(f func(p *vproc)) {
	g.queue = append(g.queue, f)
	if g.active >= g.limit {
		return
	}
	g.active++
	g.parent.s.spawn(g.name, g.parent.t, func(w *vproc) {
		for len(g.queue) > 0 {
			f := g.queue[0]
			g.queue = g.queue[1:]
			f(w)
		}
		g.active--
		if w.t.After(g.end) {
			g.end = w.t
		}
		if g.active == 0 && g.waiting {
			g.parent.s.wakeAt(g.parent, g.end)
		}
	})
}

// Wait parks the parent until every queued function has returned; the
// parent resumes at the time the last one finished.
func (g *vgroup) Wait() {
	if g.active == 0 && len(g.queue) == 0 {
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
