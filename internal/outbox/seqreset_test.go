package outbox

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// swappableDB is a DynamoDB whose backend can be replaced, as when the
// DynamoDB behind a running `ferry dev` restarts empty.
type swappableDB struct{ DynamoDB }

// TestSeqsAfterTheTableIsCreatedAgain: when the table is created again under
// a running engine, the new table's seq counters start from zero while the
// engine still holds seqs it reserved from the old ones. No enqueue may
// fail on a seq the engine used already. Before issue 13, once the cached
// block ran out, the fresh counter handed out seqs used since the
// re-creation: 31 of 70 enqueues answered "seq already used".
func TestSeqsAfterTheTableIsCreatedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	db := &swappableDB{ddblocal.New(ddblocal.WithClock(clk))}
	e := newPairEngine(t, db, clk, Config{Partitions: 1, SeqBlock: 8})
	enqueue := func() string {
		r, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", Payload: json.RawMessage(`{}`)})
		require.NoError(t, err)
		return r.Action.ID
	}
	enqueue()

	db.DynamoDB = ddblocal.New(ddblocal.WithClock(clk)) // back, empty
	require.NoError(t, e.EnsureTable(ctx))
	seen := map[string]bool{}
	for range 40 {
		id := enqueue()
		require.False(t, seen[id], "id %s handed out twice", id)
		seen[id] = true
	}
}
