package handlers

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
)

func TestDrainer(t *testing.T) {
	t.Parallel()

	t.Run("FailedPartitionReportsItsRecords", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.engine.failOn[1] = true
		var ev events.DynamoDBEvent
		require.NoError(t, json.Unmarshal(readEvent(t, "dynamodb-stream.json"), &ev))
		resp, err := b.drainer().HandleStream(context.Background(), ev)
		require.NoError(t, err)
		require.Equal(t, []events.DynamoDBBatchItemFailure{
			{ItemIdentifier: "111100000000000000000001"},
			{ItemIdentifier: "111100000000000000000003"},
		}, resp.BatchItemFailures)
		require.ElementsMatch(t, []int{1, 2}, b.engine.drained)
	})

	t.Run("StopsClaimingBeforeTheDeadline", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.engine.more = 100
		b.engine.passTime = 10 * time.Second
		start := b.clk.Now()
		ctx := deadlineCtx{context.Background(), start.Add(60 * time.Second)}
		resp, err := b.drainer().HandleSchedule(ctx, events.EventBridgeEvent{ID: "x"})
		require.NoError(t, err)
		// The drain deadline is 5s before the invocation's: passes at 0s
		// … 50s, none after 55s.
		require.Equal(t, 6, b.engine.sweeps)
		require.True(t, resp.More)
		for _, u := range b.engine.claimUntil {
			require.Equal(t, start.Add(55*time.Second), u)
		}
	})

	t.Run("PartitionsWithNoTimeLeftAreRetried", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := deadlineCtx{context.Background(), b.clk.Now()}
		var ev events.DynamoDBEvent
		require.NoError(t, json.Unmarshal(readEvent(t, "dynamodb-stream.json"), &ev))
		resp, err := b.drainer().HandleStream(ctx, ev)
		require.NoError(t, err)
		require.Empty(t, b.engine.drained)
		require.Len(t, resp.BatchItemFailures, 3, "every record of a named partition")
	})

	t.Run("StreamClaimsForItsBudget", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.engine.more = 100
		b.engine.passTime = 4 * time.Second
		start := b.clk.Now()
		ctx := deadlineCtx{context.Background(), start.Add(2 * time.Minute)}
		ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{Change: events.DynamoDBStreamRecord{
			Keys: map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute("P#3")}, SequenceNumber: "7"}}}}
		resp, err := b.drainer().HandleStream(ctx, ev)
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures, "work left at the budget is no failure")
		// Passes at 0s, 4s and 8s; none from 12s, past the 10s budget.
		require.Equal(t, []int{3, 3, 3}, b.engine.drained)
		for _, w := range b.engine.windows {
			require.Equal(t, start.Add(DefaultStreamBudget), w.ClaimUntil)
			require.Equal(t, start.Add(2*time.Minute-5*time.Second), w.Deadline, "attempts still end by the drain deadline")
		}
	})

	t.Run("StreamPartitionsDrainAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// Each drain waits until the batch's two partitions are both in
		// flight: drained one after another, the first would never return.
		g := &gateEngine{fakeEngine: b.engine, want: 2, release: make(chan struct{})}
		h := b.drainer()
		h.Engine = g
		b.engine.failOn[1] = true
		var ev events.DynamoDBEvent
		require.NoError(t, json.Unmarshal(readEvent(t, "dynamodb-stream.json"), &ev))
		resp, err := h.HandleStream(context.Background(), ev)
		require.NoError(t, err)
		require.False(t, g.timedOut.Load(), "the partitions were not drained at once")
		require.Equal(t, 2, int(g.peak.Load()))
		require.ElementsMatch(t, []int{1, 2}, b.engine.drained)
		require.Equal(t, []events.DynamoDBBatchItemFailure{
			{ItemIdentifier: "111100000000000000000001"},
			{ItemIdentifier: "111100000000000000000003"},
		}, resp.BatchItemFailures, "the failed partition's records, in order")
	})

	t.Run("UnknownEventIsRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.drainer().Invoke(context.Background(), json.RawMessage(`{"hello":"world"}`))
		require.ErrorIs(t, err, ErrUnknownEvent)
	})
}

// gateEngine holds every DrainPartition until want of them are in flight
// (or a minute passed: then timedOut says the drains did not overlap).
type gateEngine struct {
	*fakeEngine
	want     int32
	inFlight atomic.Int32
	peak     atomic.Int32
	timedOut atomic.Bool
	once     sync.Once
	release  chan struct{}
}

func (g *gateEngine) DrainPartition(ctx context.Context, p int, w DrainWindow) (DrainStats, error) {
	n := g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	for {
		old := g.peak.Load()
		if n <= old || g.peak.CompareAndSwap(old, n) {
			break
		}
	}
	if n >= g.want {
		g.once.Do(func() { close(g.release) })
	}
	select {
	case <-g.release:
	case <-time.After(time.Minute):
		g.timedOut.Store(true)
	}
	return g.fakeEngine.DrainPartition(ctx, p, w)
}
