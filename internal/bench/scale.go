package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/coldstart"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/handlers"
	"github.com/ferryhq/ferry/internal/outbox"
)

// ScaleParams is one point of the scale model (docs/scale.md): the deployed
// system on simulated clocks — Poisson arrivals through the enqueue
// function, the table's stream woken drainer (shards, Lambda's concurrent
// batches per shard), the scheduled sweep and the reaper — driving the real
// engine against the embedded DynamoDB.
type ScaleParams struct {
	Rate       float64 // arrivals per second (Poisson)
	Partitions int     // outbox partitions

	// Warmup runs before the measured Window; Grace after it lets the
	// window's last actions reach their provider call (no new arrivals).
	Warmup, Window, Grace time.Duration

	// Shards is the stream's shard count, 0 for ShardsFor. Parallelization
	// is Lambda's ParallelizationFactor (concurrent batches per shard; the
	// stack's, StackStreamParallelization). StreamBatch and StreamWindow
	// are the event source mapping's batch size and batching window (the
	// stack's StackStreamBatch and StackStreamWindow).
	Shards          int
	Parallelization int
	StreamBatch     int
	StreamWindow    time.Duration

	// Concurrency is the lane groups a drain runs at once; 0: the
	// engine's default, as the drainer function runs it (every group of a
	// claimed batch: outbox.DefaultBatchSize). A stream invocation drains
	// every partition its batch names at once, claiming for StreamBudget
	// (handlers.DefaultStreamBudget); a scheduled sweep probes
	// SweepPartitions at once (coldstart.SweepPartitions), a partition
	// giving its place to the next once its drain claimed
	// (outbox.DrainParams.Started).
	Concurrency     int
	StreamBudget    time.Duration
	SweepPartitions int
	// ProviderLatency is how long each provider call takes.
	ProviderLatency time.Duration
	// Schedule is the drainer's and reaper's schedule (StackSchedule);
	// DrainerTimeout the drainer function's timeout
	// (StackDrainerTimeout). Each invocation claims until
	// handlers.Budget's reserve before its timeout.
	Schedule       time.Duration
	DrainerTimeout time.Duration

	// KeyWRU and TableWRU are DynamoDB's ceilings (KeyWRU, TableWRU when 0).
	KeyWRU, TableWRU float64
	Payload          int // payload bytes of each action
	// Lanes, when set, puts every action in one of that many lanes of
	// its workspace (drawn uniformly): the laned workload. 0: keyless.
	Lanes int
	Seed  uint64
}

func (p ScaleParams) withDefaults() ScaleParams {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	defI := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&p.Warmup, 5*time.Second)
	def(&p.Window, 15*time.Second)
	def(&p.Grace, 5*time.Second)
	def(&p.ProviderLatency, CallLatency)
	def(&p.StreamWindow, StackStreamWindow)
	def(&p.StreamBudget, handlers.DefaultStreamBudget)
	def(&p.Schedule, StackSchedule)
	def(&p.DrainerTimeout, StackDrainerTimeout)
	defI(&p.Partitions, outbox.DefaultPartitions)
	defI(&p.Parallelization, StackStreamParallelization)
	defI(&p.StreamBatch, StackStreamBatch)
	defI(&p.SweepPartitions, coldstart.SweepPartitions)
	defI(&p.Payload, 811)
	if p.Shards == 0 {
		p.Shards = ShardsFor(p.Rate, p.Partitions)
	}
	if p.KeyWRU == 0 {
		p.KeyWRU = KeyWRU
	}
	if p.TableWRU == 0 {
		p.TableWRU = TableWRU
	}
	if p.Seed == 0 {
		p.Seed = 1
	}
	return p
}

