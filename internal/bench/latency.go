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
	enqClk, drnClk := clock.NewManual(Start), clock.NewManual(Start)
	delay := ddblocal.WithFaults(ddblocal.FaultPlanFunc(func(ddblocal.Call) ddblocal.Fault { return ddblocal.Fault{Delay: CallLatency} }))
	de, err := newEnv(ctx, envOpts{clk: drnClk, dbClock: maxClock{enqClk, drnClk},
		dbOpts: []ddblocal.Option{delay, ddblocal.WithSleeper(sleeper)}})
	if err != nil {
		return Latency{}, err
	}
	ee, err := newEnv(ctx, envOpts{clk: enqClk, sharedDB: de.db, sharedCC: de.cc, sharedPrv: de.prov})
	if err != nil {
		return Latency{}, err
	}
	ectx := context.WithValue(ctx, clockKey{}, enqClk)
	dctx := context.WithValue(ctx, clockKey{}, drnClk)
	rnd := rand.New(rand.NewPCG(seed, seed+1))
	pl := payload(payloadBytes)

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
			r, err := ee.eng.Enqueue(ectx, outbox.EnqueueParams{Kind: KindWebhook, WorkspaceID: "ws-00001", Payload: pl})
			if err != nil {
				return Latency{}, fmt.Errorf("latency: enqueue: %w", err)
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
					return Latency{}, fmt.Errorf("latency: drain: %w", err)
				}
			}
		} else {
			if _, err := de.eng.Sweep(dctx, outbox.DrainParams{Owner: "drainer", Concurrency: 1}); err != nil {
				return Latency{}, fmt.Errorf("latency: sweep: %w", err)
			}
		}
		nextWake = nextWake.Add(every)
		if nextWake.Before(drnClk.Now()) {
			nextWake = drnClk.Now()
		}
		if done >= n && wake.Sub(enqClk.Now()) > 10*ScheduleEvery {
			return Latency{}, fmt.Errorf("latency: %d of %d delivered long after the last arrival", de.prov.delivered(), n)
		}
	}
	lat := make([]time.Duration, 0, len(recs))
	for _, r := range recs {
		t, ok := de.prov.firstCall(r.id)
		if !ok {
			return Latency{}, fmt.Errorf("latency: %s never reached the provider", r.id)
		}
		lat = append(lat, t.Sub(r.start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	mode := "schedule alone (1 min)"
	if stream {
		mode = "stream wake-up"
	}
	return Latency{Mode: mode, Actions: n, Rate: rate, P50: pct(lat, 0.50), P99: pct(lat, 0.99), Max: lat[len(lat)-1]}, nil
}

func pct(s []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(s))+0.5) - 1
	i = max(0, min(i, len(s)-1))
	return s[i]
}
