package bench

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

// Cost is what one workload cost per delivered action.
type Cost struct {
	Workload  string
	Enqueued  int
	Delivered int
	// Write and read request units per delivered action: all of them, the
	// base table's and each index's.
	WRU, BaseWRU float64
	IndexWRU     map[string]float64
	RRU, BaseRRU float64
	IndexRRU     map[string]float64
	// Calls per delivered action, all and by operation.
	Calls   float64
	CallsBy map[string]float64
	// BatchFill is the mean number of actions a claim took
	// divided by the batch size (claims that took nothing not counted;
	// EmptyClaims counts them).
	BatchFill   float64
	EmptyClaims int
	// ConflictsPer1000 counts transactions DynamoDB cancelled for a
	// TransactionConflict per 1,000 delivered actions; RefusalsPer1000 the
	// claim candidates refused by their condition (another claim took them).
	ConflictsPer1000 float64
	RefusalsPer1000  float64
	FenceRefusals    int
	Duplicates       int // provider calls beyond one per action
	Wall             time.Duration
	Note             string
	// Starved: keyless actions that arrived while a lane's head was
	// stranded and were not delivered before its lease ran out (stranded
	// workload only), out of Arrived.
	Starved, Arrived int
	// Breakdown books the units to what each call was (meter.go), per
	// delivered action, largest first.
	Breakdown []Breakdown
}

func (e *env) cost(name string, enqueued int, wall time.Duration) Cost {
	st := e.db.Capacity(table)
	n := float64(e.prov.delivered())
	if n == 0 {
		n = 1
	}
	c := Cost{
		Workload: name, Enqueued: enqueued, Delivered: e.prov.delivered(),
		WRU: st.TotalWriteUnits() / n, BaseWRU: st.WriteUnits / n,
		RRU: st.TotalReadUnits() / n, BaseRRU: st.ReadUnits / n,
		IndexWRU: map[string]float64{}, IndexRRU: map[string]float64{}, CallsBy: map[string]float64{},
		Duplicates: e.prov.duplicates(), Wall: wall,
		Breakdown: e.meter.breakdown(e.prov.delivered()),
	}
	// "ended" is the index design.md §3.6 removed: its column stays (reading 0)
	// so that reports compare with runs before it.
	for _, ix := range []string{outbox.IndexDue, outbox.IndexSubject, outbox.IndexWorkspace, "ended"} {
		c.IndexWRU[ix] = st.Indexes[ix].WriteUnits / n
		c.IndexRRU[ix] = st.Indexes[ix].ReadUnits / n
	}
	var calls int64
	for op, k := range st.Calls {
		calls += k
		c.CallsBy[op] = float64(k) / n
	}
	c.Calls = float64(calls) / n
	e.stats.mu.Lock()
	if e.stats.claims > 0 {
		c.BatchFill = float64(e.stats.claimed) / float64(e.stats.claims) / float64(e.cfg.BatchSize)
	}
	c.EmptyClaims = e.stats.empty
	c.RefusalsPer1000 = float64(e.stats.conflicts) * 1000 / n
	e.stats.mu.Unlock()
	e.cc.mu.Lock()
	c.ConflictsPer1000 = float64(e.cc.conflicts) * 1000 / n
	e.cc.mu.Unlock()
	return c
}

// merge adds the claim counters of other engines on the same DB.
func (c *Cost) merge(envs []*env, batch int) {
	var claims, claimed, empty, conflicts int
	for _, e := range envs {
		e.stats.mu.Lock()
		claims += e.stats.claims
		claimed += e.stats.claimed
		empty += e.stats.empty
		conflicts += e.stats.conflicts
		e.stats.mu.Unlock()
	}
	if claims > 0 {
		c.BatchFill = float64(claimed) / float64(claims) / float64(batch)
	}
	c.EmptyClaims = empty
	c.RefusalsPer1000 = float64(conflicts) * 1000 / float64(max(c.Delivered, 1))
}

