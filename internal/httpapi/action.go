package httpapi

import (
	"encoding/json"
	"time"

	"github.com/ferryhq/ferry/internal/outbox"
)

// actionJSON is an action as the API answers it (API.md). Every field is
// present; optional ones are null when unset, times are RFC 3339 UTC, and
// payload is absent once the action has ended.
type actionJSON struct {
	ID             string          `json:"id"`
	Kind           string          `json:"kind"`
	WorkspaceID    *string         `json:"workspace_id"`
	LaneKey        *string         `json:"lane_key"`
	IdempotencyKey *string         `json:"idempotency_key"`
	SubjectID      *string         `json:"subject_id"`
	State          outbox.State    `json:"state"`
	Attempt        int             `json:"attempt"`
	MaxAttempts    int             `json:"max_attempts"`
	StopReason     *string         `json:"stop_reason"`
	ReadbackRef    *string         `json:"readback_ref"`
	CreatedAt      *string         `json:"created_at"`
	NextAttemptAt  *string         `json:"next_attempt_at"`
	ExpiresAt      *string         `json:"expires_at"`
	EndedAt        *string         `json:"ended_at"`
	Payload        json.RawMessage `json:"payload,omitempty"`
	// Delivery is the action's delivery evidence (GET of one action only;
	// absent when there is none).
	Delivery *deliveryJSON `json:"delivery,omitempty"`
}

// deliveryJSON is an action's delivery evidence as the API answers it: the
// most telling event its provider reported.
type deliveryJSON struct {
	Status outbox.DeliveryStatus `json:"status"`
	At     string                `json:"at"`
	Detail string                `json:"detail"`
}

func newDeliveryJSON(d *outbox.Delivery) *deliveryJSON {
	if d == nil {
		return nil
	}
	return &deliveryJSON{Status: d.Status, At: *optTime(d.At), Detail: d.Detail}
}

func newActionJSON(a *outbox.Action) actionJSON {
	j := actionJSON{
		ID:             a.ID,
		Kind:           a.Kind,
		WorkspaceID:    optString(a.WorkspaceID),
		LaneKey:        optString(a.LaneKey),
		IdempotencyKey: optString(a.IdempotencyKey),
		SubjectID:      optString(a.SubjectID),
		State:          a.State,
		Attempt:        a.Attempt,
		MaxAttempts:    a.MaxAttempts,
		StopReason:     optString(string(a.StopReason)),
		ReadbackRef:    optString(a.ReadbackRef),
		CreatedAt:      optTime(a.CreatedAt),
		ExpiresAt:      optTime(a.ExpiresAt),
		EndedAt:        optTime(a.EndedAt),
	}
	// next_attempt_at only means something while the action waits to run.
	if !a.State.Ended() {
		j.NextAttemptAt = optTime(a.NextAttemptAt)
	}
	if !a.State.Ended() && len(a.Payload) > 0 {
		j.Payload = a.Payload
	}
	return j
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}
