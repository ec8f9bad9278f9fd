package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/telemetry"
)

// fakeEngine records what the handlers asked of it.
type fakeEngine struct {
	mu         sync.Mutex
	clk        *clock.Manual
	sweeps     int
	drained    []int
	failOn     map[int]bool
	more       int           // how many passes answer More
	passTime   time.Duration // clock advance per pass
	claimUntil []time.Time
}

func (f *fakeEngine) pass(until time.Time) DrainStats {
	f.claimUntil = append(f.claimUntil, until)
	f.clk.Advance(f.passTime)
	st := DrainStats{Claimed: 2, Started: 2, Ended: 2}
	if f.more > 0 {
		f.more--
		st.More = true
	}
	return st
}

func (f *fakeEngine) Sweep(_ context.Context, until time.Time) (DrainStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweeps++
	return f.pass(until), nil
}

func (f *fakeEngine) DrainPartition(_ context.Context, p int, until time.Time) (DrainStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drained = append(f.drained, p)
	if f.failOn[p] {
		return DrainStats{}, errors.New("throttled")
	}
	return f.pass(until), nil
}

func (f *fakeEngine) PartitionOf(pk string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(pk, "P#"))
	if err != nil || !strings.HasPrefix(pk, "P#") || n >= 4 {
		return 0, false
	}
	return n, true
}

func (f *fakeEngine) Reap(context.Context) (ReapStats, error) {
	return ReapStats{Uncertain: 1, Expired: 2, Backlog: []Backlog{
		{Partition: 0, DueDepth: 4, ClaimedDepth: 1, OldestDueAge: 30 * time.Second},
		{Partition: 1, DueDepth: 1},
	}}, nil
}

func (f *fakeEngine) Retain(context.Context) (RetainStats, error) {
	return RetainStats{Deleted: 3, Trimmed: 1}, nil
}

type testBundle struct {
	clk    *clock.Manual
	engine *fakeEngine
	out    *bytes.Buffer
	obs    *telemetry.Observer
	log    *slog.Logger
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	out := &bytes.Buffer{}
	w := telemetry.NewLockedWriter(out)
	log := telemetry.NewLogger(w, slog.LevelDebug)
	return &testBundle{
		clk: clk, engine: &fakeEngine{clk: clk, failOn: map[int]bool{}}, out: out, log: log,
		obs: telemetry.NewObserver(telemetry.NewMetrics(w, clk, nil), log),
	}
}

func (b *testBundle) drainer() *DrainerHandler {
	return &DrainerHandler{Engine: b.engine, Clock: b.clk, Log: b.log, Metrics: b.obs}
}

func readEvent(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	require.NoError(t, err)
	return raw
}

// invoke goes through lambda.NewHandler, as the runtime does: JSON in, JSON out.
func invoke(t *testing.T, handler any, ctx context.Context, raw []byte) []byte {
	t.Helper()
	out, err := lambda.NewHandler(handler).Invoke(ctx, raw)
	require.NoError(t, err)
	return out
}

func TestEventSamples(t *testing.T) {
	t.Parallel()

	t.Run("ScheduleSweepsThroughDrainer", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		out := invoke(t, b.drainer().Invoke, context.Background(), readEvent(t, "eventbridge-schedule.json"))
		var resp SweepResponse
		require.NoError(t, json.Unmarshal(out, &resp))
		require.Equal(t, 1, b.engine.sweeps)
		require.Equal(t, SweepResponse{Claimed: 2, Started: 2, Ended: 2}, resp)
	})

	t.Run("StreamWakesNamedPartitions", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		out := invoke(t, b.drainer().Invoke, context.Background(), readEvent(t, "dynamodb-stream.json"))
		var resp events.DynamoDBEventResponse
		require.NoError(t, json.Unmarshal(out, &resp))
		require.Empty(t, resp.BatchItemFailures)
		require.Equal(t, []int{1, 2}, b.engine.drained, "each named partition once; the K# record names none")
		require.Zero(t, b.engine.sweeps)
		require.Contains(t, string(out), `"batchItemFailures":[]`)
	})

	t.Run("ScheduleThroughReaper", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		h := &ReaperHandler{Engine: b.engine, Obs: b.obs, Log: b.log}
		out := invoke(t, h.Invoke, context.Background(), readEvent(t, "eventbridge-schedule.json"))
		var resp ReapResponse
		require.NoError(t, json.Unmarshal(out, &resp))
		require.Equal(t, ReapResponse{Uncertain: 1, Expired: 2, BacklogDepth: 5, ClaimedDepth: 1}, resp)
		require.Contains(t, b.out.String(), `"BacklogDepth":5`)
		require.Contains(t, b.out.String(), `"OldestDueAge":30`)
		require.Contains(t, b.out.String(), `"ReapedActions":2`)
	})

	t.Run("ScheduleThroughRetention", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		h := &RetentionHandler{Engine: b.engine, Obs: b.obs, Log: b.log}
		out := invoke(t, h.Invoke, context.Background(), readEvent(t, "eventbridge-schedule.json"))
		require.JSONEq(t, `{"deleted":3,"trimmed":1}`, string(out))
		require.Contains(t, b.out.String(), `"RetainedDeletes":3`)
	})
}

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
		require.Equal(t, []int{1, 2}, b.engine.drained)
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

	t.Run("PartitionsPastTheDeadlineAreRetried", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.engine.passTime = 56 * time.Second
		ctx := deadlineCtx{context.Background(), b.clk.Now().Add(60 * time.Second)}
		var ev events.DynamoDBEvent
		require.NoError(t, json.Unmarshal(readEvent(t, "dynamodb-stream.json"), &ev))
		resp, err := b.drainer().HandleStream(ctx, ev)
		require.NoError(t, err)
		require.Equal(t, []int{1}, b.engine.drained)
		require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: "111100000000000000000002"}}, resp.BatchItemFailures)
	})

	t.Run("StreamPartitionsDrainAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// Each drain waits until the batch's two partitions are both in
		// flight: drained one after another, the first would never return.
		g := &gateEngine{fakeEngine: b.engine, want: 2, release: make(chan struct{})}
		h := b.drainer()
		h.Engine = g
		h.Partitions = 4
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

func TestBudget(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	now := clk.Now()
	for name, tc := range map[string]struct {
		left, want time.Duration
	}{
		"LongInvocationKeepsTheReserve": {left: 15 * time.Minute, want: 15*time.Minute - 5*time.Second},
		"ShortInvocationKeepsAQuarter":  {left: 8 * time.Second, want: 6 * time.Second},
		"PastDeadlineClaimsNothing":     {left: -time.Second, want: 0},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := deadlineCtx{context.Background(), now.Add(tc.left)}
			require.Equal(t, now.Add(tc.want), Budget{}.ClaimUntil(ctx, clk))
		})
	}
	require.Equal(t, now.Add(30*time.Second-5*time.Second), Budget{}.ClaimUntil(context.Background(), clk))
}

// deadlineCtx reports a deadline on the manual clock's time line without
// the real timer a context.WithDeadline would start.
type deadlineCtx struct {
	context.Context
	deadline time.Time
}

func (c deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

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

func (g *gateEngine) DrainPartition(ctx context.Context, p int, until time.Time) (DrainStats, error) {
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
	return g.fakeEngine.DrainPartition(ctx, p, until)
}