// CostOptions sizes the cost workloads.
type CostOptions struct {
	Payload  int // payload bytes (PayloadFor(1024) for a 1 KB action)
	Actions  int // actions of the steady workloads; default 2000
	Burst    int // enqueues between drainer sweeps; default 400 (25 per partition)
	Backlog  int // the backlog workload's size; default 100000
	Drainers int // the backlog workload's drainers; default 4
	Lanes    int // the laned workload's lanes; default 100
	PerLane  int // and actions per lane; default 10
	Stranded int // actions behind the stranded lane head; default 500
	// TrickleLanes is how many lanes the trickle workload's actions are
	// spread over at random; default 400 (as many as a burst holds).
	TrickleLanes int
	// DeferFor is the deferred workload's wait (default 1 h), and
	// DeferredMinutes how long its actions arrive (default 75).
	DeferFor        time.Duration
	DeferredMinutes int
	// Only names the workloads AllCosts runs (keyless, laned, trickle,
	// keyed, email, batch25, backlog, stranded; deferred only when named);
	// empty = all of them but deferred.
	Only []string
}

func (o CostOptions) withDefaults() CostOptions {
	if o.Actions == 0 {
		o.Actions = 2000
	}
	if o.Burst == 0 {
		o.Burst = 400
	}
	if o.Backlog == 0 {
		o.Backlog = 100000
	}
	if o.Drainers == 0 {
		o.Drainers = 4
	}
	if o.Lanes == 0 {
		o.Lanes = 100
	}
	if o.PerLane == 0 {
		o.PerLane = 10
	}
	if o.Stranded == 0 {
		o.Stranded = 500
	}
	if o.Payload == 0 {
		o.Payload = 800
	}
	if o.TrickleLanes == 0 {
		o.TrickleLanes = o.Burst
	}
	if o.DeferFor == 0 {
		o.DeferFor = time.Hour
	}
	if o.DeferredMinutes == 0 {
		o.DeferredMinutes = 75
	}
	return o
}

// sweepUntilIdle drains every partition until a sweep claims nothing.
func (e *env) sweepUntilIdle(ctx context.Context) error {
	for round := 0; round < 1000; round++ {
		r, err := e.eng.Sweep(ctx, outbox.DrainParams{Owner: "bench-drainer"})
		if err != nil {
			return err
		}
		if r.Claimed == 0 {
			return nil
		}
	}
	return fmt.Errorf("bench: drain did not settle")
}

func (e *env) advance(d time.Duration) {
	if m, ok := e.clk.(*clock.Manual); ok {
		m.Advance(d)
	}
}

// steady enqueues n actions in bursts, one drainer sweep after each burst.
func steady(ctx context.Context, name string, o CostOptions, per int, mk func(i int) outbox.EnqueueParams) (Cost, error) {
	e, err := newEnv(ctx, envOpts{})
	if err != nil {
		return Cost{}, err
	}
	began := time.Now()
	pl := payload(o.Payload)
	for i := 0; i < o.Actions; i += per {
		ps := make([]outbox.EnqueueParams, 0, per)
		for j := i; j < i+per && j < o.Actions; j++ {
			p := mk(j)
			p.WorkspaceID, p.Payload = "ws-00001", pl
			if p.Kind == "" {
				p.Kind = KindWebhook
			}
			ps = append(ps, p)
		}
		if _, err := e.eng.EnqueueBatch(ctx, ps); err != nil {
			return Cost{}, fmt.Errorf("%s: enqueue: %w", name, err)
		}
		e.advance(time.Millisecond)
		if (i+per)%o.Burst == 0 || i+per >= o.Actions {
			if _, err := e.eng.Sweep(ctx, outbox.DrainParams{Owner: "bench-drainer"}); err != nil {
				return Cost{}, fmt.Errorf("%s: drain: %w", name, err)
			}
		}
	}
	if err := e.sweepUntilIdle(ctx); err != nil {
		return Cost{}, err
	}
	return e.cost(name, o.Actions, time.Since(began)), nil
}

