package sim

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferryhq/ferry/internal/outbox"
)

// errKilled is what every call of a killed process gets: the Lambda is gone,
// nothing it would still send reaches DynamoDB or a provider.
var errKilled = errors.New("sim: process killed")

type ctxKey struct{}

// proc is one process: a drainer invocation (a coroutine the scheduler
// resumes one call at a time) or an atomic step (enqueue, reaper, ...).
type proc struct {
	id        int
	name      string
	kind      string // drainer, reaper, retain, enqueue, api, erase, setup
	host      *host
	owner     string
	partition int
	co        bool
	// A coroutine's threads (threads.go): the running one, every one not
	// finished, and where they report to the scheduler.
	cur     *thread
	threads []*thread
	events  chan event
	ngroups int
	want    *thread // the thread the next resume runs (a schedule's choice)
	killed  bool
	done    bool
	// dieAfter > 0: the process is killed before its call number
	// dieAfter+1 (Options.KillEnqueues); calls counts them.
	dieAfter, calls int
	// journalLost: a retention journal write of this process failed (its
	// endings are left to TTL alone, design.md §3.6).
	journalLost bool
	at          string
	fenceV      int64
	// entered: the actions whose in-flight entry this drainer set by a
	// fence write of its own (the only ones it may claim, ADR 0016).
	entered map[string]bool
	erasing [2]string // erase: workspace, subject
	// adoptOwner: the engine draws this drainer's owner (RunNow, Drain):
	// the process goes by the one each of its fence takes names.
	adoptOwner bool
	// makesDue: the process may bring waiting actions forward (Drain's
	// makeDue: a user's test).
	makesDue bool
	pending  map[*callRec]bool
	// deferred: action id -> the epoch whose provider call answered Defer
	// (the deferral-bound checker tells a deferral's write from a release).
	deferred map[string]int64
	// errs counts the process's calls that failed; stripTried the records
	// it sent a strip of (the ended-shape checker, world.settleStrips).
	errs int
	// ncalls counts its DynamoDB calls, errCalls those that failed.
	ncalls     int
	errCalls   []int
	stripTried map[string]bool
	res        *outbox.DrainResult
	err        error
	// ex is the explorer's view of the process (explore.go; nil in a
	// random run).
	ex *exProcState
}

func procOf(ctx context.Context) *proc {
	p, _ := ctx.Value(ctxKey{}).(*proc)
	return p
}

func (w *world) newProc(kind string, h *host) *proc {
	w.nproc++
	p := &proc{id: w.nproc, kind: kind, host: h, pending: map[*callRec]bool{}, deferred: map[string]int64{}, stripTried: map[string]bool{}}
	p.name = fmt.Sprintf("%s%d@%s", kind[:1], w.nproc, h.name)
	return p
}

func (p *proc) ctx() context.Context { return context.WithValue(context.Background(), ctxKey{}, p) }

// yield hands control back to the scheduler at a protocol point and waits
// to be resumed. A killed process no longer yields: it runs to its end with
// every call refused.
func (p *proc) yield(point string) {
	if !p.co || p.killed {
		return
	}
	t := p.cur
	p.events <- event{t: t, point: point, kind: evPark}
	<-t.resume
}

// startCoroutine makes p a coroutine whose main thread runs body once the
// scheduler first resumes it.
func (w *world) startCoroutine(p *proc, body func()) {
	p.co = true
	p.events = make(chan event)
	main := &thread{resume: make(chan struct{})}
	p.threads = []*thread{main}
	go func() {
		<-main.resume
		body()
		p.events <- event{t: main, kind: evEnd}
	}()
	w.procs = append(w.procs, p)
}

// startDrainer starts a drainer invocation on a partition and runs it to
// its first protocol point.
func (w *world) startDrainer(h *host, part int) *proc {
	return w.startDrainerBatch(h, part, 0)
}

