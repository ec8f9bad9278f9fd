package outbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// failIdemExpire fails the end's write of the idempotency record's TTL once,
// as when the drainer's process dies right after the end's write.
type failIdemExpire struct {
	DynamoDB
	armed bool
}

func (f *failIdemExpire) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.armed && strings.HasPrefix(getS(in.Key, attrPK), "K#") {
		f.armed = false
		return nil, context.Canceled
	}
	return f.DynamoDB.UpdateItem(ctx, in, o...)
}

// Audit (design.md §4.2 x design.md §3.6): the written-first record carries the
// action's payload, and only idemExpire (one write right after the end)
// removes it. When that write is lost, nothing ever retries it: DynamoDB's
// TTL removes the ended row (and its journal item) but the record has no
// TTL and keeps the payload for as long as its key is not used again — an
// ended action whose payload survives it (design.md §3.1, §5.10; design.md §4.2
// says the copy "goes when the action ends"). Expected: once the action is
// gone, no copy of its payload is left.
func TestAuditRecordPayloadOutlivesItsActionWhenIdemExpireIsLost(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	f := &failIdemExpire{DynamoDB: db}
	e := newPairEngine(t, f, clk, Config{Table: "ferry", Partitions: 1, Retention: time.Hour})

	r, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", IdempotencyKey: "k1", Payload: []byte(`{"secret":"s3cr3t"}`)})
	require.NoError(t, err)
	f.armed = true
	_, err = e.Sweep(ctx, DrainParams{})
	require.True(t, err == nil || errors.Is(err, context.Canceled), "%v", err)
	got, err := e.ActionGet(ctx, r.Action.ID)
	require.NoError(t, err)
	// Since the fix (design.md §4.2, amended) the record's write comes before the
	// end: lost, it keeps the end from being written (the action stays
	// EXECUTING and is reclaimed after its lease), so no end stands with
	// its record still carrying the payload.
	require.Contains(t, []State{StateDONE, StateEXECUTING}, got.State)
	if got.State == StateDONE {
		rec, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("ferry"), Key: key(idemPK("ws", "k1"), skIdem), ConsistentRead: aws.Bool(true)})
		require.NoError(t, err)
		require.False(t, has(rec.Item, attrPayload), "ended, and its record still carries the payload")
	}

	// Later drains, reaps and retention runs; TTL removes the ended row.
	clk.Advance(2 * time.Hour)
	db.SweepTTL()
	_, err = e.Sweep(ctx, DrainParams{})
	require.NoError(t, err)
	_, err = e.Reap(ctx)
	require.NoError(t, err)
	_, err = e.Retain(ctx)
	require.NoError(t, err)
	clk.Advance(30 * 24 * time.Hour)
	db.SweepTTL()

	_, err = e.ActionGet(ctx, r.Action.ID)
	require.ErrorIs(t, err, ErrNotFound, "the action is gone")
	rec, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("ferry"), Key: key(idemPK("ws", "k1"), skIdem), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.False(t, rec.Item != nil && has(rec.Item, attrPayload),
		"the idempotency record still holds the payload of an action that ended and is gone: %v", rec.Item)
}

// failEndWrite fails the end's write of the action row once (after the
// idempotency record's write that precedes it), as when the claim was lost.
type failEndWrite struct {
	DynamoDB
	armed bool
}

func (f *failEndWrite) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.armed && strings.HasPrefix(getS(in.Key, attrPK), "P#") && strings.Contains(aws.ToString(in.UpdateExpression), "#ea") {
		f.armed = false
		return nil, context.Canceled
	}
	return f.DynamoDB.UpdateItem(ctx, in, o...)
}

// The record's strip and TTL are written before the end (design.md §4.2,
// amended); when the end then does not land, the action is live, so the
// record's TTL is taken off again (design.md §11 (invariant 6): a second enqueue with the
// key returns the action while it is retained). Its end, later, gives the
// record its TTL again.
func TestIdemRecordKeepsNoTTLWhileItsActionIsLive(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	f := &failEndWrite{DynamoDB: db}
	e := newPairEngine(t, f, clk, Config{Table: "ferry", Partitions: 1, Retention: time.Hour})
	rec := func() map[string]types.AttributeValue {
		t.Helper()
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("ferry"), Key: key(idemPK("ws", "k1"), skIdem), ConsistentRead: aws.Bool(true)})
		require.NoError(t, err)
		require.NotNil(t, out.Item)
		return out.Item
	}

	r, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", IdempotencyKey: "k1", Payload: []byte(`{"secret":"s3cr3t"}`)})
	require.NoError(t, err)
	f.armed = true
	_, err = e.Sweep(ctx, DrainParams{})
	require.True(t, err == nil || errors.Is(err, context.Canceled), "%v", err)
	require.False(t, f.armed, "the end's write was attempted")
	got, err := e.ActionGet(ctx, r.Action.ID)
	require.NoError(t, err)
	require.Equal(t, StateEXECUTING, got.State)
	require.False(t, has(rec(), attrTTL), "the action is live: its record keeps no TTL")
	require.False(t, has(rec(), attrPayload), "the action's row exists: the copy is not needed")

	// Long after the record's TTL would have passed, the key still finds it.
	clk.Advance(3 * time.Hour)
	again, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", IdempotencyKey: "k1", Payload: []byte(`{}`)})
	require.NoError(t, err)
	require.Equal(t, r.Action.ID, again.Action.ID)

	// Reclaimed and ended: the record gets its TTL, past the row's.
	_, err = e.Sweep(ctx, DrainParams{})
	require.NoError(t, err)
	got, err = e.ActionGet(ctx, r.Action.ID)
	require.NoError(t, err)
	require.Equal(t, StateDONE, got.State)
	it := rec()
	require.True(t, has(it, attrTTL))
	require.False(t, has(it, attrPayload))
	require.GreaterOrEqual(t, getN(it, attrTTL), got.EndedAt.Add(time.Hour).Unix())
}
