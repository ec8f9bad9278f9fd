package bench

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/outbox"
)

// The benchmark's kinds. Their adapters call no provider: they record when
// the provider call would start and answer Done, so every unit counted is
// the engine's.
const (
	KindWebhook = "webhook" // idempotent receiver that prepares, like the webhook adapter
	KindEmail   = "email"   // at-most-once that prepares, like the SES email adapter
	// KindDeferred is a webhook whose receiver answers the first call of
	// every tenth action (by seq) with a wait (Retry-After: envOpts.deferFor),
	// like a provider's quota; the next call is Done.
	KindDeferred = "webhook-deferred"
)

// provider records provider calls: when each action's first call started
// and how many calls each action got.
type provider struct {
	clk   clock.Clock
	mu    sync.Mutex
	first map[string]time.Time
	calls map[string]int
	total int
}

func newProvider(clk clock.Clock) *provider {
	return &provider{clk: clk, first: map[string]time.Time{}, calls: map[string]int{}}
}

func (p *provider) call(id string) {
	now := p.clk.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.first[id]; !ok {
		p.first[id] = now
	}
	p.calls[id]++
	p.total++
}

// delivered is the number of distinct actions that reached the provider.
func (p *provider) delivered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.first)
}

// duplicates is the number of provider calls beyond the first per action.
func (p *provider) duplicates() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total - len(p.first)
}

func (p *provider) firstCall(id string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.first[id]
	return t, ok
}

// stubAdapter is a kind of the given delivery class whose Execute records
// the call and answers Done.
type stubAdapter struct {
	kind  string
	class outbox.DeliveryClass
	p     *provider
}

func (s stubAdapter) Spec() outbox.KindSpec {
	return outbox.KindSpec{Name: s.kind, Class: s.class, VariantMode: outbox.SingleShape}
}

func (s stubAdapter) Validate(string, json.RawMessage) error { return nil }

func (s stubAdapter) Execute(_ context.Context, att *outbox.Attempt) outbox.Result {
	s.p.call(att.Action.ID)
	return outbox.Done("m-" + strconv.FormatInt(att.Action.Seq, 36))
}

// preparingStub is a stubAdapter with a Prepare step that does nothing:
// the real webhook and email adapters prepare (decode, fetch secrets, check
// suppression) before the fence.
type preparingStub struct{ stubAdapter }

func (preparingStub) Prepare(context.Context, *outbox.Attempt) outbox.Result { return outbox.Result{} }

// deferringStub is a preparing webhook stub that defers the first call of
// every tenth action (seq % 10 == 0) by wait; only Done calls are recorded
// as provider calls.
type deferringStub struct {
	preparingStub
	wait time.Duration
}

func (s deferringStub) Execute(ctx context.Context, att *outbox.Attempt) outbox.Result {
	if att.Action.Seq%10 == 0 && att.Action.Deferrals == 0 {
		return outbox.Defer(s.wait, nil)
	}
	return s.preparingStub.Execute(ctx, att)
}

// registry returns a registry with the benchmark's kinds; deferFor is
// KindDeferred's wait (default 1 h).
func registry(p *provider, deferFor ...time.Duration) (*outbox.Registry, error) {
	wait := time.Hour
	if len(deferFor) > 0 && deferFor[0] > 0 {
		wait = deferFor[0]
	}
	reg := outbox.NewRegistry()
	for _, a := range []outbox.Adapter{
		preparingStub{stubAdapter{kind: KindWebhook, class: outbox.IdempotentReceiver, p: p}},
		preparingStub{stubAdapter{kind: KindEmail, class: outbox.AtMostOnce, p: p}},
		deferringStub{preparingStub{stubAdapter{kind: KindDeferred, class: outbox.IdempotentReceiver, p: p}}, wait},
	} {
		if err := reg.Register(a); err != nil {
			return nil, err
		}
	}
	return reg, nil
}
