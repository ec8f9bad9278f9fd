package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// retainFixture ends `expired` actions, then 30 minutes later `kept` more,
// and moves the clock past the first ones' retention (1h) only.
func retainFixture(t *testing.T, expired, kept int, opts ...ddblocal.Option) (*Engine, *ddblocal.DB, []string) {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	db := ddblocal.New(append([]ddblocal.Option{ddblocal.WithClock(clk)}, opts...)...)
	e := newPairEngine(t, db, clk, Config{Table: "ferry", Partitions: 2, Retention: time.Hour})
	var ids []string
	enq := func(n int) {
		for range n {
			r, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", Payload: []byte(`{"to":"a@example.com","subject":"s"}`)})
			require.NoError(t, err)
			ids = append(ids, r.Action.ID)
			clk.Advance(time.Millisecond)
		}
		_, err := e.Sweep(ctx, DrainParams{})
		require.NoError(t, err)
	}
	enq(expired)
	clk.Advance(30 * time.Minute)
	enq(kept)
	clk.Advance(31 * time.Minute)
	return e, db, ids[:expired]
}

func retainUnits(t *testing.T, e *Engine, db *ddblocal.DB) (ddblocal.CapacityStats, *RetainResult) {
	t.Helper()
	db.ResetCapacity()
	res, err := e.Retain(context.Background())
	require.NoError(t, err)
	return db.Capacity("ferry"), res
}

// TestRetainCostFollowsDeletesNotHistory measures a retention run with the
// embedded DynamoDB's capacity counters: the same units whatever the
// history of unexpired ended actions, and per deleted row two write units
// (the delete and its workspace index entry's, design.md §3.8) and half a read unit (the row's read in the batch), plus per
// journal item its delete and its share of the journal query.
func TestRetainCostFollowsDeletesNotHistory(t *testing.T) {
	e, db, _ := retainFixture(t, 20, 10)
	small, res := retainUnits(t, e, db)
	require.Equal(t, 20, res.Deleted)
	e, db, _ = retainFixture(t, 20, 200)
	big, res := retainUnits(t, e, db)
	require.Equal(t, 20, res.Deleted)
	require.Equal(t, small.TotalWriteUnits(), big.TotalWriteUnits())
	require.Equal(t, small.TotalReadUnits(), big.TotalReadUnits())
	require.Equal(t, small.Calls, big.Calls)
	// 20 rows in 2 partitions, one journal item each: 20 row deletes (each
	// with its workspace index entry) and 2 journal deletes; 2 queries and 2
	// batch reads of 10 rows.
	require.Equal(t, 42.0, small.TotalWriteUnits())
	// Plus the partition map's consistent read (ADR 0011: once per MapTTL).
	require.Equal(t, 2*0.5+20*0.5+1, small.TotalReadUnits())
	t.Logf("retention of 20 expired among 10 or 200 unexpired: %.1f WRU, %.1f RRU, calls %v",
		small.TotalWriteUnits(), small.TotalReadUnits(), small.Calls)

	e, db, _ = retainFixture(t, 60, 10)
	more, res := retainUnits(t, e, db)
	require.Equal(t, 60, res.Deleted)
	// 30 per partition: batches of 25 and 5, four journal items.
	require.Equal(t, 124.0, more.TotalWriteUnits(), "three times the deletes, three times the row units")
}

// TestRetainSkipsRowsTTLRemoved: where DynamoDB's TTL removed the rows but
// not yet their journal item, retention pays half a read unit per listed
// row instead of a refused delete (a write unit) per row, and removes the
// journal item.
func TestRetainSkipsRowsTTLRemoved(t *testing.T) {
	e, db, ids := retainFixture(t, 20, 10)
	for _, id := range ids {
		p, seq, err := ParseActionID(id)
		require.NoError(t, err)
		_, err = db.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: e.table(), Key: actionKey(p, seq)})
		require.NoError(t, err)
	}
	st, res := retainUnits(t, e, db)
	require.Zero(t, res.Deleted)
	require.Equal(t, 2.0, st.TotalWriteUnits(), "the two journal items only")
	require.Equal(t, 2*0.5+20*0.5+1, st.TotalReadUnits(), "and the partition map's read")
	t.Logf("retention of 20 journaled rows TTL already removed: %.1f WRU, %.1f RRU (refused deletes instead: 20 WRU more, 10 RRU less)",
		st.TotalWriteUnits(), st.TotalReadUnits())
	st, res = retainUnits(t, e, db)
	require.Zero(t, res.Deleted)
	require.Zero(t, st.TotalWriteUnits(), "the journal items are gone")
}

// TestRetainWithTTLSweepsLate: with DynamoDB's TTL days late, retention
// deletes exactly the expired rows; once TTL runs, rows and journal items
// go together and retention finds nothing.
func TestRetainWithTTLSweepsLate(t *testing.T) {
	e, db, ids := retainFixture(t, 5, 5, ddblocal.WithTTLDelay(48*time.Hour))
	require.Zero(t, db.SweepTTL(), "TTL is two days late")
	_, res := retainUnits(t, e, db)
	require.Equal(t, 5, res.Deleted)
	for _, id := range ids {
		_, err := e.ActionGet(context.Background(), id)
		require.ErrorIs(t, err, ErrNotFound)
	}
	e.clk.(*clock.Manual).Advance(72 * time.Hour)
	require.Equal(t, 5+2, db.SweepTTL(), "the kept rows and their journal items (one per partition)")
	st, res := retainUnits(t, e, db)
	require.Zero(t, res.Deleted+res.Trimmed)
	require.Zero(t, st.TotalWriteUnits())
}
