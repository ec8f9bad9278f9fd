package outbox

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// ErrNotFound is returned when an action does not exist (or was erased, or
// its TTL passed).
var ErrNotFound = errors.New("outbox: action not found")

// ErrUnknownKind is returned (wrapped with the kind) when no adapter is
// registered for a kind. HTTP 422.
var ErrUnknownKind = errors.New("outbox: unknown kind")

// ErrFenceRefused is returned when a partition's claim fence is held by
// another drainer or a newer claim version.
var ErrFenceRefused = errors.New("outbox: claim fence refused")

// TransitionError says a state transition was refused by the store: the
// action is not in a state that allows it. HTTP 409.
type TransitionError struct {
	ID   string
	From State // the state found ("" when unknown)
	To   State
}

func (e *TransitionError) Error() string {
	if e.From == "" {
		return fmt.Sprintf("outbox: action %s cannot move to %s", e.ID, e.To)
	}
	return fmt.Sprintf("outbox: action %s cannot move from %s to %s", e.ID, e.From, e.To)
}

// ValidationError says an input field (or a Config field) is invalid.
// HTTP 400; Field names the field.
type ValidationError struct {
	Field   string
	Message string
}

func (e *ValidationError) Error() string { return "outbox: invalid " + e.Field + ": " + e.Message }

// Named returns the message with every field name in names replaced by
// its value, for front ends that set Config from flags or variables:
// Named(map[string]string{"Lease": "--lease"}) turns "Lease (5s) ..." into
// "--lease (5s) ...". Names match whole words only.
func (e *ValidationError) Named(names map[string]string) string {
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, regexp.QuoteMeta(k))
	}
	if len(keys) == 0 {
		return e.Message
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	re := regexp.MustCompile(`\b(` + strings.Join(keys, "|") + `)\b`)
	return re.ReplaceAllStringFunc(e.Message, func(w string) string { return names[w] })
}

// TooLargeError says a payload is over Config.MaxPayload. HTTP 413.
type TooLargeError struct {
	Size, Max int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("outbox: payload of %d bytes is over the limit of %d bytes", e.Size, e.Max)
}

// BatchItemError says which action of a batch (EnqueueBatch) was refused:
// Err is the refusal (a *ValidationError, *PayloadError, *TooLargeError or
// ErrUnknownKind), Index the action's position in the batch. Enqueue
// returns Err itself.
type BatchItemError struct {
	Index int
	Err   error
}

func (e *BatchItemError) Error() string {
	return fmt.Sprintf("outbox: action %d of the batch: %v", e.Index, e.Err)
}

func (e *BatchItemError) Unwrap() error { return e.Err }

// LaneBusyError says an enqueue gave up after Tries transactions refused
// because a lane's tail (design.md §3.4) kept moving: other enqueues into
// the same lane landed first each time. Nothing of it was written. It is
// the lane's limit, not a fault: retry after a short wait (HTTP 429 with
// Retry-After), or send a lane's actions together in one EnqueueBatch,
// which moves the tail once for all of them (docs/api.md, "A hot lane").
type LaneBusyError struct {
	Tries int
	Err   error // the last refusal
}

func (e *LaneBusyError) Error() string {
	return fmt.Sprintf("outbox: the lane was busy: %d tries refused as other enqueues into it landed first; retry after a short wait, or enqueue the lane's actions in one batch", e.Tries)
}

func (e *LaneBusyError) Unwrap() error { return e.Err }
