package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSmoke runs every cost workload at a tiny size: each delivers every
// action it enqueued exactly once (the idempotent-receiver stub would
// accept repeats; none happen without faults) and counts units.
func TestSmoke(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pl, err := PayloadFor(ctx, 1024)
	require.NoError(t, err)
	require.Greater(t, pl, 500)
	cs, err := AllCosts(ctx, CostOptions{Payload: pl, Actions: 100, Burst: 50, Backlog: 300, Drainers: 2, Lanes: 5, PerLane: 4, Stranded: 30}, func(string) {})
	require.NoError(t, err)
	require.Len(t, cs, 8)
	for _, c := range cs {
		require.Equal(t, c.Enqueued, c.Delivered, c.Workload)
		require.Zero(t, c.Duplicates, c.Workload)
		require.Greater(t, c.WRU, 3.0, c.Workload)
		require.Greater(t, c.Calls, 1.0, c.Workload)
		requireBreakdownIsTheTotal(t, c)
	}
	only, err := AllCosts(ctx, CostOptions{Payload: pl, Actions: 100, Burst: 50, Stranded: 30, Only: []string{"trickle", "stranded"}}, func(string) {})
	require.NoError(t, err)
	require.Len(t, only, 2)
	require.Contains(t, only[0].Workload, "laned trickle")
	require.Contains(t, only[1].Workload, "stranded")
}

// requireBreakdownIsTheTotal: the meter books every unit and call of a
// workload to some label, so its rows add up to the workload's totals.
func requireBreakdownIsTheTotal(t *testing.T, c Cost) {
	t.Helper()
	var wru, rru, calls float64
	for _, b := range c.Breakdown {
		wru += b.WRU
		rru += b.RRU
		calls += b.CallsPerAction
	}
	require.InDelta(t, c.WRU, wru, 1e-6, c.Workload)
	require.InDelta(t, c.RRU, rru, 1e-6, c.Workload)
	require.InDelta(t, c.Calls, calls, 1e-6, c.Workload)
}

// TestStreamRunLaned: the stream wake-up model with laned arrivals
// delivers every action once and prices it (more than a keyless action:
// each member's enqueue writes the lane tail too).
func TestStreamRunLaned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pl, err := PayloadFor(ctx, 1024)
	require.NoError(t, err)
	kl, kc, err := StreamRun(ctx, true, 200, 10, pl, 8, 0)
	require.NoError(t, err)
	ll, lc, err := StreamRun(ctx, true, 200, 10, pl, 8, 5)
	require.NoError(t, err)
	require.Contains(t, ll.Mode, "laned (5 lanes)")
	for _, c := range []Cost{kc, lc} {
		require.Equal(t, 200, c.Delivered, c.Workload)
		require.Zero(t, c.Duplicates, c.Workload)
		requireBreakdownIsTheTotal(t, c)
	}
	require.Greater(t, lc.WRU, kc.WRU)
	require.Positive(t, kl.P99)
}

// TestDeferredWorkload: the deferred workload (run only when named)
// delivers every action once, after the tenth that waited, and books the
// due index's units: 2 per action, and one insert and one delete more per
// deferral.
func TestDeferredWorkload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pl, err := PayloadFor(ctx, 1024)
	require.NoError(t, err)
	cs, err := AllCosts(ctx, CostOptions{Payload: pl, DeferredMinutes: 2, DeferFor: time.Minute, Only: []string{"deferred"}}, func(string) {})
	require.NoError(t, err)
	require.Len(t, cs, 1)
	c := cs[0]
	require.Contains(t, c.Workload, "deferred (1 in 10 waits 1m0s)")
	require.Equal(t, 240, c.Enqueued)
	require.Equal(t, c.Enqueued, c.Delivered)
	require.Zero(t, c.Duplicates)
	require.InDelta(t, 2.2, c.IndexWRU["due"], 0.05, "2 per action, 2 more per deferral (1 in 10)")
	requireBreakdownIsTheTotal(t, c)
}

// TestHotLaneRunCountsRefusalsApart: the hot-lane run's clients get only
// answers and LaneBusyError refusals (any other error fails it), and every
// request is one or the other.
func TestHotLaneRunCountsRefusalsApart(t *testing.T) {
	t.Parallel()
	h, err := HotLaneRun(context.Background(), 8, 1, 300*time.Millisecond, 200)
	require.NoError(t, err)
	require.Positive(t, h.Actions)
	require.Equal(t, h.Requests, h.Actions+h.Refused)
}

// TestConsolePages: the console's pages render against a filled table,
// each with the calls and read units of its footer; a workspace's listing
// within a creation-time window reads only that stretch of the workspace
// index. (Their times are for the benchmark, not for a test.)
func TestConsolePages(t *testing.T) {
	t.Parallel()
	pages, err := ConsolePages(context.Background(), CostOptions{Backlog: 1000}, func(string) {})
	require.NoError(t, err)
	require.Len(t, pages, 10)
	for _, p := range pages {
		require.Positive(t, p.Calls, p.Page)
		require.Positive(t, p.RRU, p.Page)
	}
	window := pages[4]
	require.Contains(t, window.Page, "time window")
	require.Less(t, window.RRU, pages[3].RRU, "a time window reads only its stretch of the index")
	require.Equal(t, 2, window.Calls)
}
