package outbox

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/ferryhq/ferry/internal/clock"
)

// Observer receives the engine's events for metrics and logs. It must never
// log payloads. Calls may come from several goroutines. ActionEnded's
// outcome is the one of the state the action ended in (OutcomeFailed for
// an action whose retries or deferrals ran out), its reason the stop
// reason.
type Observer interface {
	AttemptStarted(a *Action)
	ActionEnded(a *Action, outcome Outcome, reason StopReason)
	ClaimFinished(partition int, claimed, conflicts int, short bool)
	FenceRefused(a *Action)
}

// AttemptObserver is what an Observer implements to hear how each attempt
// went once its outcome's write landed: the action as its claim left it
// (attempt, epoch), the adapter's Result (its Err is written for logs:
// never a payload) and the state the write put the action in (ADMITTED
// after a Retry or a Defer, EXECUTING after a Reread, or an end).
type AttemptObserver interface {
	AttemptFinished(a *Action, res Result, to State)
}

// NopObserver is an Observer that does nothing.
type NopObserver struct{}

// AttemptStarted does nothing.
func (NopObserver) AttemptStarted(*Action) {}

// ActionEnded does nothing.
func (NopObserver) ActionEnded(*Action, Outcome, StopReason) {}

// ClaimFinished does nothing.
func (NopObserver) ClaimFinished(int, int, int, bool) {}

// FenceRefused does nothing.
func (NopObserver) FenceRefused(*Action) {}

// Option changes how New builds an Engine.
type Option func(*Engine)

// WithObserver sets the engine's Observer.
func WithObserver(o Observer) Option { return func(e *Engine) { e.obs = o } }

// WithRand sets the source of backoff jitter and keyless partition spread.
// The default is seeded from the clock's time at New, so a simulator that
// fixes the clock and passes its own source replays exactly.
func WithRand(r *rand.Rand) Option { return func(e *Engine) { e.rnd = r } }

// Sleeper waits d, or until ctx ends (then it returns ctx's error).
type Sleeper func(ctx context.Context, d time.Duration) error

// WithSleeper sets how the engine waits, which it does only between the
// tries of an enqueue refused by a lane tail that moved (design.md §4.3):
// a model's simulated time, or no wait at all. The default waits on a
// real timer.
func WithSleeper(s Sleeper) Option { return func(e *Engine) { e.sleep = s } }

// timerSleep is the default Sleeper.
func timerSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Engine carries out the outbox protocols on one table.
type Engine struct {
	// db is the client every protocol calls: raw behind the layout check
	// (layoutGate, layout.go); raw is called directly only to read the
	// layout and to create a table.
	db   gatedDB
	raw  DynamoDB
	clk  clock.Clock
	reg  *Registry
	cfg  Config
	obs  Observer
	boff Backoff

	rndMu sync.Mutex
	rnd   *rand.Rand
	sleep Sleeper

	spread atomic.Uint64 // keyless partition round robin

	seqMu   sync.Mutex
	seqNext map[int]int64 // partition -> next unused reserved seq
	seqEnd  map[int]int64 // partition -> one past the reserved block

	tokens atomic.Uint64 // client request token counter
	tokPre string

	layout layoutState   // the table's layout, once checked (layout.go)
	ident  identityCache // the table's identity, once read (ident.go)
	pmap   mapCache      // the partition map, read again after MapTTL (partmap.go)
	idRand io.Reader     // where a new table's identity comes from
	par    Parallel      // runs work that may run at once; nil: goroutines (parallel.go)
}

