package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// Audit (design.md §3.3): a caller of the exported FenceTake/Claim/AttemptFinish
// (a custom driver, as Claim's doc invites) never settles in-flight
// entries: they stay in the fence row until a later claim reads them after
// their lease. inflightCandidates reads at most 10 rounds of 100 keys; with
// more than 1,000 expired entries every later claim of the partition fails,
// and since only a claim can drop entries, the partition never drains
// again. Expected: the partition still drains.
func TestAuditManyExpiredInflightEntriesDoNotWedgeThePartition(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	e := newPairEngine(t, ddblocal.New(ddblocal.WithClock(clk)), clk, Config{Table: "ferry", Partitions: 1})

	const n = 1050
	for range n {
		_, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", Payload: []byte(`{}`)})
		require.NoError(t, err)
	}
	clk.Advance(time.Second)
	v, err := e.FenceTake(ctx, 0, "driver", clk.Now().Add(time.Minute))
	require.NoError(t, err)
	done := 0
	for done < n {
		cr, err := e.Claim(ctx, 0, ClaimParams{Owner: "driver", Version: v, Limit: 90})
		require.NoError(t, err)
		require.NotZero(t, cr.Claimed)
		for _, g := range cr.Groups {
			for _, a := range g {
				_, err := e.AttemptFinish(ctx, a, Done("ok"))
				require.NoError(t, err)
				done++
			}
		}
	}
	require.NoError(t, e.FenceRelease(ctx, 0, "driver", v))

	// Every action ended; their entries stay until their lease is over.
	clk.Advance(6 * time.Minute)
	r, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", Payload: []byte(`{}`)})
	require.NoError(t, err)
	_, err = e.Sweep(ctx, DrainParams{})
	require.NoError(t, err, "a drain after a custom driver's 1,050 finished claims")
	got, err := e.ActionGet(ctx, r.Action.ID)
	require.NoError(t, err)
	require.Equal(t, StateDONE, got.State)
}
