package handlers

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/ferryhq/ferry/internal/outbox"
	"github.com/ferryhq/ferry/internal/telemetry"
)

// ReaperHandler is the reaper function: on each scheduled event it ends what
// lost leases make unrecoverable, cancels expired unstarted actions, and
// writes the backlog gauges of every partition.
type ReaperHandler struct {
	Engine Reaper
	Obs    *telemetry.Observer
	Log    *slog.Logger
}

// ReapResponse answers a reaper invocation.
type ReapResponse struct {
	Uncertain int `json:"uncertain"`
	Exhausted int `json:"exhausted"`
	Expired   int `json:"expired"`
	// BacklogDepth counts the actions the drainer could claim; BlockedDepth
	// the due actions waiting behind an earlier live member of their lane.
	BacklogDepth int `json:"backlog_depth"`
	BlockedDepth int `json:"blocked_depth"`
	ClaimedDepth int `json:"claimed_depth"`
}

// Invoke runs one reaper pass.
func (h *ReaperHandler) Invoke(ctx context.Context, ev events.EventBridgeEvent) (*ReapResponse, error) {
	defer flushObserver(h.Obs, h.Log)
	st, err := h.Engine.Reap(ctx)
	if err != nil {
		h.Log.ErrorContext(ctx, "reap failed", slog.String("event.id", ev.ID), slog.Any("error", err))
		return nil, fmt.Errorf("reaper: %w", err)
	}
	h.Obs.Metrics.Count("ReapedActions", float64(st.Uncertain), telemetry.Dim{Name: "StopReason", Value: string(outbox.StopLeaseLostAfterWrite)})
	h.Obs.Metrics.Count("ReapedActions", float64(st.Exhausted), telemetry.Dim{Name: "StopReason", Value: string(outbox.StopAttemptsExhausted)})
	h.Obs.Metrics.Count("ReapedActions", float64(st.Expired), telemetry.Dim{Name: "StopReason", Value: string(outbox.StopExpired)})
	resp := &ReapResponse{Uncertain: st.Uncertain, Exhausted: st.Exhausted, Expired: st.Expired}
	backlog := make([]telemetry.Backlog, 0, len(st.Backlog))
	for _, b := range st.Backlog {
		backlog = append(backlog, telemetry.Backlog{
			Partition: b.Partition, DueDepth: b.DueDepth, BlockedDepth: b.BlockedDepth, ClaimedDepth: b.ClaimedDepth,
			StuckLaneHeads: b.StuckLaneHeads, OldestDueAge: b.OldestDueAge.Seconds(), OldestBlockedAge: b.OldestBlockedAge.Seconds(),
		})
		resp.BacklogDepth += b.DueDepth
		resp.BlockedDepth += b.BlockedDepth
		resp.ClaimedDepth += b.ClaimedDepth
	}
	if err := h.Obs.RecordBacklog(backlog); err != nil {
		h.Log.ErrorContext(ctx, "writing backlog gauges failed", slog.Any("error", err))
	}
	h.Log.InfoContext(ctx, "reap finished", slog.String("event.id", ev.ID),
		slog.Int("uncertain", st.Uncertain), slog.Int("exhausted", st.Exhausted), slog.Int("expired", st.Expired),
		slog.Int("backlog_depth", resp.BacklogDepth), slog.Int("blocked_depth", resp.BlockedDepth), slog.Int("claimed_depth", resp.ClaimedDepth))
	return resp, nil
}

// RetentionHandler is the retention function: on each scheduled event it
// deletes ended actions whose TTL passed but DynamoDB has not removed yet,
// and trims ended actions past the row cap.
type RetentionHandler struct {
	Engine Retainer
	Obs    *telemetry.Observer
	Log    *slog.Logger
}

// RetainResponse answers a retention invocation.
type RetainResponse struct {
	Deleted int `json:"deleted"`
	Trimmed int `json:"trimmed"`
}

// Invoke runs one retention pass.
func (h *RetentionHandler) Invoke(ctx context.Context, ev events.EventBridgeEvent) (*RetainResponse, error) {
	defer flushObserver(h.Obs, h.Log)
	st, err := h.Engine.Retain(ctx)
	if err != nil {
		h.Log.ErrorContext(ctx, "retention failed", slog.String("event.id", ev.ID), slog.Any("error", err))
		return nil, fmt.Errorf("retention: %w", err)
	}
	h.Obs.Metrics.Count("RetainedDeletes", float64(st.Deleted), telemetry.Dim{Name: "Reason", Value: "TTL_LAG"})
	h.Obs.Metrics.Count("RetainedDeletes", float64(st.Trimmed), telemetry.Dim{Name: "Reason", Value: "ROW_CAP"})
	h.Log.InfoContext(ctx, "retention finished", slog.String("event.id", ev.ID),
		slog.Int("deleted", st.Deleted), slog.Int("trimmed", st.Trimmed))
	return &RetainResponse{Deleted: st.Deleted, Trimmed: st.Trimmed}, nil
}

func flushObserver(o *telemetry.Observer, log *slog.Logger) {
	if o == nil {
		return
	}
	if err := o.Flush(); err != nil {
		log.Error("flushing metrics failed", slog.Any("error", err))
	}
}