// startDrainerBatch is startDrainer claiming batch actions at a time (0:
// the configured batch).
func (w *world) startDrainerBatch(h *host, part, batch int) *proc {
	p := w.newProc("drainer", h)
	p.partition = part
	p.owner = fmt.Sprintf("d%d-%s", p.id, h.name)
	params := outbox.DrainParams{Owner: p.owner, Concurrency: 1, BatchSize: batch}
	if w.rng.IntN(3) > 0 {
		params.Deadline = h.now().Add(w.cfg.WriteMargin + randDur(w.rng, 0, 4*w.cfg.Lease))
		if !w.opt.Classic && !w.quiet && w.srng.IntN(10) == 0 {
			// An invocation near its own end: nothing may start.
			params.Deadline = h.now().Add(randDur(w.srng, 0, w.cfg.WriteMargin))
		}
	}
	if !w.opt.Classic {
		params.Concurrency = 1 + w.rng.IntN(4)
	}
	overlap := 0
	for _, q := range w.procs {
		if q.partition == part {
			overlap++
		}
	}
	if overlap > 0 {
		w.res.Faults["drainer.overlap"]++
	}
	if h.old {
		w.res.Faults["build.old_drainer"]++
	}
	w.called("DrainPartition")
	w.startCoroutine(p, func() { p.res, p.err = h.engine().DrainPartition(p.ctx(), part, params) })
	w.tracef(p, "start drainer on partition %d (deadline %v, %d others on it)", part, !params.Deadline.IsZero(), overlap)
	w.stepProc(p)
	return p
}

// stepProc resumes a drainer until its next protocol point or its end.
func (w *world) stepProc(p *proc) {
	ev := w.resume(p)
	tag := ""
	if ev.t.name != "" {
		tag = "[" + ev.t.name + "] "
	}
	switch ev.kind {
	case evEnd:
		w.endProc(p)
	case evPark:
		p.at = ev.point
		w.tracef(p, "> %s%s", tag, ev.point)
		w.atPark(p, ev.t)
	case evSpawn:
		w.tracef(p, "> %sstarts %d calls, at most %d at once", tag, ev.t.waits.n, ev.t.waits.limit)
	case evDone:
		w.tracef(p, "> %sdone", tag)
	}
}

func (w *world) endProc(p *proc) {
	p.done = true
	for i, q := range w.procs {
		if q == p {
			w.procs = append(w.procs[:i], w.procs[i+1:]...)
			break
		}
	}
	switch {
	case p.killed:
		w.tracef(p, "dead")
	case p.err != nil:
		w.tracef(p, "ended with error: %v", p.err)
	case p.res != nil:
		r := p.res
		w.tracef(p, "done: claimed %d started %d ended %d released %d fence refusals %d conflicts %d more %v",
			r.Claimed, r.Started, r.Ended, r.Released, r.FenceRefusals, r.Conflicts, r.More)
	}
	for c := range p.pending {
		if c.flagged == "" {
			c.flagged = "its drainer ended before the outcome was written"
		}
	}
	w.settleStrips(p)
}

// stripDebt is an ended action whose idempotency record still carried its
// copy when the end landed, and the process that ended it (errs: its failed
// calls then).
type stripDebt struct {
	id   string
	p    *proc
	errs int
}

// settleStrips judges the strips p owed when it finishes: the engine writes
// a record's strip right after the end lands (design.md §3.5), so a process
// that finishes without having sent it broke ended-shape — unless it died,
// or a call of its failed after the end landed (it may not know the end
// landed, or the strip itself failed): that record keeps its copy until its
// key or its subject's erasure mends it (counted, the documented residual).
func (w *world) settleStrips(p *proc) {
	for pk, d := range w.stripOwed {
		if d.p != p {
			continue
		}
		delete(w.stripOwed, pk)
		if p.killed || p.stripTried[pk] || p.errs > d.errs {
			w.res.Faults["idem.copy_left"]++
			continue
		}
		w.violate("ended-shape", []string{d.id}, "ended action %s: %s finished and its idempotency record still carries its payload", d.id, p.name)
	}
}

// kill ends a drainer at its current protocol point: it never runs another
// call. Accepted provider calls whose outcome it had not written become
// ambiguous.
func (w *world) kill(p *proc) {
	w.tracef(p, "KILL before %s", p.at)
	w.res.Faults["drainer.kill"]++
	p.killed = true
	for c := range p.pending {
		c.flagged = "drainer killed before writing the outcome"
	}
	// It runs to its end: every call now fails, no thread parks (a
	// thread waiting for the threads it started waits for them to end).
	for steps := 0; !p.done; steps++ {
		if steps > 10000 {
			panic("sim: a killed process does not end")
		}
		w.stepProc(p)
	}
}

// runAtomic runs f as one step of a process that does not interleave.
func (w *world) runAtomic(kind string, h *host, f func(ctx context.Context, p *proc) error) *proc {
	p := w.newProc(kind, h)
	err := f(p.ctx(), p)
	if err != nil {
		w.tracef(p, "error: %v", err)
	}
	p.err = err
	w.settleStrips(p)
	return p
}
