package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// TestClaimedLeaseIsTheStoredOne: the lease a claim and a renewal hand the
// attempt is the one the row stores, in whole milliseconds. The provider
// call's budget is taken from it (callBudget); a lease kept to the
// nanosecond let a call run up to a millisecond past the lease another
// drainer reads, when the clocks disagree by exactly the skew bound (sim
// seed 25 with every clock at the bound).
func TestClaimedLeaseIsTheStoredOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 700_000, time.UTC)) // .0007 s
	reg := NewRegistry()
	require.NoError(t, reg.Register(stubAdapter{KindSpec{Name: "a", Class: AtMostOnce}}))
	e, err := New(ddblocal.New(ddblocal.WithClock(clk)), clk, reg, Config{Table: "ferry", Partitions: 1})
	require.NoError(t, err)
	require.NoError(t, e.EnsureTable(ctx))
	_, err = e.Enqueue(ctx, EnqueueParams{Kind: "a", WorkspaceID: "w", Payload: []byte(`{}`)})
	require.NoError(t, err)

	v, err := e.FenceTake(ctx, 0, "d", clk.Now().Add(time.Minute))
	require.NoError(t, err)
	cr, err := e.Claim(ctx, 0, ClaimParams{Owner: "d", Version: v, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, 1, cr.Claimed)
	a := cr.Groups[0][0]
	stored, err := e.ActionGet(ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, stored.LeaseExpiresAt, a.LeaseExpiresAt, "the claim's lease is the row's")

	clk.Advance(1300 * time.Microsecond)
	require.NoError(t, e.leaseRenew(ctx, &a))
	stored, err = e.ActionGet(ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, stored.LeaseExpiresAt, a.LeaseExpiresAt, "the renewal's lease is the row's")
}
