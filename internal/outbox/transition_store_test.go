package outbox

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

type pairAdapter struct{}

func (pairAdapter) Spec() KindSpec                           { return KindSpec{Name: "p", Class: IdempotentReceiver} }
func (pairAdapter) Validate(string, json.RawMessage) error   { return nil }
func (pairAdapter) Execute(context.Context, *Attempt) Result { return Done("") }

// TestEveryStatePairAgainstTheStore puts an action in every state and tries
// every write that leads to every state, bypassing the Go-side checks: the
// allowed pairs succeed, every other is refused by the write's condition.
func TestEveryStatePairAgainstTheStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	e := newPairEngine(t, ddblocal.New(ddblocal.WithClock(clk)), clk, Config{Table: "ferry", Partitions: 1})

	claimOne := func(a Action) error {
		now := clk.Now()
		it := e.claimUpdate(candidate{a: a, class: IdempotentReceiver}, claimUpdateParams{Owner: "claimer", Now: now, Lease: now.Add(e.cfg.Lease), AnyDue: true, Fence: true})
		_, err := e.db.UpdateItem(ctx, it)
		return err
	}
	// make returns a fresh action in state s, read back from the store.
	make := func(s State) Action {
		r, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", Payload: []byte(`{}`), Propose: s == StatePROPOSED})
		require.NoError(t, err)
		a := r.Action
		switch s {
		case StateEXECUTING, StateDONE, StateUNCERTAIN, StateFAILED:
			require.NoError(t, claimOne(a))
			a = mustGet(t, e, a.ID)
			res := map[State]Result{StateDONE: Done(""), StateUNCERTAIN: Uncertain(nil), StateFAILED: Failed("", nil)}
			if r, ok := res[s]; ok {
				_, err := e.AttemptFinish(ctx, a, r)
				require.NoError(t, err)
			}
		case StateCANCELLED:
			_, err := e.Cancel(ctx, a.ID)
			require.NoError(t, err)
		}
		a = mustGet(t, e, a.ID)
		require.Equal(t, s, a.State)
		return a
	}
	// writes lists every write the engine has that leads to each state.
	type write func(a Action) (refusedByCondition bool)
	finish := func(r Result) write {
		return func(a Action) bool {
			d := decide(r, a.Attempt, a.MaxAttempts, time.Second)
			_, refused, err := e.applyDecision(ctx, &a, d, r, false)
			require.NoError(t, err)
			return refused
		}
	}
	cond := func(err error) bool {
		if err == nil {
			return false
		}
		require.True(t, isCondFailed(err), "refused by a condition, not otherwise: %v", err)
		return true
	}
	writes := map[State][]write{
		StateADMITTED: {
			func(a Action) bool { _, err := e.Admit(ctx, a.ID); return err != nil },
			finish(Retry(nil)),
			finish(Defer(time.Second, nil)),
		},
		StateEXECUTING: {
			func(a Action) bool { clk.Advance(e.cfg.Lease + time.Second); return cond(claimOne(a)) },
			finish(Reread(time.Second, nil)),
		},
		StateDONE:      {finish(Done(""))},
		StateUNCERTAIN: {finish(Uncertain(nil))},
		StateFAILED:    {finish(Failed("", nil))},
		StateCANCELLED: {
			finish(Cancelled("", nil)),
			func(a Action) bool {
				_, err := e.end(ctx, &a, endParams{To: StateCANCELLED, Reason: StopCancelled, Cond: condCancellable(a.Epoch)})
				return cond(err)
			},
		},
		StatePROPOSED: nil, // no write leads back to PROPOSED
	}
	for _, from := range States() {
		for _, to := range States() {
			allowed := CanTransition(from, to)
			if len(writes[to]) == 0 {
				require.False(t, allowed, "%s -> %s has no write", from, to)
				continue
			}
			succeeded := false
			for i, w := range writes[to] {
				a := make(from)
				refused := w(a)
				got := mustGet(t, e, a.ID)
				changed := got.State != a.State || got.Epoch != a.Epoch || got.Owner != a.Owner
				if refused {
					require.Equal(t, a.State, got.State, "%s -> %s write %d refused but changed", from, to, i)
					require.Equal(t, a.Epoch, got.Epoch)
					continue
				}
				require.True(t, changed && got.State == to, "%s -> %s write %d: got %s", from, to, i, got.State)
				succeeded = true
			}
			require.Equal(t, allowed, succeeded, "%s -> %s", from, to)
		}
	}
}

func mustGet(t *testing.T, e *Engine, id string) Action {
	t.Helper()
	a, err := e.ActionGet(context.Background(), id)
	require.NoError(t, err)
	return *a
}

// newPairEngine is an engine on db with the pair adapter ("p", an
// idempotent receiver) registered and its table created; cfg.Table
// defaults to "ferry".
func newPairEngine(t testing.TB, db DynamoDB, clk clock.Clock, cfg Config) *Engine {
	t.Helper()
	e := newPairEngineOn(t, db, clk, cfg)
	require.NoError(t, e.EnsureTable(context.Background()))
	return e
}

// newPairEngineOn builds an engine with the pair adapter on a table it
// does not create.
func newPairEngineOn(t testing.TB, db DynamoDB, clk clock.Clock, cfg Config) *Engine {
	t.Helper()
	reg := NewRegistry()
	require.NoError(t, reg.Register(pairAdapter{}))
	if cfg.Table == "" {
		cfg.Table = "ferry"
	}
	e, err := New(db, clk, reg, cfg)
	require.NoError(t, err)
	return e
}
