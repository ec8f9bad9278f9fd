package console

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/outbox"
	"github.com/ferryhq/ferry/internal/telemetry"
)

// Recorder keeps the last hour of a local stack's metrics, minute by
// minute, and what it saw of the latest actions' attempts. `ferry dev`
// feeds it as the engine's Observer (it passes every event on to next);
// `ferry local` feeds it the functions' EMF lines (IngestEMF). It is the
// chart's Metrics there.
type Recorder struct {
	next outbox.Observer
	clk  clock.Clock

	mu      sync.Mutex
	minutes [SeriesMinutes]minute
	// attempts: what was seen of each recent action's attempts, at most
	// maxTracked actions (the oldest go first).
	attempts map[string][]AttemptEvent
	order    []string
	started  map[string]time.Time // attempt start, by action id
}

// minute is one minute's counts.
type minute struct {
	at                                    int64 // the minute's start, Unix seconds; 0: unused
	enqueued, delivered, failed, deferred float64
	backlog                               *float64
}

// maxTracked bounds the actions whose attempts a Recorder keeps, and
// maxEvents the events kept per action.
const (
	maxTracked = 2000
	maxEvents  = 40
)

// AttemptEvent is one thing this process saw of an action's attempt.
type AttemptEvent struct {
	At      time.Time
	Attempt int
	Epoch   int64
	What    string        // "started", or the adapter's outcome (DONE, RETRY, DEFER, ...)
	To      string        // the state the outcome put the action in
	Took    time.Duration // from the attempt's start
	Wait    time.Duration // a Defer's or Reread's wait (the provider's Retry-After), a Retry's minimum
	Detail  string        // the adapter's error as logged (never a payload)
}

// NewRecorder returns a Recorder passing the engine's events on to next
// (nil: nowhere).
func NewRecorder(clk clock.Clock, next outbox.Observer) *Recorder {
	if next == nil {
		next = outbox.NopObserver{}
	}
	return &Recorder{next: next, clk: clk, attempts: map[string][]AttemptEvent{}, started: map[string]time.Time{}}
}

// bucket returns the minute of t (a fresh one when its slot held an older
// minute); r.mu is held.
func (r *Recorder) bucket(t time.Time) *minute {
	m := t.Truncate(time.Minute).Unix()
	b := &r.minutes[(m/60)%SeriesMinutes]
	if b.at != m {
		*b = minute{at: m}
	}
	return b
}

func (r *Recorder) count(t time.Time, f func(*minute)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r.bucket(t))
}

// Enqueued counts n new actions.
func (r *Recorder) Enqueued(n int) {
	r.count(r.clk.Now(), func(m *minute) { m.enqueued += float64(n) })
}

// Backlog records the due actions the reaper measured.
func (r *Recorder) Backlog(due int) {
	r.count(r.clk.Now(), func(m *minute) {
		v := float64(due)
		if m.backlog == nil || v > *m.backlog {
			m.backlog = &v
		}
	})
}

// Source implements Metrics.
func (r *Recorder) Source() string { return "this process's metrics" }

// Series implements Metrics.
func (r *Recorder) Series(_ context.Context, now time.Time) (*Series, error) {
	s := newSeries(now, r.Source())
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.minutes {
		i := s.at(time.Unix(b.at, 0))
		if b.at == 0 || i < 0 {
			continue
		}
		s.Enqueued[i], s.Delivered[i], s.Failed[i], s.Deferred[i] = ptr(b.enqueued), ptr(b.delivered), ptr(b.failed), ptr(b.deferred)
		s.Backlog[i] = b.backlog
	}
	// Minutes the process ran without events count zero; before it, none.
	for i := range s.Minutes {
		if s.Enqueued[i] == nil && i > 0 && s.Enqueued[i-1] != nil {
			s.Enqueued[i], s.Delivered[i], s.Failed[i], s.Deferred[i] = ptr(0), ptr(0), ptr(0), ptr(0)
		}
	}
	return s, nil
}

func ptr(v float64) *float64 { return &v }

// countEnded books an ending: DONE is delivered, a cancellation neither,
// anything else failed (an exhausted retry ends on a RETRY outcome).
func countEnded(m *minute, outcome string, n float64) {
	switch outcome {
	case "DONE":
		m.delivered += n
	case "CANCELLED":
	default:
		m.failed += n
	}
}

