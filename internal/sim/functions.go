package sim

import (
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/ferryhq/ferry/internal/handlers"
	"github.com/ferryhq/ferry/internal/outbox"
)

// The drainer as the functions and the library run it (issue 27): a
// scheduled invocation of the drainer function sweeps every partition
// (handlers.DrainerHandler.HandleSchedule, Engine.Sweep, several partitions
// and lane groups at once), a stream invocation drains the partitions its
// batch of change records names (HandleStream, Engine.DrainPartition), the
// API's run-now carries out one action (Engine.RunNow), a user's test
// drains everything (Engine.Drain), and a library driver claims and
// finishes its own attempts (library.go). Each is a coroutine process; its
// time budget is the function's timeout on the simulated clock.

// invoke starts one drainer process of h, of a form drawn from the seed.
func (w *world) invoke(h *host) {
	switch x := w.rng.IntN(20); {
	case x < 6:
		w.startDrainer(h, w.rng.IntN(w.sweepRange(h)))
	case x < 10:
		w.startSweep(h)
	case x < 14:
		w.startStream(h)
	case x < 16:
		w.startRunNow(h)
	case x < 17:
		w.startDrain(h)
	default:
		w.startLibrary(h)
	}
}

var discardLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// container is the owner a function invocation of h drains under: the
// Lambda log stream, the same for every invocation of one container
// (coldstart). One container runs one invocation at a time: an invocation
// goes to an idle container of h, or to a new one (a cold start).
func (w *world) container(h *host) string {
	busy := map[string]bool{}
	for _, q := range w.procs {
		busy[q.owner] = true
	}
	for i := 0; ; i++ {
		name := fmt.Sprintf("c%d-%s", i, h.name)
		if i >= h.containers {
			h.containers = i + 1
		}
		if !busy[name] {
			return name
		}
	}
}

// drainerHandler is the drainer function of h for one invocation.
func (w *world) drainerHandler(h *host, owner string, concurrency, partitions int, timeout time.Duration) *handlers.DrainerHandler {
	return &handlers.DrainerHandler{
		Engine: handlers.EnginePorts{Engine: h.eng, Owner: owner, Concurrency: concurrency, Partitions: partitions},
		Clock:  h.clk,
		// The invocation's context carries no deadline on the simulated
		// clock: its timeout is the budget's fallback.
		Budget:      handlers.Budget{Fallback: timeout, Reserve: 5 * time.Second},
		Log:         discardLog,
		WriteMargin: w.cfg.WriteMargin,
		Parallel:    w.parallel,
	}
}

// functionTimeout draws a drainer function's timeout: mostly past the write
// margin, now and then too short to start anything.
func (w *world) functionTimeout() time.Duration {
	if w.rng.IntN(10) == 0 {
		return randDur(w.rng, time.Second, w.cfg.WriteMargin)
	}
	return randDur(w.rng, w.cfg.WriteMargin+5*time.Second, 4*w.cfg.Lease)
}

// newDrainer makes a coroutine drainer process of h under owner.
func (w *world) newDrainer(h *host, owner, what string) *proc {
	p := w.newProc("drainer", h)
	p.owner = owner
	if owner == "" {
		// The engine draws the owner (DrainParams.Owner empty): the
		// process goes by the one its fence takes name.
		p.adoptOwner = true
	}
	if h.old {
		w.res.Faults["build.old_drainer"]++
	}
	w.res.Faults["drainer."+what]++
	return p
}

