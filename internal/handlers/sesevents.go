package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/ferryhq/ferry/internal/adapters/email"
	"github.com/ferryhq/ferry/internal/outbox"
	"github.com/ferryhq/ferry/internal/telemetry"
)

// DeliveryRecorder is the part of the engine the SES events handler uses
// (*outbox.Engine satisfies it).
type DeliveryRecorder interface {
	DeliveryRecord(ctx context.Context, id string, ev outbox.DeliveryEvent) (*outbox.DeliveryRecordResult, error)
}

// The metrics of the SES events function (besides the Stack dimension).
const (
	// MetricDeliveryEvents counts the SES events recorded as evidence
	// [Status].
	MetricDeliveryEvents = "DeliveryEvents"
	// MetricDeliveryEventsDropped counts the SES events dropped [Reason]:
	// UNKNOWN_ACTION (no such action: never was, past its retention, or not
	// an email), ERASED (its action was erased), NOT_FERRY (no
	// ferry_action_id tag), NOT_EVIDENCE (an event type that is not
	// evidence, or a record that does not decode).
	MetricDeliveryEventsDropped = "DeliveryEventsDropped"
	// MetricUncertainConfirmed counts UNCERTAIN actions whose evidence
	// proves they went out, once per action [Kind].
	MetricUncertainConfirmed = "UncertainConfirmed"
)

// SESEventsHandler is the sesevents function: an EventBridge rule hands it
// each SES event (Send, Delivery, Bounce, Complaint, Reject, DeliveryDelay)
// of a Ferry email, which it records as delivery evidence beside the
// email's action without changing the action. Events it cannot place are
// dropped and counted; a DynamoDB failure is returned, so that Lambda's
// asynchronous retries try the event again.
type SESEventsHandler struct {
	Engine DeliveryRecorder
	Obs    *telemetry.Observer
	Log    *slog.Logger
}

// SESEventResponse answers an invocation (for tests and logs).
type SESEventResponse struct {
	Outcome string `json:"outcome"` // RECORDED, DUPLICATE, or the reason it was dropped
	Status  string `json:"status,omitempty"`
}

// Invoke records one SES event.
func (h *SESEventsHandler) Invoke(ctx context.Context, ev events.EventBridgeEvent) (*SESEventResponse, error) {
	defer flushObserver(h.Obs, h.Log)
	se, err := email.ParseSESEvent(ev.Detail)
	if err != nil {
		reason := "NOT_EVIDENCE"
		if errors.Is(err, email.ErrNotFerry) {
			reason = "NOT_FERRY"
		}
		return h.dropped(ctx, ev, reason, err), nil
	}
	res, err := h.Engine.DeliveryRecord(ctx, se.ActionID, se.DeliveryEvent)
	if err != nil {
		h.Log.ErrorContext(ctx, "recording delivery evidence failed", slog.String("event.id", ev.ID),
			slog.String(telemetry.KeyActionID, se.ActionID), slog.Any("error", err))
		return nil, fmt.Errorf("sesevents: %w", err)
	}
	switch res.Outcome {
	case outbox.DeliveryUnknown:
		return h.dropped(ctx, ev, "UNKNOWN_ACTION", nil), nil
	case outbox.DeliveryErased:
		return h.dropped(ctx, ev, "ERASED", nil), nil
	}
	status := string(se.Status)
	if res.Outcome == outbox.DeliveryRecorded {
		h.Obs.Metrics.Count(MetricDeliveryEvents, 1, telemetry.Dim{Name: "Status", Value: status})
	}
	if res.UncertainConfirmed {
		h.Obs.Metrics.Count(MetricUncertainConfirmed, 1, telemetry.Dim{Name: "Kind", Value: res.Action.Kind})
	}
	h.Log.InfoContext(ctx, "delivery evidence", slog.String("event.id", ev.ID),
		slog.String(telemetry.KeyActionID, res.Action.ID), slog.String(telemetry.KeyActionKind, res.Action.Kind),
		slog.String("delivery.status", status), slog.String("outcome", string(res.Outcome)),
		slog.Bool("uncertain_confirmed", res.UncertainConfirmed))
	return &SESEventResponse{Outcome: string(res.Outcome), Status: status}, nil
}

func (h *SESEventsHandler) dropped(ctx context.Context, ev events.EventBridgeEvent, reason string, err error) *SESEventResponse {
	h.Obs.Metrics.Count(MetricDeliveryEventsDropped, 1, telemetry.Dim{Name: "Reason", Value: reason})
	attrs := []slog.Attr{slog.String("event.id", ev.ID), slog.String("detail_type", ev.DetailType), slog.String("reason", reason)}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	h.Log.LogAttrs(ctx, slog.LevelInfo, "SES event dropped", attrs...)
	return &SESEventResponse{Outcome: reason}
}
