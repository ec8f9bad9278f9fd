// Package ferry is the Go library of Ferry, a durable, fenced outbox on
// DynamoDB, in library mode: a Go service enqueues actions (also as items for
// its own TransactWriteItems, so an action exists exactly when its change
// commits), reads, admits, cancels and erases them, registers its own kinds
// with their adapters, and runs its own drainer, reaper and retention.
//
// The package ferrytest gives a service's tests what Ferry's own tests use:
// the embedded DynamoDB, a manual clock and a drain that runs until idle.
// docs/design.md describes the table and the protocols; docs/api.md the
// whole public contract.
package ferry

import (
	"context"
	"fmt"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/librarybridge"
	"github.com/ferryhq/ferry/internal/outbox"
)

// Outbox runs Ferry's protocols on one table, in library mode: enqueue (also
// as items for the caller's own transaction), reads, admit and cancel,
// erasure, and what a service needs to run its own drainer, reaper and
// retention.
type Outbox struct {
	engine *outbox.Engine
}

func init() {
	librarybridge.EngineOf = func(o any) *outbox.Engine { return o.(*Outbox).engine }
}

// Config is the engine's configuration; zero fields take their defaults.
type Config = outbox.Config

// DynamoDB is the subset of *dynamodb.Client Ferry calls.
type DynamoDB = outbox.DynamoDB

// Registry holds one adapter per kind.
type Registry = outbox.Registry

// Action is one effect on the outside world.
type Action = outbox.Action

// State is where an action is in its lifecycle.
type State = outbox.State

// StopReason says why an action ended.
type StopReason = outbox.StopReason

// EnqueueParams describes an action to enqueue.
type EnqueueParams = outbox.EnqueueParams

// EnqueueResult is the action an enqueue created or found.
type EnqueueResult = outbox.EnqueueResult

// MaxBatchEnqueue is the most actions one EnqueueBatch takes.
const MaxBatchEnqueue = outbox.MaxBatchEnqueue

// DrainParams tunes a drain; DrainResult counts what it did.
type (
	DrainParams = outbox.DrainParams
	DrainResult = outbox.DrainResult
)

// ReapResult and RetainResult count what the reaper and retention did.
type (
	ReapResult   = outbox.ReapResult
	RetainResult = outbox.RetainResult
)

// PreparedEnqueue holds the items that create an action, for the caller's
// own TransactWriteItems.
type PreparedEnqueue = outbox.PreparedEnqueue

// ActionListParams filters a listing; ActionListResult is one page.
type (
	ActionListParams = outbox.ActionListParams
	ActionListResult = outbox.ActionListResult
)

// Adapter carries out one kind; KindSpec declares it; Attempt is what it
// sees of one attempt; Result is its verdict.
type (
	Adapter      = outbox.Adapter
	KindSpec     = outbox.KindSpec
	Attempt      = outbox.Attempt
	Result       = outbox.Result
	Outcome      = outbox.Outcome
	Preparer     = outbox.Preparer
	ReadBacker   = outbox.ReadBacker
	EndedHook    = outbox.EndedHook
	EndedAction  = outbox.EndedAction
	PayloadError = outbox.PayloadError
)

// DeliveryClass is what an adapter's provider lets Ferry promise.
type DeliveryClass = outbox.DeliveryClass

// The delivery classes.
const (
	ReadBack           = outbox.ReadBack
	IdempotentReceiver = outbox.IdempotentReceiver
	AtMostOnce         = outbox.AtMostOnce
)

// The states of an action.
const (
	StatePROPOSED  = outbox.StatePROPOSED
	StateADMITTED  = outbox.StateADMITTED
	StateEXECUTING = outbox.StateEXECUTING
	StateDONE      = outbox.StateDONE
	StateUNCERTAIN = outbox.StateUNCERTAIN
	StateFAILED    = outbox.StateFAILED
	StateCANCELLED = outbox.StateCANCELLED
)

// Clock tells the time; Observer receives the engine's events.
type (
	Clock    = clock.Clock
	Observer = outbox.Observer
)

// Errors the outbox returns.
var (
	ErrNotFound    = outbox.ErrNotFound
	ErrUnknownKind = outbox.ErrUnknownKind
)

// TransitionError (a refused state change), ValidationError (a field
// refused, named), TooLargeError (a payload over the limit),
// BatchItemError (which action of a batch was refused, wrapping why) and
// LaneBusyError (a lane's tail kept moving under concurrent enqueues:
// nothing written, retry) carry data; match them with errors.As.
type (
	TransitionError = outbox.TransitionError
	ValidationError = outbox.ValidationError
	TooLargeError   = outbox.TooLargeError
	BatchItemError  = outbox.BatchItemError
	LaneBusyError   = outbox.LaneBusyError
)

// Result constructors for adapters.
var (
	Done      = outbox.Done
	Retry     = outbox.Retry
	Defer     = outbox.Defer
	Reread    = outbox.Reread
	Uncertain = outbox.Uncertain
	Failed    = outbox.Failed
	Cancelled = outbox.Cancelled
)

