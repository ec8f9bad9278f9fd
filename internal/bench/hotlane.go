package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

// HotLane is how fast one lane takes enqueues (issue 28, item 2): every
// enqueue into a lane moves its tail item with a conditional write, so
// enqueues into one lane land one after another, and one whose tries all
// met a tail that had moved answers outbox.LaneBusyError (HTTP 429).
type HotLane struct {
	Model    string // "real 5 ms" (HotLaneRun) or "scale model" (HotLaneModelRun)
	Clients  int    // concurrent enqueuers (HotLaneRun)
	Rate     float64
	Batch    int // actions per request (a batch into the one lane)
	Requests int // enqueue requests made
	Refused  int // answered LaneBusyError (or, in the model, any error)
	Actions  int // actions accepted
	Elapsed  time.Duration
	// PerSecond is the accepted actions per second.
	PerSecond float64
}

// HotLaneRun runs clients enqueuers, each sending requests of batch
// actions into the lane "hot" one after another for dur, every DynamoDB
// call delayed CallLatency in real time (the calls of concurrent clients
// overlap, as against DynamoDB). Wall time, so the machine's load adds to
// it; the share refused does not depend on it much.
func HotLaneRun(ctx context.Context, clients, batch int, dur time.Duration, payloadBytes int) (HotLane, error) {
	plan := ddblocal.FaultPlanFunc(func(ddblocal.Call) ddblocal.Fault { return ddblocal.Fault{Delay: CallLatency} })
	e, err := newEnv(ctx, envOpts{clk: clock.System{}, cfg: outbox.Config{Partitions: 16}, unbooked: true,
		dbOpts: []ddblocal.Option{ddblocal.WithFaults(plan)}})
	if err != nil {
		return HotLane{}, err
	}
	pl := payload(payloadBytes)
	ps := make([]outbox.EnqueueParams, batch)
	for i := range ps {
		ps[i] = outbox.EnqueueParams{Kind: KindWebhook, WorkspaceID: "ws-00001", LaneKey: "hot", Payload: pl}
	}
	var requests, refused, accepted atomic.Int64
	var firstErr error
	var once sync.Once
	began := time.Now()
	until := began.Add(dur)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for time.Now().Before(until) {
				requests.Add(1)
				_, err := e.eng.EnqueueBatch(ctx, ps)
				var busy *outbox.LaneBusyError
				switch {
				case err == nil:
					accepted.Add(int64(batch))
				case errors.As(err, &busy):
					refused.Add(1)
				default:
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(began)
	if firstErr != nil {
		return HotLane{}, fmt.Errorf("hot lane: %w", firstErr)
	}
	return HotLane{Model: "real 5 ms", Clients: clients, Batch: batch, Requests: int(requests.Load()), Refused: int(refused.Load()),
		Actions: int(accepted.Load()), Elapsed: el, PerSecond: float64(accepted.Load()) / el.Seconds()}, nil
}

// HotLaneModelRun is the scale model (ScaleRun: the deployed stack on
// simulated clocks, the enqueue function's instances, DynamoDB's per-key
// write ceiling) with every action in one lane, arriving at rate per
// second for window: a refused enqueue is answered 429 and its client
// sends it again a second later.
func HotLaneModelRun(ctx context.Context, rate float64, window time.Duration, seed uint64) (HotLane, error) {
	pt, err := ScaleRun(ctx, ScaleParams{Rate: rate, Partitions: 16, Lanes: 1, Warmup: time.Second, Window: window, Seed: seed})
	if err != nil {
		return HotLane{}, err
	}
	acked := pt.Arrivals - pt.Undelivered
	return HotLane{Model: "scale model", Rate: rate, Batch: 1, Requests: pt.Arrivals + pt.EnqueueErrors, Refused: pt.EnqueueErrors,
		Actions: acked, Elapsed: window, PerSecond: pt.Sustained}, nil
}

// HotLaneSection writes the hot-lane table and how it was measured.
func HotLaneSection(w io.Writer, hs []HotLane) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("| model | clients or arrivals/s | actions per request | requests | refused (429) | actions/s (real: accepted; model: delivered) |")
	p("|---|---:|---:|---:|---:|---:|")
	for _, h := range hs {
		who := fmt.Sprintf("%d clients", h.Clients)
		if h.Model == "scale model" {
			who = fmt.Sprintf("%.0f/s", h.Rate)
		}
		share := 0.0
		if h.Requests > 0 {
			share = 100 * float64(h.Refused) / float64(h.Requests)
		}
		p("| %s | %s | %d | %d | %d (%.0f%%) | **%.0f** |", h.Model, who, h.Batch, h.Requests, h.Refused, share, h.PerSecond)
	}
	p("")
	p("Every enqueue into a lane moves the lane's tail item with a write conditioned on the tail it read (design.md §3.4, §4.3), so enqueues into one lane land one after another; an enqueue whose tries all met a tail that had moved (9 tries, a jittered wait of up to 1, 2, 4 … 32 ms between them) answers `outbox.LaneBusyError`, HTTP 429 `throttled` with `Retry-After`, having written nothing. **real 5 ms** (`bench.HotLaneRun`): that many clients send requests into one lane, one after another each, for %s, every DynamoDB call delayed %s in real time (the calls of concurrent clients overlap as against DynamoDB; wall time on a shared machine); accepted actions/s counts the actions of the requests answered. **scale model** (`bench.HotLaneModelRun`, `bench.ScaleRun` with one lane): Poisson arrivals at that rate through the enqueue function's instances on simulated clocks, a refused request sent again a second later by its client; requests count those retries; accepted actions/s is the provider calls started in the window (the lane also drains one member at a time). Beyond the rate a lane takes, the contract is docs/api.md's \"A hot lane\": a 429 with `Retry-After`, or a lane's actions sent together in one `POST /v1/actions:batch` (up to 25, one tail move for all).", hotLaneFor, CallLatency)
}

// hotLaneFor is how long each real-time hot-lane run lasts.
const hotLaneFor = 3 * time.Second

// HotLanes runs the hot-lane table of `make bench`.
func HotLanes(ctx context.Context, payloadBytes int, progress func(string)) ([]HotLane, error) {
	var out []HotLane
	for _, c := range []struct{ clients, batch int }{{1, 1}, {4, 1}, {16, 1}, {64, 1}, {16, outbox.MaxBatchEnqueue}} {
		progress(fmt.Sprintf("hot lane: %d clients, %d actions per request (real 5 ms per call)", c.clients, c.batch))
		h, err := HotLaneRun(ctx, c.clients, c.batch, hotLaneFor, payloadBytes)
		if err != nil {
			return out, err
		}
		out = append(out, h)
	}
	for _, rate := range []float64{25, 50, 100, 200} {
		progress(fmt.Sprintf("hot lane: %.0f arrivals/s (scale model)", rate))
		h, err := HotLaneModelRun(ctx, rate, 5*time.Second, 1)
		if err != nil {
			return out, err
		}
		out = append(out, h)
	}
	return out, nil
}