// ShardsFor is the model's stream shard count: one per physical partition
// of the base table, which DynamoDB gives as many as its write rate needs at
// half of the 1,000 units a second each (at least 4, a power of two), and
// never more than there are partition keys to spread (hot keys split off).
func ShardsFor(rate float64, partitions int) int {
	need := rate * 4.25 / (KeyWRU / 2)
	s := 4
	for float64(s) < need {
		s *= 2
	}
	return max(1, min(s, partitions))
}

// ScalePoint is what one point measured.
type ScalePoint struct {
	Params ScaleParams

	Arrivals  int     // enqueue requests started in the window
	Sustained float64 // provider calls started in the window, per second
	P50, P99  time.Duration
	// Undelivered: window arrivals without a provider call by the end
	// (their latency counts as infinite).
	Undelivered   int
	BacklogGrowth float64 // (enqueued - delivered) per second over the window

	BacklogEnd    int            // acknowledged actions without a provider call at the window's end
	Throttled     int            // DynamoDB attempts refused for throughput (window)
	ThrottledBy   map[string]int // by kind of key: "P#" action partitions, "D#" due index, "table"
	FailedCalls   int            // calls that failed after the SDK's retries (window)
	EnqueueErrors int            // enqueues the API would have answered with an error (the client retried)

	StreamInvocations, SweepInvocations int // drainer invocations started in the window
	StreamPeak                          int // most stream invocations running at once during the run (Lambda concurrency)
	StreamMean, StreamP99, StreamMax    time.Duration
	SweepMean, SweepMax                 time.Duration
	SweepUnfinished                     bool // a sweep was still running when the run ended (SweepMax is a lower bound)
	ReaperMean                          time.Duration
	IteratorAgeMax                      time.Duration // oldest stream record when its batch was taken
	EnqueueInstances                    int           // enqueue function instances the run needed
	Shards                              int

	// WRU, RRU: per delivered action in the window: the enqueue and
	// stream-drainer calls made in it, plus one sweep's and one reap's
	// units scaled to the window (one of each per Schedule).
	WRU, RRU   float64
	Cost       Dollars // per million delivered actions
	Wall       time.Duration
	Bottleneck string
}

// The stack's settings the model deploys (the infra module's defaults,
// which this module cannot import: TestScaleModelUsesTheStackSettings reads
// them from infra's source and fails when they differ).
const (
	// StackStreamParallelization is the drainer's stream mapping's
	// ParallelizationFactor (infra/schedules.go streamParallelization).
	StackStreamParallelization = 10
	// StackStreamBatch and StackStreamWindow are its batch size and
	// batching window (infra/props.go DefaultStreamBatchSize,
	// DefaultStreamWindow).
	StackStreamBatch  = 100
	StackStreamWindow = time.Second
	// StackSchedule is the drainer's and the reaper's schedule
	// (infra/schedules.go Schedules).
	StackSchedule = time.Minute
	// StackDrainerTimeout is the drainer function's timeout, and
	// enqueueMB, drainerMB, reaperMB the functions' memory
	// (infra/props.go DefaultFunctionSizes).
	StackDrainerTimeout = 2 * time.Minute
	enqueueMB           = 256
	drainerMB           = 512
	reaperMB            = 256
)

// scaleRecord is one enqueue request of the run.
type scaleRecord struct {
	start time.Time
	ack   time.Time // zero until acknowledged
	id    string
}

type streamRec struct {
	part int
	at   time.Time
}

type slot struct {
	proc *vproc
	buf  []streamRec
	busy bool
	eng  *outbox.Engine
}

type invocation struct {
	start time.Time
	dur   time.Duration
}

// scaleRun is one run of the model.
type scaleRun struct {
	p      ScaleParams
	s      *vsched
	db     *ddblocal.DB
	mdb    *modelDB
	prov   *provider
	reg    *outbox.Registry
	rnd    *rand.Rand
	lrnd   *rand.Rand // lane draws (ScaleParams.Lanes)
	cfg    outbox.Config
	engSeq uint64

	recs      []scaleRecord
	idle      []*enqueuer
	nEnq      int
	enqErrors int
	enqGBs    float64
	enqCalls  int

	slots     []*slot
	busy      int // slots running an invocation
	peak      int // most busy at once
	lastSeq   uint64
	iterAge   time.Duration
	streamInv []invocation
	sweepInv  []invocation
	sweeping  map[int]time.Time // start of each sweep still running
	reapInv   []invocation
	samples   []backlogSample
	drainGBs  float64
	reapGBs   float64
	drainErrs int
}

