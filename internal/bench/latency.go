package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

// The latency model (docs/benchmarks.md explains it).
const (
	// CallLatency is spent on the caller's simulated clock by every
	// DynamoDB call (ddblocal Fault.Delay through a Sleeper).
	CallLatency = 5 * time.Millisecond
	// StreamPoll is how often Lambda polls a DynamoDB stream shard (AWS:
	// "Lambda polls shards in your DynamoDB stream for records at a base
	// rate of 4 times per second").
	StreamPoll = 250 * time.Millisecond
	// ScheduleEvery is the drainer's EventBridge schedule.
	ScheduleEvery = time.Minute
)

// Latency is the enqueue-to-provider-call latency of one wake-up mode.
type Latency struct {
	Mode          string
	Actions       int
	Rate          float64 // arrivals per second
	P50, P99, Max time.Duration
}

type clockKey struct{}

// maxClock reads the later of two clocks: the embedded DynamoDB's view of
// time when the enqueuer and the drainer keep their own.
type maxClock struct{ a, b clock.Clock }

func (m maxClock) Now() time.Time {
	x, y := m.a.Now(), m.b.Now()
	if x.After(y) {
		return x
	}
	return y
}

// sleeper advances the simulated clock carried by the call's context.
func sleeper(ctx context.Context, d time.Duration) error {
	if m, ok := ctx.Value(clockKey{}).(*clock.Manual); ok {
		m.Advance(d)
	}
	return nil
}

func catchUp(m *clock.Manual, t time.Time) {
	if m.Now().Before(t) {
		m.Set(t)
	}
}

// LatencyRun enqueues n keyless webhook actions arriving as a Poisson
// process of rate per second (seeded), on 16 partitions, and measures the
// time from the start of each enqueue call to the start of its provider
// call. The enqueuer and the drainer each keep a simulated clock; every
// DynamoDB call spends CallLatency on the clock of its caller. With stream
// wake-up, the drainer is invoked at each StreamPoll tick at which the
// stream holds new records and drains the partitions they name (one
// invocation at a time, as Lambda does per shard); with the schedule alone,
// it sweeps every partition every ScheduleEvery. The drainer runs its
// attempts one at a time (the real one runs 4 lane groups at once), so
// drain times are an upper bound.
func LatencyRun(ctx context.Context, stream bool, n int, rate float64, payloadBytes int, seed uint64) (Latency, error) {
	l, _, err := streamRun(ctx, streamOpts{stream: stream, n: n, rate: rate, payloadBytes: payloadBytes, seed: seed})
	return l, err
}

// StreamRun is LatencyRun that also returns what the run's actions cost;
// with lanes > 0 its actions are laned webhooks, each of one of that many
// lanes chosen at random: the laned trickle under stream wake-ups.
func StreamRun(ctx context.Context, stream bool, n int, rate float64, payloadBytes int, seed uint64, lanes int) (Latency, Cost, error) {
	return streamRun(ctx, streamOpts{stream: stream, n: n, rate: rate, payloadBytes: payloadBytes, seed: seed, lanes: lanes})
}

// streamOpts is one run of the wake-up model: n arrivals at rate per
// second; with lanes > 0 each arrival is a member of one of that many
// lanes, chosen at random.
type streamOpts struct {
	stream       bool
	n            int
	rate         float64
	payloadBytes int
	seed         uint64
	lanes        int
}