// Keyless is keyless webhook actions, enqueued one by one.
func Keyless(ctx context.Context, o CostOptions) (Cost, error) {
	return steady(ctx, "keyless webhook", o.withDefaults(), 1, func(int) outbox.EnqueueParams { return outbox.EnqueueParams{} })
}

// Keyed is keyless webhook actions with an idempotency key each.
func Keyed(ctx context.Context, o CostOptions) (Cost, error) {
	return steady(ctx, "idempotency key", o.withDefaults(), 1, func(i int) outbox.EnqueueParams {
		return outbox.EnqueueParams{IdempotencyKey: fmt.Sprintf("order-%08d", i)}
	})
}

// Email is keyless at-most-once actions.
func Email(ctx context.Context, o CostOptions) (Cost, error) {
	return steady(ctx, "email (at-most-once)", o.withDefaults(), 1, func(int) outbox.EnqueueParams {
		return outbox.EnqueueParams{Kind: KindEmail}
	})
}

// Batch25 is keyless webhook actions enqueued 25 to a batch.
func Batch25(ctx context.Context, o CostOptions) (Cost, error) {
	return steady(ctx, "batches of 25", o.withDefaults(), outbox.MaxBatchEnqueue, func(int) outbox.EnqueueParams { return outbox.EnqueueParams{} })
}

// Laned is Lanes lanes of PerLane actions, enqueued round robin over the
// lanes, then drained.
func Laned(ctx context.Context, o CostOptions) (Cost, error) {
	o = o.withDefaults()
	n := o.Lanes * o.PerLane
	lo := o
	lo.Actions, lo.Burst = n, n
	return steady(ctx, fmt.Sprintf("laned (%d lanes x %d)", o.Lanes, o.PerLane), lo, 1, func(i int) outbox.EnqueueParams {
		return outbox.EnqueueParams{LaneKey: fmt.Sprintf("customer-%04d", i%o.Lanes)}
	})
}

// Trickle is laned actions enqueued one at a time while the drainer runs:
// each action joins one of TrickleLanes lanes chosen at random (seeded),
// and the drainer sweeps after every burst, as in the keyless workload.
// With as many lanes as a burst holds, a lane gets one member per burst on
// average: most members find their predecessor delivered and its lane tail
// gone, some find it still waiting (a successor link, a run of two), so a
// claim rarely finds more than one or two members of a lane.
func Trickle(ctx context.Context, o CostOptions) (Cost, error) {
	o = o.withDefaults()
	rnd := rand.New(rand.NewPCG(17, 18))
	return steady(ctx, fmt.Sprintf("laned trickle (%d lanes, one at a time)", o.TrickleLanes), o, 1, func(int) outbox.EnqueueParams {
		return outbox.EnqueueParams{LaneKey: fmt.Sprintf("order-%04d", rnd.IntN(o.TrickleLanes))}
	})
}