type backlogSample struct {
	t time.Time
	n int
}

type enqueuer struct {
	proc *vproc
	eng  *outbox.Engine
	rec  int // index into recs of the assigned request
}

func (r *scaleRun) newEngine() (*outbox.Engine, error) {
	r.engSeq++
	return outbox.New(r.mdb, r.s, r.reg, r.cfg, outbox.WithRand(rand.New(rand.NewPCG(r.p.Seed, r.engSeq))),
		outbox.WithSleeper(r.sleep))
}

// sleep is the engines' Sleeper: a wait on the caller's simulated time.
func (r *scaleRun) sleep(_ context.Context, d time.Duration) error {
	if a := r.s.self(); a != nil {
		a.wait(d)
	}
	return nil
}

// ScaleRun runs one point of the model.
func ScaleRun(ctx context.Context, p ScaleParams) (ScalePoint, error) {
	p = p.withDefaults()
	wall := time.Now()
	r := &scaleRun{p: p, s: newVsched(), rnd: rand.New(rand.NewPCG(p.Seed, 0x5ca1e)), sweeping: map[int]time.Time{},
		lrnd: rand.New(rand.NewPCG(p.Seed, 0x1a7e))}
	end := Start.Add(p.Warmup + p.Window)
	wStart := Start.Add(p.Warmup)
	r.mdb = &modelDB{s: r.s, rnd: rand.New(rand.NewPCG(p.Seed, 0xdb)), lim: newLimiter(),
		st:   &dbStats{throttledKeys: map[string]int{}, units: map[string]*units{}, inWindow: map[string]*units{}, from: wStart, to: end},
		keyW: p.KeyWRU, tabW: p.TableWRU}
	r.db = ddblocal.New(ddblocal.WithClock(r.s), ddblocal.WithFaults(ddblocal.FaultPlanFunc(r.mdb.decide)),
		ddblocal.WithChangeRetention(time.Minute))
	r.mdb.db = r.db
	r.prov = newProvider(r.s)
	reg := outbox.NewRegistry()
	if err := reg.Register(scaleAdapter{p: r.prov, s: r.s, latency: p.ProviderLatency}); err != nil {
		return ScalePoint{}, err
	}
	r.reg = reg
	r.cfg = outbox.Config{Table: table, Partitions: p.Partitions}
	defer r.s.shutdown()

	var setupErr error
	r.s.spawn("setup", Start, func(sp *vproc) {
		eng, err := r.newEngine()
		if err != nil {
			setupErr = err
			return
		}
		setupErr = eng.EnsureTable(ctx)
	})
	r.s.run(Start)
	if setupErr != nil {
		return ScalePoint{}, setupErr
	}
	r.db.ResetCapacity()

	for i := 0; i < p.Shards*p.Parallelization; i++ {
		eng, err := r.newEngine()
		if err != nil {
			return ScalePoint{}, err
		}
		sl := &slot{eng: eng}
		r.slots = append(r.slots, sl)
		sl.proc = r.s.spawn(fmt.Sprintf("slot-%d", i), Start, func(sp *vproc) { r.slotLoop(ctx, sp, sl, fmt.Sprintf("stream-%d", i)) })
		sl.proc.role = "stream"
	}
	r.s.spawn("arrivals", Start, func(sp *vproc) { r.arrivals(ctx, sp, end) })
	r.s.spawn("poller", Start, func(sp *vproc) { r.poll(sp, end.Add(p.Grace)) })
	// The schedules' phase is set so that one sweep and one reap start in
	// every window (their units are scaled to one per Schedule).
	r.s.spawn("schedule", wStart, func(sp *vproc) { r.schedule(ctx, sp, end.Add(p.Grace)) })
	rp := r.s.spawn("reaper", wStart.Add(time.Second), func(sp *vproc) { r.reaper(ctx, sp, end.Add(p.Grace)) })
	rp.role = "reaper"
	r.s.spawn("sampler", wStart, func(sp *vproc) {
		for !sp.stopped() && !sp.t.After(end) {
			r.samples = append(r.samples, backlogSample{sp.t, r.backlog(sp.t)})
			sp.sleep(250 * time.Millisecond)
		}
	})

	// Warm-up, then the window (capacity and refusals counted from its
	// start), then the grace period.
	r.s.run(wStart)
	thrStart, failStart := r.mdb.st.throttled, r.mdb.st.failed
	keysStart := map[string]int{}
	for k, v := range r.mdb.st.throttledKeys {
		keysStart[k] = v
	}
	backlogStart := r.backlog(wStart)
	r.s.run(end)
	thrEnd, failEnd := r.mdb.st.throttled, r.mdb.st.failed
	backlogEnd := r.backlog(end)
	keysEnd := map[string]int{}
	for k, v := range r.mdb.st.throttledKeys {
		keysEnd[k] = v
	}
	r.s.run(end.Add(p.Grace))

	pt := ScalePoint{Params: p, Shards: p.Shards, EnqueueInstances: r.nEnq, EnqueueErrors: r.enqErrors, BacklogEnd: backlogEnd,
		Throttled: thrEnd - thrStart, FailedCalls: failEnd - failStart, ThrottledBy: map[string]int{},
		IteratorAgeMax: r.iterAge, StreamPeak: r.peak}
	for k, v := range keysEnd {
		if d := v - keysStart[k]; d > 0 {
			kind := k
			if i := strings.IndexByte(k, '#'); i > 0 {
				kind = k[:i+1]
			}
			pt.ThrottledBy[kind] += d
		}
	}
	// Latency of the window's arrivals; deliveries in the window.
	var lat []time.Duration
	delivered := 0
	for _, rec := range r.recs {
		if rec.id != "" {
			if t, ok := r.prov.firstCall(rec.id); ok && !t.Before(wStart) && t.Before(end) {
				delivered++
			}
		}
		if rec.start.Before(wStart) || !rec.start.Before(end) {
			continue
		}
		pt.Arrivals++
		t, ok := time.Time{}, false
		if rec.id != "" {
			t, ok = r.prov.firstCall(rec.id)
		}
		if !ok {
			pt.Undelivered++
			lat = append(lat, time.Duration(math.MaxInt64))
			continue
		}
		lat = append(lat, t.Sub(rec.start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		pt.P50, pt.P99 = pct(lat, 0.50), pct(lat, 0.99)
	}
	secs := p.Window.Seconds()
	pt.Sustained = float64(delivered) / secs
	pt.BacklogGrowth = slope(r.samples)
	_ = backlogStart

	inWindow := func(invs []invocation) (n int, mean, p99, mx time.Duration) {
		var ds []time.Duration
		var sum time.Duration
		for _, in := range invs {
			if in.start.Before(wStart) || !in.start.Before(end) {
				continue
			}
			ds = append(ds, in.dur)
			sum += in.dur
		}
		if len(ds) == 0 {
			return 0, 0, 0, 0
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return len(ds), sum / time.Duration(len(ds)), pct(ds, 0.99), ds[len(ds)-1]
	}
	pt.StreamInvocations, pt.StreamMean, pt.StreamP99, pt.StreamMax = inWindow(r.streamInv)
	pt.SweepInvocations, pt.SweepMean, _, pt.SweepMax = inWindow(r.sweepInv)
	for _, st := range r.sweeping {
		if !st.Before(wStart) && st.Before(end) {
			pt.SweepInvocations++
			pt.SweepUnfinished = true
			if d := end.Add(p.Grace).Sub(st); d > pt.SweepMax {
				pt.SweepMax = d
			}
		}
	}
	_, pt.ReaperMean, _, _ = inWindow(r.reapInv)

	// Units: the window's enqueue and stream calls, and one sweep's and
	// one reap's share of a Schedule.
	var wru, rru float64
	for _, role := range []string{"enqueue", "stream"} {
		if u := r.mdb.st.inWindow[role]; u != nil {
			wru += u.w
			rru += u.r
		}
	}
	share := p.Window.Seconds() / p.Schedule.Seconds()
	for role, n := range map[string]int{"sweep": len(r.sweepInv) + len(r.sweeping), "reaper": len(r.reapInv)} {
		if u := r.mdb.st.units[role]; u != nil && n > 0 {
			wru += u.w / float64(n) * share
			rru += u.r / float64(n) * share
		}
	}
	if delivered > 0 {
		pt.WRU, pt.RRU = wru/float64(delivered), rru/float64(delivered)
		pt.Cost = r.cost(wStart, end, delivered, wru, rru)
	}
	pt.Bottleneck = bottleneck(pt)
	pt.Wall = time.Since(wall)
	return pt, nil
}

// slope is the least-squares growth of the sampled backlog, per second.
func slope(ss []backlogSample) float64 {
	if len(ss) < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for _, s := range ss {
		x := s.t.Sub(ss[0].t).Seconds()
		y := float64(s.n)
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	n := float64(len(ss))
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// backlog is the number of acknowledged actions without a provider call at t.
func (r *scaleRun) backlog(t time.Time) int {
	n := 0
	for _, rec := range r.recs {
		if rec.id == "" || rec.ack.After(t) {
			continue
		}
		if c, ok := r.prov.firstCall(rec.id); !ok || c.After(t) {
			n++
		}
	}
	return n
}

// arrivals draws the Poisson arrivals and hands each to an idle enqueue
// function instance (a new one when none is idle, as Lambda scales out).
func (r *scaleRun) arrivals(ctx context.Context, sp *vproc, end time.Time) {
	rnd := rand.New(rand.NewPCG(r.p.Seed, 0xa441))
	next := Start
	for !sp.stopped() {
		next = next.Add(time.Duration(rnd.ExpFloat64() / r.p.Rate * float64(time.Second)))
		if !next.Before(end) {
			return
		}
		sp.sleepUntil(next)
		r.recs = append(r.recs, scaleRecord{start: sp.t})
		r.dispatch(ctx, len(r.recs)-1, sp.t)
	}
}

func (r *scaleRun) dispatch(ctx context.Context, i int, at time.Time) {
	var e *enqueuer
	// Lambda gives a request to an idle instance: one whose last request
	// has ended by now.
	for j := len(r.idle) - 1; j >= 0; j-- {
		if e = r.idle[j]; !e.proc.t.After(at) {
			r.idle = append(r.idle[:j], r.idle[j+1:]...)
			e.rec = i
			r.s.wakeAt(e.proc, at)
			return
		}
	}
	eng, err := r.newEngine()
	if err != nil {
		panic(err) // the config is the model's own
	}
	r.nEnq++
	e = &enqueuer{eng: eng, rec: i}
	e.proc = r.s.spawn(fmt.Sprintf("enqueue-%d", r.nEnq), at, func(sp *vproc) { r.enqueueLoop(ctx, sp, e) })
	e.proc.role = "enqueue"
}

// enqueueLoop is one enqueue function instance: it enqueues the request it
// was handed, then waits for the next. A refused enqueue is the API's error
// answer: the client sends it again a second later.
func (r *scaleRun) enqueueLoop(ctx context.Context, sp *vproc, e *enqueuer) {
	pl := json.RawMessage(payload(r.p.Payload))
	for !sp.stopped() {
		i := e.rec
		for try := 0; !sp.stopped(); try++ {
			start := sp.t
			ep := outbox.EnqueueParams{Kind: KindWebhook, WorkspaceID: "ws-00001", Payload: pl}
			if r.p.Lanes > 0 {
				ep.LaneKey = "lane-" + strconv.Itoa(r.lrnd.IntN(r.p.Lanes))
			}
			res, err := e.eng.Enqueue(ctx, ep)
			r.enqCalls++
			r.enqGBs += gbSeconds(sp.t.Sub(start), enqueueMB)
			if err == nil {
				r.recs[i].id, r.recs[i].ack = res.Action.ID, sp.t
				break
			}
			r.enqErrors++
			sp.sleep(time.Second)
		}
		r.idle = append(r.idle, e)
		sp.park()
	}
}

// poll is Lambda's stream poller: every 250 ms it reads the records
// committed since the last poll, keeps those the drainer's filter takes
// (a new image with due keys in state ADMITTED), and starts a batch on
// each idle slot whose records fill a batch or waited the batching window.
func (r *scaleRun) poll(sp *vproc, until time.Time) {
	for !sp.stopped() && sp.t.Before(until) {
		sp.sleep(StreamPoll)
		for _, c := range r.db.Changes(table, r.lastSeq+1) {
			r.lastSeq = c.Seq
			if c.EventName == ddblocal.EventRemove || c.NewImage == nil {
				continue
			}
			st, _ := c.NewImage["st"].(*types.AttributeValueMemberS)
			if _, ok := c.NewImage["due_pk"]; !ok || st == nil || st.Value != string(outbox.StateADMITTED) {
				continue
			}
			pk := pkOf(c.Keys)
			part, ok := partitionOfPK(pk)
			if !ok {
				continue
			}
			sl := r.slots[r.slotOf(pk)]
			sl.buf = append(sl.buf, streamRec{part: part, at: c.At})
		}
		for _, sl := range r.slots {
			if sl.busy || len(sl.buf) == 0 {
				continue
			}
			if len(sl.buf) >= r.p.StreamBatch || sp.t.Sub(sl.buf[0].at) >= r.p.StreamWindow {
				sl.busy = true
				r.busy++
				r.peak = max(r.peak, r.busy)
				r.s.wakeAt(sl.proc, sp.t)
			}
		}
	}
}

// slotOf is the record's shard (its key's physical partition) and, within
// the shard, its concurrent batch (Lambda keeps a key on one).
func (r *scaleRun) slotOf(pk string) int {
	h := fnv.New32a()
	h.Write([]byte(pk))
	x := h.Sum32()
	shard := int(x % uint32(r.p.Shards))
	return shard*r.p.Parallelization + int((x/uint32(r.p.Shards))%uint32(r.p.Parallelization))
}

func partitionOfPK(pk string) (int, bool) {
	if !strings.HasPrefix(pk, "P#") {
		return 0, false
	}
	n, err := strconv.Atoi(pk[2:])
	return n, err == nil
}

// slotLoop is one concurrent batch of one shard: a drainer invocation per
// batch, which drains the partitions its records name, as the drainer's
// stream handler does (streamInvoke).
func (r *scaleRun) slotLoop(ctx context.Context, sp *vproc, sl *slot, owner string) {
	for !sp.stopped() {
		sp.park()
		if sp.stopped() {
			return
		}
		n := min(len(sl.buf), r.p.StreamBatch)
		batch := sl.buf[:n]
		sl.buf = append([]streamRec(nil), sl.buf[n:]...)
		if age := sp.t.Sub(batch[0].at); age > r.iterAge {
			r.iterAge = age
		}
		seen := map[int]bool{}
		var parts []int
		for _, rec := range batch {
			if !seen[rec.part] {
				seen[rec.part] = true
				parts = append(parts, rec.part)
			}
		}
		sort.Ints(parts)
		start := sp.t
		r.streamInvoke(ctx, sp, sl.eng, owner, parts)
		d := sp.t.Sub(start)
		r.streamInv = append(r.streamInv, invocation{start: start, dur: d})
		r.drainGBs += gbSeconds(d, drainerMB)
		sl.busy = false
		r.busy--
	}
}

// claimUntil is when a drainer invocation started at start stops claiming:
// handlers.Budget's default reserve before the function's timeout, as
// the drainer computes it from its context's deadline.
func (r *scaleRun) claimUntil(start time.Time) time.Time {
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(r.p.DrainerTimeout))
	defer cancel()
	return handlers.Budget{}.ClaimUntil(ctx, clock.NewManual(start))
}

// streamInvoke is one drainer invocation for a stream batch, as
// handlers.DrainerHandler.HandleStream runs it: every partition of parts
// at once, each drained again while it has more and StreamBudget has not
// passed; what was claimed runs to its end.
func (r *scaleRun) streamInvoke(ctx context.Context, sp *vproc, eng *outbox.Engine, owner string, parts []int) {
	deadline := r.claimUntil(sp.t)
	claimEnd := sp.t.Add(r.p.StreamBudget)
	if claimEnd.After(deadline) {
		claimEnd = deadline
	}
	g := newVgroup(sp, owner, len(parts))
	for _, part := range parts {
		g.Go(func(w *vproc, _ func()) {
			for !w.stopped() && w.now().Before(claimEnd) {
				res, err := eng.DrainPartition(ctx, part, outbox.DrainParams{Owner: owner, Deadline: deadline,
					ClaimUntil: claimEnd, Concurrency: r.p.Concurrency})
				if err != nil {
					r.drainErrs++
					return
				}
				if !res.More || res.Claimed == 0 {
					return
				}
			}
		})
	}
	g.Wait()
}

// sweepInvoke is one scheduled drainer invocation over parts, as
// outbox.Engine.Sweep runs it with SweepPartitions places: a partition's
// drain gives its place to the next once it claimed (Started), and each is
// drained again while it has more, until the claim deadline.
func (r *scaleRun) sweepInvoke(ctx context.Context, sp *vproc, eng *outbox.Engine, owner string, parts []int) {
	deadline := r.claimUntil(sp.t)
	g := newVgroup(sp, owner, r.p.SweepPartitions)
	for _, part := range parts {
		g.Go(func(w *vproc, release func()) {
			for !w.stopped() && w.now().Before(deadline) {
				res, err := eng.DrainPartition(ctx, part, outbox.DrainParams{Owner: owner, Deadline: deadline,
					Concurrency: r.p.Concurrency, Started: release})
				if err != nil {
					r.drainErrs++
					return
				}
				if !res.More || res.Claimed == 0 {
					return
				}
			}
		})
	}
	g.Wait()
}

// schedule is the drainer's EventBridge schedule: every period an
// invocation sweeps every partition (sweepInvoke).
func (r *scaleRun) schedule(ctx context.Context, sp *vproc, until time.Time) {
	n := 0
	for !sp.stopped() && sp.t.Before(until) {
		n++
		eng, err := r.newEngine()
		if err != nil {
			panic(err)
		}
		owner := fmt.Sprintf("sweep-%d", n)
		k := n
		r.sweeping[k] = sp.t
		ip := r.s.spawn(owner, sp.t, func(ip *vproc) {
			parts := make([]int, r.p.Partitions)
			first := r.rnd.IntN(r.p.Partitions)
			for i := range parts {
				parts[i] = (first + i) % r.p.Partitions
			}
			start := ip.t
			r.sweepInvoke(ctx, ip, eng, owner, parts)
			d := ip.t.Sub(start)
			if ip.stopped() {
				return // cut off by the run's end: counted as unfinished
			}
			delete(r.sweeping, k)
			r.sweepInv = append(r.sweepInv, invocation{start: start, dur: d})
			r.drainGBs += gbSeconds(d, drainerMB)
		})
		ip.role = "sweep"
		sp.sleep(r.p.Schedule)
	}
}

// reaper is the reaper's schedule: every period one Reap over every
// partition.
func (r *scaleRun) reaper(ctx context.Context, sp *vproc, until time.Time) {
	eng, err := r.newEngine()
	if err != nil {
		panic(err)
	}
	for !sp.stopped() && sp.t.Before(until) {
		start := sp.t
		_, _ = eng.Reap(ctx)
		d := sp.t.Sub(start)
		r.reapInv = append(r.reapInv, invocation{start: start, dur: d})
		r.reapGBs += gbSeconds(d, reaperMB)
		sp.sleepUntil(start.Add(r.p.Schedule))
	}
}

func gbSeconds(d time.Duration, mb int) float64 {
	ms := math.Ceil(float64(d) / float64(time.Millisecond)) // Lambda bills by the millisecond
	return ms / 1000 * float64(mb) / 1024
}

// scaleAdapter is the model's webhook kind: an idempotent receiver with a
// Prepare step whose provider call takes latency and answers Done.
type scaleAdapter struct {
	p       *provider
	s       *vsched
	latency time.Duration
}

func (a scaleAdapter) Spec() outbox.KindSpec {
	return outbox.KindSpec{Name: KindWebhook, Class: outbox.IdempotentReceiver, VariantMode: outbox.SingleShape}
}

func (scaleAdapter) Validate(string, json.RawMessage) error { return nil }

func (scaleAdapter) Prepare(context.Context, *outbox.Attempt) outbox.Result { return outbox.Result{} }

func (a scaleAdapter) Execute(_ context.Context, att *outbox.Attempt) outbox.Result {
	a.p.call(att.Action.ID)
	if ac := a.s.self(); ac != nil && a.latency > 0 {
		ac.wait(a.latency)
	}
	return outbox.Done("m-" + strconv.FormatInt(att.Action.Seq, 36))
}

// ScaleGridOptions is the grid `make bench` runs.
type ScaleGridOptions struct {
	Rates      []float64
	Partitions []int
	// Arrivals bounds a point's window: Window = Arrivals/Rate, between
	// MinWindow and MaxWindow (the simulation's cost grows with arrivals).
	Arrivals             int
	MinWindow, MaxWindow time.Duration
	Seed                 uint64
	TableWRU             float64 // 0: TableWRU
	Lanes                int     // ScaleParams.Lanes
}

// DefaultScaleGrid is issue 18's grid.
var DefaultScaleGrid = ScaleGridOptions{
	Rates:      []float64{100, 1000, 3000, 10000},
	Partitions: []int{16, 64, 256, 1024},
	Arrivals:   12000,
	MinWindow:  3 * time.Second,
	MaxWindow:  20 * time.Second,
	Seed:       1,
}

// ScaleGrid runs every rate at every partition count.
func ScaleGrid(ctx context.Context, o ScaleGridOptions, progress func(string)) ([]ScalePoint, error) {
	var out []ScalePoint
	for _, rate := range o.Rates {
		w := time.Duration(float64(o.Arrivals) / rate * float64(time.Second))
		w = min(max(w, o.MinWindow), o.MaxWindow).Round(100 * time.Millisecond)
		for _, parts := range o.Partitions {
			if progress != nil {
				progress(fmt.Sprintf("scale model: %.0f/s, %d partitions, window %s", rate, parts, w))
			}
			pt, err := ScaleRun(ctx, ScaleParams{Rate: rate, Partitions: parts, Warmup: 2 * time.Second, Window: w, Seed: o.Seed, TableWRU: o.TableWRU, Lanes: o.Lanes})
			if err != nil {
				return out, err
			}
			out = append(out, pt)
		}
	}
	return out, nil
}
