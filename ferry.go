// Package ferry is the Go library of Ferry, a durable, fenced outbox on
// DynamoDB: a Go service builds an action's items and appends them to its own
// TransactWriteItems, so the action exists exactly when its change commits;
// it reads actions, and registers custom kinds with their adapters for its
// own drainer.
//
// The types are those of the engine (internal/outbox), re-exported here.
package ferry

import (
	"fmt"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/outbox"
)

// Engine runs the outbox protocols on one table: enqueue (also as items for
// the caller's own transaction), reads, admit and cancel, draining, reaper,
// retention and erasure.
type Engine = outbox.Engine

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

// Errors the engine returns.
var (
	ErrNotFound    = outbox.ErrNotFound
	ErrUnknownKind = outbox.ErrUnknownKind
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

// New builds an engine on db for the kinds in reg.
func New(db DynamoDB, reg *Registry, cfg Config, opts ...Option) (*Engine, error) {
	o := options{clk: clock.System{}}
	for _, f := range opts {
		f(&o)
	}
	e, err := outbox.New(db, o.clk, reg, cfg, o.opts...)
	if err != nil {
		return nil, fmt.Errorf("ferry: %w", err)
	}
	return e, nil
}
