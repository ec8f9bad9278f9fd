package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// TestIdlePartitionCost measures what the idle-partition constants say
// (ferry partitions --set prints them before it asks): a sweep's and a
// reaper run's visit of an idle partition, calls and units, beside the
// partition map's one read.
func TestIdlePartitionCost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	const n = 64
	e := newPairEngine(t, db, clk, Config{Partitions: n})
	_, err := e.LivePartitions(ctx) // the map, read once and kept
	require.NoError(t, err)
	db.ResetCapacity()
	_, err = e.Sweep(ctx, DrainParams{})
	require.NoError(t, err)
	c := db.Capacity("ferry")
	calls := 0
	for _, k := range c.Calls {
		calls += int(k)
	}
	require.Equal(t, n*IdleSweepCalls, calls, "%v", c.Calls)
	require.InDelta(t, n*IdleSweepWRU, c.TotalWriteUnits(), 0.01)
	require.InDelta(t, n*IdleSweepRRU, c.TotalReadUnits(), 0.01)

	db.ResetCapacity()
	_, err = e.Reap(ctx)
	require.NoError(t, err)
	c = db.Capacity("ferry")
	calls = 0
	for _, k := range c.Calls {
		calls += int(k)
	}
	// The reaper reads the map consistently twice (applying a deploy's
	// count, retiring): 2 calls, 1 unit each.
	require.Equal(t, n*IdleReapCalls+2, calls, "%v", c.Calls)
	require.InDelta(t, n*IdleReapRRU+2, c.TotalReadUnits(), 0.01)
	require.Zero(t, c.TotalWriteUnits())
	require.Contains(t, PartitionCountCost(16, 1024), "1024 partitions cost about 2.9 M write and 2.2 M read units a day idle (16 now: 46 k and 35 k)")
}
