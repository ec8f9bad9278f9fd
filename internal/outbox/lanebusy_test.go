package outbox

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// rivalLane lets a rival enqueue into the same lane land just before each
// enqueue transaction that moves a lane tail, so that every one of them
// is refused (the tail moved since it was read).
type rivalLane struct {
	DynamoDB
	rival func()
	races atomic.Int32
}

func (r *rivalLane) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		var k map[string]types.AttributeValue
		switch {
		case it.Update != nil:
			k = it.Update.Key
		case it.Put != nil:
			k = it.Put.Item
		}
		if pk, ok := k[attrPK].(*types.AttributeValueMemberS); ok && strings.HasPrefix(pk.Value, "L#") {
			r.races.Add(1)
			r.rival()
			break
		}
	}
	return r.DynamoDB.TransactWriteItems(ctx, in, o...)
}

// TestLaneBusyIsATypedRefusalThatWritesNothing is issue 28, item 2 in the
// engine: an enqueue whose lane tail moved before each of its tries ended
// with DynamoDB's TransactionCanceledException (HTTP 500). It now answers
// *LaneBusyError after maxEnqueueRounds tries, and none of its writes
// landed: the lane holds exactly the rivals' actions.
func TestLaneBusyIsATypedRefusalThatWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	rival := newPairEngine(t, db, clk, Config{Partitions: 4})
	rivals := 0
	wrapped := &rivalLane{DynamoDB: db, rival: func() {
		_, err := rival.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", LaneKey: "hot", Payload: []byte(`{}`)})
		require.NoError(t, err)
		rivals++
	}}
	e := newPairEngine(t, wrapped, clk, Config{Partitions: 4})
	for _, p := range [][]EnqueueParams{
		{{Kind: "p", WorkspaceID: "ws", LaneKey: "hot", Payload: []byte(`{"mine":1}`)}},
		{{Kind: "p", WorkspaceID: "ws", LaneKey: "hot", IdempotencyKey: "k", Payload: []byte(`{"mine":2}`)}},
		{{Kind: "p", WorkspaceID: "ws", LaneKey: "hot", Payload: []byte(`{"mine":3}`)}, {Kind: "p", WorkspaceID: "ws", Payload: []byte(`{"mine":4}`)}},
	} {
		before := wrapped.races.Load()
		_, err := e.EnqueueBatch(ctx, p)
		var busy *LaneBusyError
		require.ErrorAs(t, err, &busy)
		require.Equal(t, maxEnqueueRounds, busy.Tries)
		require.Equal(t, int32(maxEnqueueRounds), wrapped.races.Load()-before, "one transaction per try")
		var tc *types.TransactionCanceledException
		require.True(t, errors.As(err, &tc), "the last refusal is kept")
	}
	res, err := rival.ActionList(ctx, ActionListParams{WorkspaceID: "ws", Limit: 500})
	require.NoError(t, err)
	require.Len(t, res.Actions, rivals, "only the rivals' actions: nothing of the refused enqueues")
	for _, a := range res.Actions {
		require.Equal(t, "{}", string(a.Payload))
	}
	again, err := rival.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", IdempotencyKey: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	require.False(t, again.Existing, "the refused enqueue's key was not taken")
}