// startSweep starts a scheduled invocation of the drainer function.
func (w *world) startSweep(h *host) {
	owner := w.container(h)
	p := w.newDrainer(h, owner, "schedule")
	conc, parts, timeout := 1+w.rng.IntN(4), 1+w.rng.IntN(4), w.functionTimeout()
	dh := w.drainerHandler(h, owner, conc, parts, timeout)
	w.startCoroutine(p, func() {
		w.called("Sweep")
		res, err := dh.HandleSchedule(p.ctx(), events.EventBridgeEvent{ID: p.name, DetailType: "Scheduled Event"})
		p.err = err
		if res != nil {
			p.res = &outbox.DrainResult{Claimed: res.Claimed, Started: res.Started, Ended: res.Ended, Released: res.Released, More: res.More}
		}
	})
	w.tracef(p, "scheduled sweep as %s (timeout %s, %d partitions and %d lane groups at once)", owner, timeout, parts, conc)
	w.stepProc(p)
}

// streamBatch is at most how many change records a stream invocation
// gets.
const streamBatch = 40

// startStream starts a stream invocation of the drainer function: the next
// records of the table's stream after the last checkpoint, of which the
// handler drains the partitions they name. The records it reports as
// failed are delivered again (the checkpoint stays at the first of them).
func (w *world) startStream(h *host) {
	changes := w.db.Changes(w.cfg.Table, w.streamAt)
	if len(changes) == 0 {
		return
	}
	changes = changes[:min(len(changes), 1+w.rng.IntN(streamBatch))]
	ev := events.DynamoDBEvent{}
	for _, c := range changes {
		ev.Records = append(ev.Records, events.DynamoDBEventRecord{
			EventName: string(c.EventName),
			Change: events.DynamoDBStreamRecord{
				Keys:           map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute(str(c.Keys, "pk")), "sk": events.NewStringAttribute(str(c.Keys, "sk"))},
				SequenceNumber: strconv.FormatUint(c.Seq, 10),
			},
		})
	}
	next := changes[len(changes)-1].Seq + 1
	owner := w.container(h)
	p := w.newDrainer(h, owner, "stream")
	dh := w.drainerHandler(h, owner, 1+w.rng.IntN(4), 1, w.functionTimeout())
	w.startCoroutine(p, func() {
		w.called("DrainPartition")
		w.called("PartitionOf")
		resp, err := dh.HandleStream(p.ctx(), ev)
		p.err = err
		at := next
		for _, f := range resp.BatchItemFailures {
			seq, _ := strconv.ParseUint(f.ItemIdentifier, 10, 64)
			at = min(at, seq)
		}
		if len(resp.BatchItemFailures) > 0 {
			w.res.Faults["stream.redelivered"]++
		}
		if !p.killed && at > w.streamAt {
			// A dead invocation's batch is delivered again.
			w.streamAt = at
		}
	})
	w.tracef(p, "stream invocation as %s: %d records from %d", owner, len(changes), changes[0].Seq)
	w.stepProc(p)
}

// startRunNow starts the API's run-now of an ADMITTED action (Engine.RunNow).
func (w *world) startRunNow(h *host) {
	rs := w.liveRows(func(r *row) bool {
		return state(r.item) == outbox.StateADMITTED && str(r.item, "kind") != kindFuture && h.decodes(str(r.item, "kind"), str(r.item, "var"))
	})
	if len(rs) == 0 {
		return
	}
	r := rs[w.rng.IntN(len(rs))]
	id := str(r.item, "id")
	p := w.newDrainer(h, "", "run_now")
	w.startCoroutine(p, func() {
		w.called("RunNow")
		a, err := h.eng.RunNow(p.ctx(), id)
		p.err = err
		if err == nil {
			w.tracef(p, "run-now %s: %s", r.id, a.State)
		}
	})
	w.tracef(p, "run-now %s", r.id)
	w.stepProc(p)
}

// startDrain starts Engine.Drain, as a user's test drains: every waiting
// action made due, every partition swept until nothing is due.
func (w *world) startDrain(h *host) {
	p := w.newDrainer(h, "", "drain")
	p.makesDue = true
	w.called("Drain")
	w.startCoroutine(p, func() { p.err = h.eng.Drain(p.ctx()) })
	w.tracef(p, "drain (as a user's test)")
	w.stepProc(p)
}