// Backlog enqueues Backlog due keyless actions, then Drainers drainers
// drain them at once, each sweeping the partitions from its own offset.
func Backlog(ctx context.Context, o CostOptions) (Cost, error) {
	o = o.withDefaults()
	first, err := newEnv(ctx, envOpts{})
	if err != nil {
		return Cost{}, err
	}
	envs := []*env{first}
	for d := 1; d < o.Drainers; d++ {
		e, err := newEnv(ctx, envOpts{clk: first.clk, sharedDB: first.db, sharedCC: first.cc, sharedM: first.meter, sharedPrv: first.prov})
		if err != nil {
			return Cost{}, err
		}
		envs = append(envs, e)
	}
	pl := payload(o.Payload)
	began := time.Now()
	for i := 0; i < o.Backlog; i++ {
		if _, err := first.eng.Enqueue(ctx, outbox.EnqueueParams{Kind: KindWebhook, WorkspaceID: "ws-00001", Payload: pl}); err != nil {
			return Cost{}, err
		}
		if i%1000 == 999 {
			first.advance(time.Millisecond)
		}
	}
	first.advance(time.Second)
	enq := time.Since(began)
	drainBegan := time.Now()
	parts := first.cfg.Partitions
	errs := make(chan error, o.Drainers)
	fenceRefusals := make([]int, o.Drainers)
	for d, e := range envs {
		go func() {
			owner := fmt.Sprintf("drainer-%d", d)
			idle := 0
			for pass := 0; pass < 10000; pass++ {
				claimed := 0
				for k := 0; k < parts; k++ {
					p := (k + d*parts/o.Drainers) % parts
					r, err := e.eng.DrainPartition(ctx, p, outbox.DrainParams{Owner: owner})
					if err != nil {
						errs <- err
						return
					}
					claimed += r.Claimed
					fenceRefusals[d] += r.FenceRefusals
				}
				if claimed == 0 {
					idle++
					if idle >= 2 || first.prov.delivered() >= o.Backlog {
						errs <- nil
						return
					}
				} else {
					idle = 0
				}
			}
			errs <- fmt.Errorf("bench: drainer %d did not finish", d)
		}()
	}
	for range envs {
		if err := <-errs; err != nil {
			return Cost{}, err
		}
	}
	drain := time.Since(drainBegan)
	c := first.cost(fmt.Sprintf("backlog %d, %d drainers", o.Backlog, o.Drainers), o.Backlog, time.Since(began))
	c.merge(envs, first.cfg.BatchSize)
	for _, f := range fenceRefusals {
		c.FenceRefusals += f
	}
	c.Note = fmt.Sprintf("wall: enqueue %s, drain %s (%.0f actions/s on this machine, in-process)", enq.Round(time.Millisecond), drain.Round(time.Millisecond), float64(c.Delivered)/drain.Seconds())
	return c, nil
}

// Stranded puts one partition's lane head in the hands of a drainer that
// crashed after its write fence (its claim fence and the action's lease
// run out later), with Stranded actions of the lane behind it, while
// keyless actions keep arriving (3 a second) and a drainer is woken every
// second; it runs until everything is delivered.
func Stranded(ctx context.Context, o CostOptions) (Cost, error) {
	o = o.withDefaults()
	e, err := newEnv(ctx, envOpts{cfg: outbox.Config{Partitions: 1}})
	if err != nil {
		return Cost{}, err
	}
	pl := payload(o.Payload)
	began := time.Now()
	lane := outbox.EnqueueParams{Kind: KindWebhook, WorkspaceID: "ws-00001", LaneKey: "stuck", Payload: pl}
	for i := 0; i <= o.Stranded; i++ {
		if _, err := e.eng.Enqueue(ctx, lane); err != nil {
			return Cost{}, err
		}
	}
	e.advance(time.Millisecond)
	now := e.clk.Now()
	v, err := e.eng.FenceTake(ctx, 0, "crashed", now.Add(30*time.Second))
	if err != nil {
		return Cost{}, err
	}
	cr, err := e.eng.Claim(ctx, 0, outbox.ClaimParams{Owner: "crashed", Version: v, Limit: 1})
	if err != nil || cr.Claimed != 1 {
		return Cost{}, fmt.Errorf("bench: stranding the lane head: claimed %v: %w", cr, err)
	}
	enq := o.Stranded + 1
	total := enq
	keyless := outbox.EnqueueParams{Kind: KindWebhook, WorkspaceID: "ws-00001", Payload: pl}
	var fr int
	blockedDelivered := -1
	for sec := 0; sec < 3600; sec++ {
		if sec < 400 {
			for k := 0; k < 3; k++ {
				if _, err := e.eng.Enqueue(ctx, keyless); err != nil {
					return Cost{}, err
				}
				total++
			}
		}
		e.advance(time.Second)
		r, err := e.eng.DrainPartition(ctx, 0, outbox.DrainParams{Owner: "drainer"})
		if err != nil {
			return Cost{}, err
		}
		fr += r.FenceRefusals
		if sec == 250 {
			blockedDelivered = e.prov.delivered()
		}
		if sec >= 400 && e.prov.delivered() >= total {
			break
		}
	}
	c := e.cost(fmt.Sprintf("stranded lane head, %d behind", o.Stranded), total, time.Since(began))
	c.FenceRefusals = fr
	c.Note = fmt.Sprintf("%d of %d delivered (%d keyless arrived by then) after 250 s, while the head's 5 min lease ran", blockedDelivered, 3*251+enq, 3*251)
	c.Arrived = 3 * 251
	c.Starved = max(0, c.Arrived-blockedDelivered)
	return c, nil
}

