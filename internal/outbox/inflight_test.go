package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// A holder that takes the fence again keeps what it saw settle only when
// nobody held the fence in between (design.md §3.3): another holder may have
// claimed those actions again, and their entries are then not ours to drop.
func TestFenceRetakeForgetsSettledWhenAnotherHolderCameBetween(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	e, err := New(ddblocal.New(ddblocal.WithClock(clk)), clk, NewRegistry(), Config{Table: "ferry", Partitions: 1})
	require.NoError(t, err)
	require.NoError(t, e.EnsureTable(ctx))

	h, err := e.fenceTake(ctx, 0, "a", clk.Now().Add(time.Minute))
	require.NoError(t, err)
	set := map[int64]time.Time{7: clk.Now().Add(time.Minute)}
	require.NoError(t, e.inflightWrite(ctx, h, set))
	h.settle(7)
	require.NoError(t, e.fenceRetake(ctx, h, clk.Now().Add(2*time.Minute)))
	require.Equal(t, []int64{7}, h.removable(nil), "nobody came between: still settled")

	clk.Advance(3 * time.Minute) // a's lease on the fence ends
	b, err := e.fenceTake(ctx, 0, "b", clk.Now().Add(time.Second))
	require.NoError(t, err)
	require.Equal(t, h.version+1, b.version)
	clk.Advance(2 * time.Second)
	require.NoError(t, e.fenceRetake(ctx, h, clk.Now().Add(time.Minute)))
	require.Equal(t, b.version+1, h.version)
	require.Empty(t, h.removable(nil), "b held the fence in between: what a saw settle is forgotten")
}