// NewRegistry returns an empty registry; register every kind the service
// enqueues or drains.
func NewRegistry() *Registry { return outbox.NewRegistry() }

// Option changes how New builds an engine.
type Option func(*options)

type options struct {
	clk  Clock
	opts []outbox.Option
}

// WithClock sets the engine's clock (the system clock by default).
func WithClock(c Clock) Option { return func(o *options) { o.clk = c } }

// WithObserver sets the engine's Observer (metrics and logs).
func WithObserver(obs Observer) Option {
	return func(o *options) { o.opts = append(o.opts, outbox.WithObserver(obs)) }
}

// New builds an outbox on db (a *dynamodb.Client in production) for the
// kinds in reg.
func New(db DynamoDB, reg *Registry, cfg Config, opts ...Option) (*Outbox, error) {
	o := options{clk: clock.System{}}
	for _, f := range opts {
		f(&o)
	}
	e, err := outbox.New(db, o.clk, reg, cfg, o.opts...)
	if err != nil {
		return nil, fmt.Errorf("ferry: %w", err)
	}
	return &Outbox{engine: e}, nil
}

// EnsureTable creates the table, its indexes and its TTL setting when the
// table does not exist (for tests and tables not managed by the CDK stack).
func (o *Outbox) EnsureTable(ctx context.Context) error { return o.engine.EnsureTable(ctx) }

// Config returns the configuration with its defaults applied.
func (o *Outbox) Config() Config { return o.engine.Config() }

// Enqueue records one action. A second enqueue with the same workspace and
// idempotency key returns the first action (Existing set) and changes
// nothing.
func (o *Outbox) Enqueue(ctx context.Context, p EnqueueParams) (*EnqueueResult, error) {
	return o.engine.Enqueue(ctx, p)
}

// EnqueueBatch records up to MaxBatchEnqueue actions atomically.
func (o *Outbox) EnqueueBatch(ctx context.Context, ps []EnqueueParams) ([]EnqueueResult, error) {
	return o.engine.EnqueueBatch(ctx, ps)
}

// EnqueueItems builds the items that create an action, for the caller to
// append to its own TransactWriteItems; PreparedEnqueue.Resolve explains a
// failed transaction (an idempotency key already used, say). Send them at
// once: items older than 30 seconds (a retry's included) must be prepared
// again, since the partition they name may have been retired meanwhile.
func (o *Outbox) EnqueueItems(ctx context.Context, p EnqueueParams) (*PreparedEnqueue, error) {
	return o.engine.EnqueueItems(ctx, p)
}

// ActionGet reads one action by id; ErrNotFound when there is none.
func (o *Outbox) ActionGet(ctx context.Context, id string) (*Action, error) {
	return o.engine.ActionGet(ctx, id)
}

// ActionList lists a workspace's actions, one page at a time.
func (o *Outbox) ActionList(ctx context.Context, p ActionListParams) (*ActionListResult, error) {
	return o.engine.ActionList(ctx, p)
}

// Admit turns a PROPOSED action into an ADMITTED one.
func (o *Outbox) Admit(ctx context.Context, id string) (*Action, error) {
	return o.engine.Admit(ctx, id)
}

// Cancel cancels a PROPOSED or ADMITTED action that has not started.
func (o *Outbox) Cancel(ctx context.Context, id string) (*Action, error) {
	return o.engine.Cancel(ctx, id)
}

// EraseSubject deletes a subject's actions and their idempotency records in
// a workspace, in every state, and returns how many actions it erased.
func (o *Outbox) EraseSubject(ctx context.Context, workspaceID, subjectID string) (int, error) {
	return o.engine.EraseSubject(ctx, workspaceID, subjectID)
}

// Sweep drains every partition (the scheduled drainer's run).
func (o *Outbox) Sweep(ctx context.Context, p DrainParams) (*DrainResult, error) {
	return o.engine.Sweep(ctx, p)
}

// DrainPartition drains one partition (what a stream record wakes).
func (o *Outbox) DrainPartition(ctx context.Context, partition int, p DrainParams) (*DrainResult, error) {
	return o.engine.DrainPartition(ctx, partition, p)
}

// PartitionOf returns the partition named by a stream record's pk.
func (o *Outbox) PartitionOf(pk string) (int, bool) { return o.engine.PartitionOf(pk) }

// Reap ends what lost leases make final, cancels expired actions and
// reports the backlog (the reaper's run).
func (o *Outbox) Reap(ctx context.Context) (*ReapResult, error) { return o.engine.Reap(ctx) }

// Retain deletes ended actions past their TTL that DynamoDB has not removed
// yet, and trims past the row cap (the retention run).
func (o *Outbox) Retain(ctx context.Context) (*RetainResult, error) { return o.engine.Retain(ctx) }
