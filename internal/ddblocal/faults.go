package ddblocal

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// FaultKind is what an injected fault does to one call.
type FaultKind int

const (
	// FaultNone lets the call run normally.
	FaultNone FaultKind = iota
	// FaultFailBefore fails the call before it changes anything.
	FaultFailBefore
	// FaultFailAfter runs the call (committing its writes) and then returns
	// an error: an ambiguous write, as when a response is lost.
	FaultFailAfter
	// FaultThrottle refuses the call with a throttling error, changing
	// nothing: ProvisionedThroughputExceededException (or Fault.Err) for a
	// single call, a cancelled transaction with a ThrottlingError reason for
	// TransactWriteItems and TransactGetItems.
	FaultThrottle
	// FaultConflict refuses the call as if another transaction held its
	// items: TransactionConflictException for a single-item call, a
	// cancelled transaction with TransactionConflict reasons for
	// TransactWriteItems.
	FaultConflict
)

// Fault is the decision for one call. Delay, when positive, is spent (through
// the DB's sleeper) before the call runs, whatever the kind.
type Fault struct {
	Kind  FaultKind
	Delay time.Duration
	// Err replaces the default error of FaultFailBefore and FaultFailAfter
	// (an InternalServerError), and of FaultThrottle outside transactions,
	// when set.
	Err error
}

// Call names one call to the engine for a FaultPlan.
type Call struct {
	// Op is the operation name, e.g. "TransactWriteItems".
	Op string
	// Table is the table the call names; for calls over several tables, the
	// first one in the request.
	Table string
}

// FaultPlan decides, for each call, whether a fault is injected. The engine
// asks it once per call, before taking any lock. Implementations must be
// safe for concurrent use.
type FaultPlan interface {
	Decide(c Call) Fault
}

// FaultPlanFunc adapts a function to FaultPlan.
type FaultPlanFunc func(c Call) Fault

// Decide calls f.
func (f FaultPlanFunc) Decide(c Call) Fault { return f(c) }

// FaultRates are the probabilities, per call, of each fault in a RandomFaults
// plan. Their sum must not exceed 1.
type FaultRates struct {
	FailBefore float64
	FailAfter  float64
	Throttle   float64
	Conflict   float64
	// Delay is the probability of a delay, drawn uniformly up to MaxDelay,
	// independent of the other faults.
	Delay    float64
	MaxDelay time.Duration
	// Ops, when not empty, limits the faults to these operations.
	Ops []string
}

// RandomFaults is a FaultPlan drawing faults from a seeded source: the same
// seed and the same sequence of calls give the same faults.
type RandomFaults struct {
	mu    sync.Mutex
	rng   *rand.Rand
	rates FaultRates
	ops   map[string]bool
}

// NewRandomFaults returns a plan that injects faults at the given rates,
// deterministically from seed.
func NewRandomFaults(seed uint64, rates FaultRates) *RandomFaults {
	r := &RandomFaults{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), rates: rates}
	if len(rates.Ops) > 0 {
		r.ops = map[string]bool{}
		for _, op := range rates.Ops {
			r.ops[op] = true
		}
	}
	return r
}

// Decide draws the fault for one call.
func (r *RandomFaults) Decide(c Call) Fault {
	if r.ops != nil && !r.ops[c.Op] {
		return Fault{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var f Fault
	x := r.rng.Float64()
	switch rt := r.rates; {
	case x < rt.FailBefore:
		f.Kind = FaultFailBefore
	case x < rt.FailBefore+rt.FailAfter:
		f.Kind = FaultFailAfter
	case x < rt.FailBefore+rt.FailAfter+rt.Throttle:
		f.Kind = FaultThrottle
	case x < rt.FailBefore+rt.FailAfter+rt.Throttle+rt.Conflict:
		f.Kind = FaultConflict
	}
	if r.rates.Delay > 0 && r.rng.Float64() < r.rates.Delay && r.rates.MaxDelay > 0 {
		f.Delay = time.Duration(r.rng.Int64N(int64(r.rates.MaxDelay))) + 1
	}
	return f
}

// ErrInjected is wrapped by injected errors that have no DynamoDB shape of
// their own (e.g. a timeout-like failure chosen by the plan's Err).
var ErrInjected = errors.New("ddblocal: injected fault")

// Sleeper spends an injected delay. The simulator passes one that advances
// its manual clock instead of sleeping.
type Sleeper func(ctx context.Context, d time.Duration) error

func realSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func conflictError() error {
	return &types.TransactionConflictException{Message: aws.String("Transaction is ongoing for the item")}
}

// ItemOperations are the item calls (reads and writes of items), the ones
// DynamoDB throttles under load: a FaultRates.Ops for throttling tests.
func ItemOperations() []string {
	return []string{"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan",
		"BatchGetItem", "BatchWriteItem", "TransactGetItems", "TransactWriteItems"}
}
