package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

// Throughput is the sustained drain rate of one partition.
type Throughput struct {
	Actions     int
	BatchSize   int
	Concurrency int
	Elapsed     time.Duration
	PerSecond   float64
}

// ThroughputRun enqueues n due keyless webhook actions into one partition,
// then one drainer (the only one a partition admits, through its claim
// fence) drains them with every DynamoDB call delayed by CallLatency in
// real time: the drainer's parallel attempts (Concurrency lane groups at
// once) overlap their calls as they would against DynamoDB (the meter books
// nothing here: its booking would make the calls wait for each other).
// Wall time, so the machine's load adds to it.
func ThroughputRun(ctx context.Context, n, batch, concurrency, payloadBytes int) (Throughput, error) {
	var on atomic.Bool
	plan := ddblocal.FaultPlanFunc(func(ddblocal.Call) ddblocal.Fault {
		if on.Load() {
			return ddblocal.Fault{Delay: CallLatency}
		}
		return ddblocal.Fault{}
	})
	e, err := newEnv(ctx, envOpts{clk: clock.System{}, cfg: outbox.Config{Partitions: 1, BatchSize: batch}, unbooked: true,
		dbOpts: []ddblocal.Option{ddblocal.WithFaults(plan)}})
	if err != nil {
		return Throughput{}, err
	}
	pl := payload(payloadBytes)
	for i := 0; i < n; i += outbox.MaxBatchEnqueue {
		ps := make([]outbox.EnqueueParams, 0, outbox.MaxBatchEnqueue)
		for j := i; j < min(n, i+outbox.MaxBatchEnqueue); j++ {
			ps = append(ps, outbox.EnqueueParams{Kind: KindWebhook, WorkspaceID: "ws-00001", Payload: pl})
		}
		if _, err := e.eng.EnqueueBatch(ctx, ps); err != nil {
			return Throughput{}, err
		}
	}
	time.Sleep(5 * time.Millisecond) // every action due
	on.Store(true)
	began := time.Now()
	for round := 0; e.prov.delivered() < n; round++ {
		if round > 1000 {
			return Throughput{}, fmt.Errorf("throughput: %d of %d delivered", e.prov.delivered(), n)
		}
		if _, err := e.eng.DrainPartition(ctx, 0, outbox.DrainParams{Owner: "drainer", BatchSize: batch, Concurrency: concurrency}); err != nil {
			return Throughput{}, err
		}
	}
	el := time.Since(began)
	return Throughput{Actions: n, BatchSize: batch, Concurrency: concurrency, Elapsed: el, PerSecond: float64(n) / el.Seconds()}, nil
}
