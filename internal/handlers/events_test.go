package handlers

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
)

func TestEventSamples(t *testing.T) {
	t.Parallel()

	t.Run("ScheduleSweepsThroughDrainer", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		out := invoke(t, b.drainer().Invoke, context.Background(), readEvent(t, "eventbridge-schedule.json"))
		var resp SweepResponse
		require.NoError(t, json.Unmarshal(out, &resp))
		require.Equal(t, 1, b.engine.sweeps)
		require.Equal(t, SweepResponse{Claimed: 2, Started: 2, Ended: 2}, resp)
	})

	t.Run("StreamWakesNamedPartitions", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		out := invoke(t, b.drainer().Invoke, context.Background(), readEvent(t, "dynamodb-stream.json"))
		var resp events.DynamoDBEventResponse
		require.NoError(t, json.Unmarshal(out, &resp))
		require.Empty(t, resp.BatchItemFailures)
		require.ElementsMatch(t, []int{1, 2}, b.engine.drained, "each named partition once; the K# record names none")
		require.Zero(t, b.engine.sweeps)
		require.Contains(t, string(out), `"batchItemFailures":[]`)
	})

	t.Run("ScheduleThroughReaper", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		h := &ReaperHandler{Engine: b.engine, Obs: b.obs, Log: b.log}
		out := invoke(t, h.Invoke, context.Background(), readEvent(t, "eventbridge-schedule.json"))
		var resp ReapResponse
		require.NoError(t, json.Unmarshal(out, &resp))
		require.Equal(t, ReapResponse{Uncertain: 1, Expired: 2, BacklogDepth: 5, BlockedDepth: 3, ClaimedDepth: 1}, resp)
		require.Contains(t, b.out.String(), `"BacklogDepth":5`)
		require.Contains(t, b.out.String(), `"BlockedDepth":3`)
		require.Contains(t, b.out.String(), `"OldestBlockedAge":3600`)
		require.Contains(t, b.out.String(), `"OldestDueAge":30`)
		require.Contains(t, b.out.String(), `"ReapedActions":2`)
	})

	t.Run("ScheduleThroughRetention", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		h := &RetentionHandler{Engine: b.engine, Obs: b.obs, Log: b.log}
		out := invoke(t, h.Invoke, context.Background(), readEvent(t, "eventbridge-schedule.json"))
		require.JSONEq(t, `{"deleted":3,"trimmed":1}`, string(out))
		require.Contains(t, b.out.String(), `"RetainedDeletes":3`)
	})
}
