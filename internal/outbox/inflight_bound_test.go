package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// A custom driver (exported FenceTake/Claim/AttemptFinish) leaves 2,500
// entries in the fence's in-flight map. Once their leases are over, every
// claim reads a bounded slice of them and drops the settled ones in its
// fence write: the map drains to empty over successive drains, and the
// partition delivers throughout. The reaper reads the map in bounded
// chunks and says what it left for a later run.
func TestBigExpiredInflightMapDrainsClaimByClaim(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	e := newPairEngine(t, db, clk, Config{Table: "ferry", Partitions: 1})
	mapLen := func() int {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String("ferry"), Key: key(partitionPK(0), skFence), ConsistentRead: aws.Bool(true),
		})
		require.NoError(t, err)
		return len(decodeInflight(out.Item))
	}

	const n = 2500
	for range n {
		_, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", Payload: []byte(`{}`)})
		require.NoError(t, err)
	}
	clk.Advance(time.Second)
	v, err := e.FenceTake(ctx, 0, "driver", clk.Now().Add(time.Hour))
	require.NoError(t, err)
	for done := 0; done < n; {
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
	require.Equal(t, n, mapLen())

	clk.Advance(6 * time.Minute)
	rr, err := e.Reap(ctx)
	require.NoError(t, err)
	require.Equal(t, n-maxReapInflight, rr.Gauges[0].InflightUnread, "the reaper says what it left")

	prev := mapLen()
	for i := 0; prev > 0; i++ {
		require.Less(t, i, 2*n/maxInflightRead, "the map must drain")
		r, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", Payload: []byte(`{}`)})
		require.NoError(t, err)
		_, err = e.Sweep(ctx, DrainParams{})
		require.NoError(t, err)
		got, err := e.ActionGet(ctx, r.Action.ID)
		require.NoError(t, err)
		require.Equal(t, StateDONE, got.State, "the partition still delivers")
		now := mapLen()
		require.Less(t, now, prev, "each drain shrinks the map")
		prev = now
	}
	rr, err = e.Reap(ctx)
	require.NoError(t, err)
	require.Zero(t, rr.Gauges[0].InflightUnread)
}

// A claim with nothing to take still drops what it read settled (the
// exported Claim path), and a fence write's expression stays within
// DynamoDB's 4 KB limit whatever the claim, renewals and removals.
func TestFenceWriteExpressionBounded(t *testing.T) {
	h := newFenceHold(0, "o", 1, nil)
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	claimed, renew := map[int64]time.Time{}, map[int64]time.Time{}
	for i := int64(1); i <= 99; i++ {
		claimed[1_000_000_000+i] = now
	}
	for i := int64(1); i <= 300; i++ {
		renew[2_000_000_000+i] = now
		seq := 3_000_000_000 + i
		h.inf[seq] = now
		h.settle(seq)
	}
	rm := h.removable(nil)
	require.Len(t, rm, maxFenceRemoves)
	set, rm := fitFence(h, claimed, renew, rm)
	for seq := range claimed {
		require.Contains(t, set, seq, "every claimed entry is written")
	}
	upd, _, _ := fenceUpdate(h, set, rm, blkWrite{set: &blockedRun{sk: timeSK(time.UnixMilli(1), 1), until: time.UnixMilli(2)}})
	require.LessOrEqual(t, len(upd), 4096)
	require.NotEmpty(t, rm)
}