// AttemptStarted implements outbox.Observer.
func (r *Recorder) AttemptStarted(a *outbox.Action) {
	r.next.AttemptStarted(a)
	now := r.clk.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started[a.ID] = now
	r.note(a.ID, AttemptEvent{At: now, Attempt: a.Attempt, Epoch: a.Epoch, What: "started"})
}

// AttemptFinished implements outbox.AttemptObserver.
func (r *Recorder) AttemptFinished(a *outbox.Action, res outbox.Result, to outbox.State) {
	if o, ok := r.next.(outbox.AttemptObserver); ok {
		o.AttemptFinished(a, res, to)
	}
	now := r.clk.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := AttemptEvent{At: now, Attempt: a.Attempt, Epoch: a.Epoch, What: res.Outcome.String(), To: string(to), Wait: res.Wait}
	if t, ok := r.started[a.ID]; ok {
		ev.Took = now.Sub(t)
		delete(r.started, a.ID)
	}
	if res.Err != nil {
		ev.Detail = clip(res.Err.Error(), 300)
	}
	r.note(a.ID, ev)
	if res.Outcome == outbox.OutcomeDefer && to == outbox.StateADMITTED {
		r.bucket(now).deferred++
	}
}

// ActionEnded implements outbox.Observer.
func (r *Recorder) ActionEnded(a *outbox.Action, outcome outbox.Outcome, reason outbox.StopReason) {
	r.next.ActionEnded(a, outcome, reason)
	r.count(r.clk.Now(), func(m *minute) { countEnded(m, outcome.String(), 1) })
}

// ClaimFinished implements outbox.Observer.
func (r *Recorder) ClaimFinished(partition int, claimed, conflicts int, short bool) {
	r.next.ClaimFinished(partition, claimed, conflicts, short)
}

// FenceRefused implements outbox.Observer.
func (r *Recorder) FenceRefused(a *outbox.Action) { r.next.FenceRefused(a) }

// note adds an event to an action's record; r.mu is held.
func (r *Recorder) note(id string, ev AttemptEvent) {
	evs, ok := r.attempts[id]
	if !ok {
		if len(r.order) >= maxTracked {
			delete(r.attempts, r.order[0])
			delete(r.started, r.order[0])
			r.order = r.order[1:]
		}
		r.order = append(r.order, id)
	}
	if len(evs) >= maxEvents {
		evs = evs[1:]
	}
	r.attempts[id] = append(evs, ev)
}

// Attempts returns what the Recorder saw of the action's attempts, oldest
// first.
func (r *Recorder) Attempts(id string) []AttemptEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]AttemptEvent(nil), r.attempts[id]...)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// IngestEMF books one EMF line of a function's log (`ferry local`):
// ActionsEnqueued, ActionsEnded (by Outcome), Deferrals and the total
// BacklogDepth (the line without a Partition). Other lines are ignored.
func (r *Recorder) IngestEMF(line []byte) {
	var doc map[string]any
	if json.Unmarshal(line, &doc) != nil {
		return
	}
	aws, ok := doc["_aws"].(map[string]any)
	if !ok {
		return
	}
	at := r.clk.Now()
	if ts, ok := aws["Timestamp"].(float64); ok {
		at = time.UnixMilli(int64(ts))
	}
	num := func(k string) (float64, bool) { v, ok := doc[k].(float64); return v, ok }
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.bucket(at)
	if v, ok := num(telemetry.MetricActionsEnqueued); ok {
		m.enqueued += v
	}
	if v, ok := num("ActionsEnded"); ok {
		outcome, _ := doc["Outcome"].(string)
		countEnded(m, outcome, v)
	}
	if v, ok := num(telemetry.MetricDeferrals); ok {
		m.deferred += v
	}
	if _, part := doc["Partition"]; !part {
		if v, ok := num("BacklogDepth"); ok && (m.backlog == nil || v > *m.backlog) {
			m.backlog = &v
		}
	}
}

var (
	_ outbox.Observer        = (*Recorder)(nil)
	_ outbox.AttemptObserver = (*Recorder)(nil)
	_ Metrics                = (*Recorder)(nil)
)
