package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// TestStatusOfATenantAndOfLanes: the status counts only the named
// workspaces when asked (Workspaces), lanes included (their blocked
// members apart, BlockedDepth), and reads its partitions at once
// (Concurrency) to the same figures.
func TestStatusOfATenantAndOfLanes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	e := newPairEngine(t, db, clk, Config{Partitions: 4})
	for i := range 3 {
		_, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "a", LaneKey: "order-1", Payload: []byte(`{}`)})
		require.NoError(t, err, i)
	}
	for range 2 {
		_, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "b", Payload: []byte(`{}`)})
		require.NoError(t, err)
	}
	_, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "b", Payload: []byte(`{}`), Propose: true})
	require.NoError(t, err)
	clk.Advance(time.Second)

	seq, err := e.StatusGet(ctx, StatusParams{})
	require.NoError(t, err)
	require.Equal(t, 3, seq.Total.DueDepth)
	require.Equal(t, 2, seq.Total.BlockedDepth, "the lane's second and third members wait for its head")
	at, err := e.StatusGet(ctx, StatusParams{Concurrency: 4})
	require.NoError(t, err)
	require.Equal(t, seq, at)

	a, err := e.StatusGet(ctx, StatusParams{Workspaces: []string{"a"}, Concurrency: 2})
	require.NoError(t, err)
	require.Equal(t, 1, a.Total.DueDepth)
	require.Equal(t, 2, a.Total.BlockedDepth)
	b, err := e.StatusGet(ctx, StatusParams{Workspaces: []string{"b"}})
	require.NoError(t, err)
	require.Equal(t, 2, b.Total.DueDepth)
	require.Zero(t, b.Total.BlockedDepth)
}
