package httpapi

import (
	"context"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Outbox is the part of the engine the HTTP API calls. *outbox.Engine
// satisfies it; tests also use a fake. Errors follow the
// engine's contract (ENGINE_API.md): outbox.ErrNotFound, *outbox.TransitionError,
// *outbox.ValidationError, outbox.ErrUnknownKind, *outbox.PayloadError,
// *outbox.TooLargeError; anything else is a 500 unless it is a DynamoDB
// throttle (429).
type Outbox interface {
	Enqueue(ctx context.Context, p outbox.EnqueueParams) (*outbox.EnqueueResult, error)
	EnqueueBatch(ctx context.Context, ps []outbox.EnqueueParams) ([]outbox.EnqueueResult, error)
	ActionGet(ctx context.Context, id string) (*outbox.Action, error)
	ActionList(ctx context.Context, p outbox.ActionListParams) (*outbox.ActionListResult, error)
	Admit(ctx context.Context, id string) (*outbox.Action, error)
	Cancel(ctx context.Context, id string) (*outbox.Action, error)
	EraseSubject(ctx context.Context, workspaceID, subjectID string) (int, error)
	// DeliveryGet reads an action's delivery evidence (nil: none, or its
	// kind keeps none).
	DeliveryGet(ctx context.Context, a *outbox.Action) (*outbox.Delivery, error)
}
