package handlers

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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
	windows    []DrainWindow // of DrainPartition calls
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

func (f *fakeEngine) DrainPartition(_ context.Context, p int, w DrainWindow) (DrainStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drained = append(f.drained, p)
	f.windows = append(f.windows, w)
	if f.failOn[p] {
		return DrainStats{}, errors.New("throttled")
	}
	return f.pass(w.Deadline), nil
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
		{Partition: 0, DueDepth: 4, BlockedDepth: 3, ClaimedDepth: 1, OldestDueAge: 30 * time.Second, OldestBlockedAge: time.Hour},
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

// deadlineCtx reports a deadline on the manual clock's time line without
// the real timer a context.WithDeadline would start.
type deadlineCtx struct {
	context.Context
	deadline time.Time
}

func (c deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }
