package telemetry

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Observer turns the engine's events into metrics and logs. It implements
// outbox.Observer.
type Observer struct {
	Metrics *Metrics
	Log     *slog.Logger
}

var (
	_ outbox.Observer        = (*Observer)(nil)
	_ outbox.AttemptObserver = (*Observer)(nil)
)

// NewObserver returns an Observer over m and log.
func NewObserver(m *Metrics, log *slog.Logger) *Observer {
	return &Observer{Metrics: m, Log: log}
}

func actionAttrs(a *outbox.Action) []slog.Attr {
	return []slog.Attr{
		slog.String(KeyActionID, a.ID),
		slog.String(KeyActionKind, a.Kind),
		slog.String("state", string(a.State)),
		slog.Int("attempt", a.Attempt),
		slog.Int("partition", a.Partition),
	}
}

// AttemptStarted counts an attempt and logs it at debug level.
func (o *Observer) AttemptStarted(a *outbox.Action) {
	o.Metrics.Count("Attempts", 1, Dim{"Kind", a.Kind})
	o.Log.LogAttrs(context.Background(), slog.LevelDebug, "attempt started", actionAttrs(a)...)
}

// ActionEnded counts an ended action by kind, outcome and stop reason, and
// logs it.
func (o *Observer) ActionEnded(a *outbox.Action, outcome outbox.Outcome, reason outbox.StopReason) {
	o.Metrics.Count("ActionsEnded", 1,
		Dim{"Kind", a.Kind}, Dim{"Outcome", outcome.String()}, Dim{"StopReason", string(reason)})
	level := slog.LevelInfo
	if outcome == outbox.OutcomeUncertain || outcome == outbox.OutcomeFailed ||
		a.State == outbox.StateFAILED || a.State == outbox.StateUNCERTAIN {
		level = slog.LevelWarn
	}
	attrs := append(actionAttrs(a),
		slog.String("outcome", outcome.String()),
		slog.String("stop_reason", string(reason)))
	o.Log.LogAttrs(context.Background(), level, "action ended", attrs...)
}

// AttemptFinished counts a deferral (the provider's "not now" that put the
// action back to wait, design.md §7.2) by kind; other outcomes are counted
// by Attempts and ActionsEnded.
func (o *Observer) AttemptFinished(a *outbox.Action, res outbox.Result, to outbox.State) {
	if res.Outcome == outbox.OutcomeDefer && to == outbox.StateADMITTED {
		o.Metrics.Count(MetricDeferrals, 1, Dim{"Kind", a.Kind})
	}
}

// MetricDeferrals counts deferrals [Kind]; MetricActionsEnqueued counts new
// actions [Kind] (the enqueue function and ferry dev).
const (
	MetricDeferrals       = "Deferrals"
	MetricActionsEnqueued = "ActionsEnqueued"
)

// ClaimFinished counts claimed actions, conflicts and short batches.
func (o *Observer) ClaimFinished(partition int, claimed, conflicts int, short bool) {
	o.Metrics.Count("ClaimedActions", float64(claimed))
	o.Metrics.Count("ClaimConflicts", float64(conflicts))
	if short {
		o.Metrics.Count("ShortBatches", 1)
	}
	if conflicts > 0 || short {
		o.Log.LogAttrs(context.Background(), slog.LevelDebug, "claim finished",
			slog.Int("partition", partition), slog.Int("claimed", claimed),
			slog.Int("conflicts", conflicts), slog.Bool("short", short))
	}
}

// FenceRefused counts a write the fence refused and logs it.
func (o *Observer) FenceRefused(a *outbox.Action) {
	o.Metrics.Count("FenceRefusals", 1, Dim{"Kind", a.Kind})
	o.Log.LogAttrs(context.Background(), slog.LevelWarn, "fence refused", actionAttrs(a)...)
}

// Backlog is one partition's backlog, as the reaper measures it: DueDepth
// and OldestDueAge (BacklogDepth, OldestDueAge) count what the drainer
// could claim, BlockedDepth and OldestBlockedAge what waits behind an
// earlier live member of its lane (design.md §8).
type Backlog struct {
	Partition        int
	DueDepth         int
	BlockedDepth     int
	ClaimedDepth     int
	StuckLaneHeads   int
	OldestDueAge     float64 // seconds
	OldestBlockedAge float64 // seconds
}

// RecordBacklog writes the backlog gauges: one line per partition and one
// line of totals (oldest age: the largest).
func (o *Observer) RecordBacklog(bs []Backlog) error {
	var total Backlog
	for _, b := range bs {
		if err := o.Metrics.Gauges([]Dim{{"Partition", strconv.Itoa(b.Partition)}}, backlogGauges(b)...); err != nil {
			return err
		}
		total.DueDepth += b.DueDepth
		total.BlockedDepth += b.BlockedDepth
		total.OldestBlockedAge = max(total.OldestBlockedAge, b.OldestBlockedAge)
		total.ClaimedDepth += b.ClaimedDepth
		total.StuckLaneHeads += b.StuckLaneHeads
		total.OldestDueAge = max(total.OldestDueAge, b.OldestDueAge)
	}
	return o.Metrics.Gauges(nil, backlogGauges(total)...)
}

func backlogGauges(b Backlog) []Gauge {
	return []Gauge{
		{Name: "BacklogDepth", Unit: UnitCount, Value: float64(b.DueDepth)},
		{Name: "BlockedDepth", Unit: UnitCount, Value: float64(b.BlockedDepth)},
		{Name: "ClaimedDepth", Unit: UnitCount, Value: float64(b.ClaimedDepth)},
		{Name: "StuckLaneHeads", Unit: UnitCount, Value: float64(b.StuckLaneHeads)},
		{Name: "OldestDueAge", Unit: UnitSeconds, Value: b.OldestDueAge},
		{Name: "OldestBlockedAge", Unit: UnitSeconds, Value: b.OldestBlockedAge},
	}
}

// Flush writes the accumulated counters.
func (o *Observer) Flush() error { return o.Metrics.Flush() }
