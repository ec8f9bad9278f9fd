package outbox

import (
	"context"
	"encoding/json"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DeliveryClass is what an adapter's provider allows Ferry to promise
// (design.md §6).
type DeliveryClass int

// The delivery classes.
const (
	// ReadBack providers can find an earlier write: exactly once.
	ReadBack DeliveryClass = iota + 1
	// IdempotentReceiver providers deduplicate by a key Ferry sends: retries
	// after the fence are harmless. The claim that takes such an action sets
	// its fence (design.md §5; a lane member behind its group's head too, ADR
	// 0015): it is in flight from its claim on, and an erasure after the
	// claim does not recall it.
	IdempotentReceiver
	// AtMostOnce providers can neither be read back nor deduplicate: once the
	// write fence is set the action is never sent again.
	AtMostOnce
)

// String names the class.
func (c DeliveryClass) String() string {
	switch c {
	case ReadBack:
		return "read-back"
	case IdempotentReceiver:
		return "idempotent-receiver"
	case AtMostOnce:
		return "at-most-once"
	}
	return "unknown"
}

// VariantMode says how an adapter tells its payload variants apart.
type VariantMode int

// The variant modes.
const (
	// SingleShape: one payload shape, no variants.
	SingleShape VariantMode = iota
	// TaggedShape: a top-level string property of the payload names the variant.
	TaggedShape
	// KeySuffix: the last segment of the idempotency key (after the last
	// KeySeparator) names the variant.
	KeySuffix
)

// KindSpec declares a kind and what its adapter handles.
type KindSpec struct {
	Name          string        // the kind's name, e.g. "webhook"
	Class         DeliveryClass //
	InstanceLevel bool          // the kind has no workspace
	VariantMode   VariantMode   //
	TagProperty   string        // the payload property naming the variant (TaggedShape)
	KeySeparator  string        // separator of the idempotency key's segments (KeySuffix; default ":")
	Variants      []string      // the variants this build decodes (TaggedShape, KeySuffix)
	// Retention, when not zero, replaces the configured retention of ended
	// actions of this kind (it may only lengthen it).
	Retention time.Duration
	// DeliveryEvidence: the kind's provider reports what became of an
	// effect (SES's delivery events for email), and Engine.DeliveryRecord
	// may keep those reports beside its actions. Retention and erasure then
	// delete them with the action.
	DeliveryEvidence bool
}

// Adapter carries out one kind. It is the only code that talks to its
// provider. Optional behaviour comes from the Preparer, ReadBacker and
// EndedHook interfaces.
type Adapter interface {
	// Spec declares the kind.
	Spec() KindSpec
	// Validate decodes a payload of the given variant at enqueue time. An
	// error is a *PayloadError and refuses the enqueue (HTTP 422).
	Validate(variant string, payload json.RawMessage) error
	// Execute performs the effect. It is called only after the write fence
	// has passed, never inside a transaction, and must return before ctx's
	// deadline (which the engine sets inside the write margin).
	Execute(ctx context.Context, att *Attempt) Result
}

// Preparer is implemented by adapters that prepare the effect again before
// every attempt (before the fence), e.g. to drop a recipient who
// unsubscribed. A Result with an outcome other than OutcomeNone ends the
// attempt there: Cancelled, Failed, Defer or Retry.
type Preparer interface {
	Prepare(ctx context.Context, att *Attempt) Result
}

// ReadBacker is implemented by read-back adapters. ReadBack is called before
// the fence whenever an earlier attempt may have written. It answers Done
// (the effect exists; ReadbackRef set), OutcomeNone (proven absent and still
// wanted: go on to execute), Cancelled with StopAbsent (proven absent and not
// wanted now), or Reread / Retry when the provider cannot tell yet.
type ReadBacker interface {
	ReadBack(ctx context.Context, att *Attempt) Result
}

// EndedHook is implemented by adapters that add database writes to the
// transaction that ends an action of their kind. The items run in the same
// TransactWriteItems as the end; they must not touch the action's own item.
type EndedHook interface {
	Ended(ctx context.Context, ended EndedAction) ([]types.TransactWriteItem, error)
}

// Attempt is what an adapter sees of one attempt of an action.
type Attempt struct {
	Action   Action // a copy; Payload is set
	Number   int    // 1 for the first attempt
	Prepared any    // whatever Prepare left for Execute (set it on the Attempt)
	// MayHaveWritten is true when an earlier attempt passed its write fence
	// without a recorded outcome.
	MayHaveWritten bool
}

// EndedAction describes an action as it ends, for EndedHook.
type EndedAction struct {
	Action     Action // the action before the end (Payload set)
	State      State  // the terminal state it is entering
	StopReason StopReason
	Result     Result
}

// Outcome is an adapter's verdict on an attempt (design.md §6).
type Outcome int

// The outcomes. OutcomeNone means "no verdict: carry on" (from Prepare and
// ReadBack).
const (
	OutcomeNone Outcome = iota
	OutcomeDone
	OutcomeRetry
	OutcomeDefer
	OutcomeReread
	OutcomeUncertain
	OutcomeFailed
	OutcomeCancelled
	OutcomeAbandoned
)

var outcomeNames = [...]string{"NONE", "DONE", "RETRY", "DEFER", "REREAD", "UNCERTAIN", "FAILED", "CANCELLED", "ABANDONED"}

// String names the outcome in upper case, as metrics and logs show it.
func (o Outcome) String() string {
	if int(o) >= 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "UNKNOWN"
}

// Result is what an adapter returns from an attempt.
type Result struct {
	Outcome     Outcome
	StopReason  StopReason    // optional; a default per outcome is used when empty
	ReadbackRef string        // the provider's reference (Done)
	Wait        time.Duration // Defer and Reread: how long to wait; Retry: a minimum backoff (optional)
	Err         error         // the cause, for logs (never a payload)
}

// Done is a Result saying the provider confirmed the effect.
func Done(ref string) Result { return Result{Outcome: OutcomeDone, ReadbackRef: ref} }

// Retry is a Result saying the provider proved it holds nothing and a later
// attempt may work.
func Retry(err error) Result { return Result{Outcome: OutcomeRetry, Err: err} }

// Defer is a Result saying "not now, nothing written"; the attempt does not
// count.
func Defer(wait time.Duration, err error) Result {
	return Result{Outcome: OutcomeDefer, Wait: wait, Err: err}
}

// Reread is a Result saying the effect may exist and can be read back later.
func Reread(wait time.Duration, err error) Result {
	return Result{Outcome: OutcomeReread, Wait: wait, Err: err}
}

// Uncertain is a Result saying the effect may exist and cannot be checked.
func Uncertain(err error) Result { return Result{Outcome: OutcomeUncertain, Err: err} }

// Failed is a Result saying the provider refused, or nobody can receive it.
func Failed(reason StopReason, err error) Result {
	return Result{Outcome: OutcomeFailed, StopReason: reason, Err: err}
}

// Cancelled is a Result saying nothing should be written.
func Cancelled(reason StopReason, err error) Result {
	return Result{Outcome: OutcomeCancelled, StopReason: reason, Err: err}
}

// PayloadError is returned by Adapter.Validate for a payload the kind cannot
// carry out. Field names the offending JSON field (dotted path) when known.
type PayloadError struct {
	Field   string
	Message string
}

func (e *PayloadError) Error() string {
	if e.Field == "" {
		return "invalid payload: " + e.Message
	}
	return "invalid payload: " + e.Field + ": " + e.Message
}
