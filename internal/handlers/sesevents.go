package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/ferryhq/ferry/internal/adapters/email"
	"github.com/ferryhq/ferry/internal/clock"
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
	// evidence, or a record that does not decode), and the events refused
	// as not SES's about this stack's email (sesRefusal): NOT_SES,
	// FOREIGN_ACCOUNT, OTHER_CONFIGURATION_SET, FUTURE,
	// MESSAGE_ID_MISMATCH.
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
//
// On AWS the EventBridge rule and the function's resource policy keep
// other events out; the handler checks anyway (defence in depth: an event
// it records stands as evidence of what happened to an email) and drops,
// counted, an event that is not from SES (source aws.ses and the
// detail-type of its record's type), from another account than the
// function's (when the invocation names the function's ARN), of another
// configuration set than ConfigurationSet (when set), dated more than
// SESEventSkew ahead of the clock, or about another message than the one
// the action sent (its readback_ref).
type SESEventsHandler struct {
	Engine DeliveryRecorder
	Obs    *telemetry.Observer
	Log    *slog.Logger
	// Clock dates "now" for the future check; default the system clock.
	Clock clock.Clock
	// ConfigurationSet is the stack's SES configuration set
	// (FERRY_SES_CONFIGURATION_SET), the one its rule routes; empty: any.
	ConfigurationSet string
}

// SESEventSkew is how far ahead of the function's clock an SES event may
// be dated: SES and Lambda read AWS's clocks, so more means a forged
// timestamp (one that would outrank every later event).
const SESEventSkew = time.Minute

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
	if reason, err := h.refusal(ctx, ev, se); reason != "" {
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
	case outbox.DeliveryMismatch:
		return h.dropped(ctx, ev, "MESSAGE_ID_MISMATCH", errors.New("the event's messageId is not the one SES gave the action (readback_ref)")), nil
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

// refusal says why an event is not SES's about this stack's email (a
// reason of MetricDeliveryEventsDropped and what was wrong), or "" when
// nothing is.
func (h *SESEventsHandler) refusal(ctx context.Context, ev events.EventBridgeEvent, se email.SESEvent) (string, error) {
	if want := email.SESDetailTypes[se.Type]; ev.Source != "aws.ses" || ev.DetailType != want {
		return "NOT_SES", fmt.Errorf("source %q and detail-type %q: want aws.ses and %q", ev.Source, ev.DetailType, want)
	}
	if acct := functionAccount(ctx); acct != "" && ev.AccountID != acct {
		return "FOREIGN_ACCOUNT", fmt.Errorf("account %q: the function runs in %q", ev.AccountID, acct)
	}
	if h.ConfigurationSet != "" && !slices.Contains(se.ConfigurationSets, h.ConfigurationSet) {
		return "OTHER_CONFIGURATION_SET", fmt.Errorf("configuration set %q: the stack's is %q", se.ConfigurationSets, h.ConfigurationSet)
	}
	clk := h.Clock
	if clk == nil {
		clk = clock.System{}
	}
	limit := clk.Now().Add(SESEventSkew)
	if se.At.After(limit) || ev.Time.After(limit) {
		return "FUTURE", fmt.Errorf("dated %s (event time %s), more than %s ahead of %s",
			se.At.UTC().Format(time.RFC3339Nano), ev.Time.UTC().Format(time.RFC3339), SESEventSkew, clk.Now().UTC().Format(time.RFC3339))
	}
	return "", nil
}

// functionAccount is the AWS account of the invoked function, from its
// ARN (arn:aws:lambda:REGION:ACCOUNT:function:NAME); "" when the
// invocation does not say (a test invoking the handler directly).
func functionAccount(ctx context.Context) string {
	lc, ok := lambdacontext.FromContext(ctx)
	if !ok {
		return ""
	}
	parts := strings.SplitN(lc.InvokedFunctionArn, ":", 6)
	if len(parts) < 6 || parts[0] != "arn" {
		return ""
	}
	return parts[4]
}
