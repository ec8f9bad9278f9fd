package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// failActionEnd makes the next update of an action's row (its end) fail
// before it reaches the table, once.
func (f *faultyDB) failActionEnd() {
	f.mu.Lock()
	defer f.mu.Unlock()
	failed := false
	f.rule = func(op string, k map[string]types.AttributeValue) fault {
		if !failed && op == "UpdateItem" && strings.HasPrefix(str(k, "sk"), "A#") {
			failed = true
			return failBefore
		}
		return noFault
	}
}

// An end that does not land takes the TTL its idempotency record was given
// off again, in a transaction that checks the action is still live (a
// ConditionCheck: the enqueue function's cancel and the reaper's expiry
// both need dynamodb:ConditionCheckItem for it, issue 13).
var _ = register("FailedEndOfAKeyedActionKeepsItsRecord", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	e, f := tb.faulty(t)

	cancelled := tb.enqueue(t, outbox.EnqueueParams{IdempotencyKey: "cancelled"})
	f.failActionEnd()
	_, err := e.Cancel(ctx, cancelled.ID)
	require.Error(t, err, "the cancel's end write failed")
	require.Equal(t, outbox.StateADMITTED, tb.get(t, cancelled.ID).State)
	require.NotContains(t, tb.record(t, "ws", "cancelled"), "ttl", "a live action's record has no TTL")

	expiring := tb.enqueue(t, outbox.EnqueueParams{IdempotencyKey: "expiring", ExpiresAt: tb.b.Clock.Now().Add(time.Minute)})
	tb.b.Clock.Advance(2 * time.Minute)
	tb.settled()
	f.failActionEnd()
	_, _ = e.Reap(ctx) // a failed expiry fails the pass or waits for the next one
	require.Equal(t, outbox.StateADMITTED, tb.get(t, expiring.ID).State)
	require.NotContains(t, tb.record(t, "ws", "expiring"), "ttl", "a live action's record has no TTL")

	// The next pass expires it, and its record expires with it.
	_, err = e.Reap(ctx)
	require.NoError(t, err)
	require.Equal(t, outbox.StateCANCELLED, tb.get(t, expiring.ID).State)
	require.Contains(t, tb.record(t, "ws", "expiring"), "ttl")
})