// streamRun runs the model LatencyRun describes and returns its latency
// and what its actions cost.
func streamRun(ctx context.Context, o streamOpts) (Latency, Cost, error) {
	n, rate, stream := o.n, o.rate, o.stream
	enqClk, drnClk := clock.NewManual(Start), clock.NewManual(Start)
	delay := ddblocal.WithFaults(ddblocal.FaultPlanFunc(func(ddblocal.Call) ddblocal.Fault { return ddblocal.Fault{Delay: CallLatency} }))
	de, err := newEnv(ctx, envOpts{clk: drnClk, dbClock: maxClock{enqClk, drnClk},
		dbOpts: []ddblocal.Option{delay, ddblocal.WithSleeper(sleeper)}})
	if err != nil {
		return Latency{}, Cost{}, err
	}
	ee, err := newEnv(ctx, envOpts{clk: enqClk, sharedDB: de.db, sharedCC: de.cc, sharedM: de.meter, sharedPrv: de.prov})
	if err != nil {
		return Latency{}, Cost{}, err
	}
	ectx := context.WithValue(ctx, clockKey{}, enqClk)
	dctx := context.WithValue(ctx, clockKey{}, drnClk)
	rnd := rand.New(rand.NewPCG(o.seed, o.seed+1))
	laneRnd := rand.New(rand.NewPCG(o.seed+2, o.seed+3))
	pl := payload(o.payloadBytes)
	began := time.Now()

	type rec struct {
		id        string
		part      int
		start     time.Time
		committed time.Time
	}
	var recs []rec
	var pending []int // indexes into recs not yet seen by the drainer
	nextArrival := Start.Add(time.Duration(rnd.ExpFloat64() / rate * float64(time.Second)))
	every := ScheduleEvery
	if stream {
		every = StreamPoll
	}
	nextWake := Start.Add(every)
	for done := 0; done < n || de.prov.delivered() < n; {
		if done < n && nextArrival.Before(nextWake) {
			catchUp(enqClk, nextArrival)
			start := enqClk.Now()
			p := outbox.EnqueueParams{Kind: KindWebhook, WorkspaceID: "ws-00001", Payload: pl}
			if o.lanes > 0 {
				p.LaneKey = fmt.Sprintf("order-%04d", laneRnd.IntN(o.lanes))
			}
			r, err := ee.eng.Enqueue(ectx, p)
			if err != nil {
				return Latency{}, Cost{}, fmt.Errorf("latency: enqueue: %w", err)
			}
			recs = append(recs, rec{id: r.Action.ID, part: r.Action.Partition, start: start, committed: enqClk.Now()})
			pending = append(pending, len(recs)-1)
			done++
			nextArrival = nextArrival.Add(time.Duration(rnd.ExpFloat64() / rate * float64(time.Second)))
			continue
		}
		catchUp(drnClk, nextWake)
		wake := drnClk.Now()
		if stream {
			// The partitions named by records committed before this poll.
			parts := map[int]bool{}
			rest := pending[:0]
			for _, i := range pending {
				if recs[i].committed.After(wake) {
					rest = append(rest, i)
					continue
				}
				parts[recs[i].part] = true
			}
			pending = rest
			keys := make([]int, 0, len(parts))
			for p := range parts {
				keys = append(keys, p)
			}
			sort.Ints(keys)
			for _, p := range keys {
				if _, err := de.eng.DrainPartition(dctx, p, outbox.DrainParams{Owner: "drainer", Concurrency: 1}); err != nil {
					return Latency{}, Cost{}, fmt.Errorf("latency: drain: %w", err)
				}
			}
		} else {
			if _, err := de.eng.Sweep(dctx, outbox.DrainParams{Owner: "drainer", Concurrency: 1}); err != nil {
				return Latency{}, Cost{}, fmt.Errorf("latency: sweep: %w", err)
			}
		}
		nextWake = nextWake.Add(every)
		if nextWake.Before(drnClk.Now()) {
			nextWake = drnClk.Now()
		}
		if done >= n && wake.Sub(enqClk.Now()) > 10*ScheduleEvery {
			return Latency{}, Cost{}, fmt.Errorf("latency: %d of %d delivered long after the last arrival", de.prov.delivered(), n)
		}
	}
	lat := make([]time.Duration, 0, len(recs))
	for _, r := range recs {
		t, ok := de.prov.firstCall(r.id)
		if !ok {
			return Latency{}, Cost{}, fmt.Errorf("latency: %s never reached the provider", r.id)
		}
		lat = append(lat, t.Sub(r.start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	mode := "schedule alone (1 min)"
	if stream {
		mode = "stream wake-up"
	}
	if o.lanes > 0 {
		mode += fmt.Sprintf(", laned (%d lanes)", o.lanes)
	}
	l := Latency{Mode: mode, Actions: n, Rate: rate, P50: pct(lat, 0.50), P99: pct(lat, 0.99), Max: lat[len(lat)-1]}
	c := de.cost(fmt.Sprintf("%s webhook, %s, %.0f/s", map[bool]string{true: "laned", false: "keyless"}[o.lanes > 0], mode, rate), n, time.Since(began))
	return l, c, nil
}

func pct(s []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(s))+0.5) - 1
	i = max(0, min(i, len(s)-1))
	return s[i]
}