// New builds an engine. It applies Config defaults and validates them.
func New(db DynamoDB, clk clock.Clock, reg *Registry, cfg Config, opts ...Option) (*Engine, error) {
	if db == nil || clk == nil || reg == nil {
		return nil, errors.New("outbox: New needs a DynamoDB client, a clock and a registry")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("outbox: config: %w", err)
	}
	e := &Engine{
		raw: db, clk: clk, reg: reg, cfg: cfg, obs: NopObserver{}, sleep: timerSleep,
		boff:    Backoff{Base: cfg.RetryBase, Cap: cfg.RetryCap},
		seqNext: map[int]int64{}, seqEnd: map[int]int64{},
	}
	e.db = layoutGate{db: db, e: e}
	for _, o := range opts {
		o(e)
	}
	// A table's identity must differ from every other table's: it comes
	// from the operating system, unless the caller injected a source to
	// replay runs with (WithRand: the simulator).
	e.idRand = osRandom
	if e.rnd != nil {
		e.idRand = rngReader{e}
	}
	if e.rnd == nil {
		seed := uint64(clk.Now().UnixNano())
		e.rnd = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	}
	e.spread.Store(uint64(e.intN(cfg.Partitions)))
	// Tokens must never repeat across engines (a repeat within 10 minutes
	// would make DynamoDB answer another request's result), so their prefix
	// comes from the operating system, not the replayable source.
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("outbox: reading random token prefix: %w", err)
	}
	e.tokPre = hex.EncodeToString(b[:])
	return e, nil
}

// Config returns the engine's configuration with defaults applied.
func (e *Engine) Config() Config { return e.cfg }

// Registry returns the engine's registry.
func (e *Engine) Registry() *Registry { return e.reg }

// Partitions returns the partition count.
func (e *Engine) Partitions() int { return e.cfg.Partitions }

// PartitionOf returns the partition of a base-table or due-index partition
// key ("P#3" or "D#3" gives 3), for stream records.
func (e *Engine) PartitionOf(pk string) (int, bool) {
	if len(pk) < 3 || (pk[:2] != "P#" && pk[:2] != "D#") {
		return 0, false
	}
	n := 0
	for _, c := range pk[2:] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
		if n >= MaxPartitions {
			return 0, false
		}
	}
	return n, true
}

func (e *Engine) intN(n int) int {
	e.rndMu.Lock()
	defer e.rndMu.Unlock()
	return e.rnd.IntN(n)
}

func (e *Engine) uint64() uint64 {
	e.rndMu.Lock()
	defer e.rndMu.Unlock()
	return e.rnd.Uint64()
}

func (e *Engine) backoff(attempt int) (d int64) {
	e.rndMu.Lock()
	defer e.rndMu.Unlock()
	return int64(e.boff.Delay(attempt, e.rnd))
}

// rngReader reads bytes from the engine's injected source.
type rngReader struct{ e *Engine }

func (r rngReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.e.uint64())
	}
	return len(p), nil
}

// token returns a fresh ClientRequestToken (at most 36 characters).
func (e *Engine) token() string {
	return fmt.Sprintf("%s-%x", e.tokPre, e.tokens.Add(1))
}

func (e *Engine) table() *string { return &e.cfg.Table }

// isCondFailed reports whether err is a failed condition, alone or as the
// only kind of reason of a cancelled transaction.
func isCondFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return true
	}
	var tc *types.TransactionCanceledException
	if errors.As(err, &tc) {
		for _, r := range tc.CancellationReasons {
			if r.Code != nil && *r.Code == "ConditionalCheckFailed" {
				return true
			}
		}
	}
	return false
}

// cancelReasons returns the per-item codes of a cancelled transaction, or nil.
func cancelReasons(err error) ([]string, bool) {
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) {
		return nil, false
	}
	out := make([]string, len(tc.CancellationReasons))
	for i, r := range tc.CancellationReasons {
		if r.Code != nil {
			out[i] = *r.Code
		}
	}
	return out, true
}

// isRetryable reports whether a request certainly did nothing and may be sent
// again: throttling and transaction conflicts.
func isRetryable(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
			"TransactionConflictException", "TransactionInProgressException":
			return true
		}
	}
	if rs, ok := cancelReasons(err); ok {
		for _, c := range rs {
			if c != "" && c != "None" && c != "TransactionConflict" && c != "ThrottlingError" && c != "ProvisionedThroughputExceeded" {
				return false
			}
		}
		return true
	}
	return false
}

// isAmbiguous reports whether a write may or may not have happened: the
// request failed without a definite answer from DynamoDB.
func isAmbiguous(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "InternalServerError", "InternalFailure", "ServiceUnavailable":
			return true
		}
		return false
	}
	return true // transport errors, timeouts: the request may have landed
}
