package bench

import (
	"context"
	"testing"

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
	require.Len(t, cs, 7)
	for _, c := range cs {
		require.Equal(t, c.Enqueued, c.Delivered, c.Workload)
		require.Zero(t, c.Duplicates, c.Workload)
		require.Greater(t, c.WRU, 3.0, c.Workload)
		require.Greater(t, c.Calls, 1.0, c.Workload)
	}
}