// Deferred is keyless webhook actions arriving at a steady rate, 2 a
// second over 4 partitions for DeferredMinutes (75) simulated minutes, with a drainer
// sweeping every 5 s; every tenth action's first call is answered with a
// wait of DeferFor (a provider's Retry-After), so at any time about an
// hour's worth of such actions wait in their partitions, not due, while
// the rest flows past them. It runs until every action is delivered.
func Deferred(ctx context.Context, o CostOptions) (Cost, error) {
	o = o.withDefaults()
	e, err := newEnv(ctx, envOpts{cfg: outbox.Config{Partitions: 4}, deferFor: o.DeferFor})
	if err != nil {
		return Cost{}, err
	}
	pl := payload(o.Payload)
	began := time.Now()
	const step, perStep = 5 * time.Second, 10
	arrivals := o.DeferredMinutes * 60 / 5
	ep := outbox.EnqueueParams{Kind: KindDeferred, WorkspaceID: "ws-00001", Payload: pl}
	n := 0
	limit := arrivals + int((o.DeferFor+30*time.Minute)/step)
	for k := 0; ; k++ {
		if k < arrivals {
			for i := 0; i < perStep; i++ {
				if _, err := e.eng.Enqueue(ctx, ep); err != nil {
					return Cost{}, err
				}
				n++
				e.advance(step / perStep)
			}
		} else {
			e.advance(step)
		}
		if _, err := e.eng.Sweep(ctx, outbox.DrainParams{Owner: "bench-drainer"}); err != nil {
			return Cost{}, fmt.Errorf("deferred: drain: %w", err)
		}
		if k >= arrivals && e.prov.delivered() >= n {
			break
		}
		if k > limit {
			return Cost{}, fmt.Errorf("bench: deferred: %d of %d delivered after %d steps", e.prov.delivered(), n, k)
		}
	}
	c := e.cost(fmt.Sprintf("deferred (1 in 10 waits %s)", o.DeferFor), n, time.Since(began))
	c.Note = fmt.Sprintf("%d actions over %d min at 2/s on 4 partitions, a sweep every 5 s; every tenth deferred %s on its first call", n, o.DeferredMinutes, o.DeferFor)
	return c, nil
}

// AllCosts runs every cost workload.
func AllCosts(ctx context.Context, o CostOptions, progress func(string)) ([]Cost, error) {
	type wl struct {
		name string
		f    func(context.Context, CostOptions) (Cost, error)
	}
	var out []Cost
	for _, w := range []wl{
		{"keyless", Keyless}, {"laned", Laned}, {"trickle", Trickle}, {"keyed", Keyed}, {"email", Email},
		{"batch25", Batch25}, {"backlog", Backlog}, {"stranded", Stranded}, {"deferred", Deferred},
	} {
		if len(o.Only) > 0 && !slices.Contains(o.Only, w.name) || len(o.Only) == 0 && w.name == "deferred" {
			continue
		}
		progress(w.name)
		c, err := w.f(ctx, o)
		if err != nil {
			return out, fmt.Errorf("workload %s: %w", w.name, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func sortedKeys(m map[string]float64) []string {
	ks := make([]string, 0, len(m))
	for k := range maps.Keys(m) {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

var _ = ddblocal.New
