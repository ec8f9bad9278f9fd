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

// The record's strip and TTL are written right after the end lands
// (design.md §3.5): when that write is lost (as when the drainer's process
// dies right after the end's write), the record keeps no TTL and its copy of
// the payload — never a TTL under a live action (invariant 6), at the price
// of this residual. The key mends it: a resend while the ended action is
// retained finds that action and gives the record its TTL and strips it; a
// resend after TTL removed the row abandons the record (its payload goes)
// and makes a new action.
func TestRecordWriteLostAfterTheEndIsMendedByItsKey(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	f := &failIdemExpire{DynamoDB: db}
	e := newPairEngine(t, f, clk, Config{Table: "ferry", Partitions: 1, Retention: time.Hour})
	rec := func(ikey string) map[string]types.AttributeValue {
		t.Helper()
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("ferry"), Key: key(idemPK("ws", ikey), skIdem), ConsistentRead: aws.Bool(true)})
		require.NoError(t, err)
		return out.Item
	}
	lose := func(ikey string) string {
		t.Helper()
		r, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", IdempotencyKey: ikey, Payload: []byte(`{"secret":"s3cr3t"}`)})
		require.NoError(t, err)
		f.armed = true
		_, err = e.Sweep(ctx, DrainParams{})
		require.NoError(t, err)
		require.False(t, f.armed, "the record's write was tried, and lost")
		got, err := e.ActionGet(ctx, r.Action.ID)
		require.NoError(t, err)
		require.Equal(t, StateDONE, got.State, "the end landed before the record's write")
		it := rec(ikey)
		require.False(t, has(it, attrTTL), "the record's TTL is written only after the end, and was lost")
		require.True(t, has(it, attrPayload), "the residual: the copy stays until the key mends it")
		return r.Action.ID
	}

	// A resend while the ended action is retained: the same action, and the
	// record mended.
	id := lose("k1")
	again, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", IdempotencyKey: "k1", Payload: []byte(`{}`)})
	require.NoError(t, err)
	require.True(t, again.Existing)
	require.Equal(t, id, again.Action.ID)
	it := rec("k1")
	require.True(t, has(it, attrTTL), "mended: the record expires after its action")
	require.False(t, has(it, attrPayload), "mended: no copy of an ended action")

	// A resend after TTL removed the ended row: a new action; the old copy
	// is gone.
	id = lose("k2")
	clk.Advance(2 * time.Hour)
	db.SweepTTL()
	_, err = e.ActionGet(ctx, id)
	require.ErrorIs(t, err, ErrNotFound)
	again, err = e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", IdempotencyKey: "k2", Payload: []byte(`{"other":1}`)})
	require.NoError(t, err)
	require.False(t, again.Existing)
	require.NotEqual(t, id, again.Action.ID)
	require.NotContains(t, string(getS(rec("k2"), attrPayload)), "s3cr3t")
}

// dieAtEnd is a process that dies as it sends an action's end: that write
// and every later call of the process fail before they reach the table.
type dieAtEnd struct {
	DynamoDB
	armed, dead bool
}

func isEndWrite(k map[string]types.AttributeValue, upd *string) bool {
	return strings.HasPrefix(getS(k, attrPK), "P#") && strings.Contains(aws.ToString(upd), "#ea = :ea")
}

func (d *dieAtEnd) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if d.armed && isEndWrite(in.Key, in.UpdateExpression) {
		d.dead = true
	}
	if d.dead {
		return nil, context.Canceled
	}
	return d.DynamoDB.UpdateItem(ctx, in, o...)
}

func (d *dieAtEnd) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		if d.armed && it.Update != nil && isEndWrite(it.Update.Key, it.Update.UpdateExpression) {
			d.dead = true
		}
	}
	if d.dead {
		return nil, context.Canceled
	}
	return d.DynamoDB.TransactWriteItems(ctx, in, o...)
}

func (d *dieAtEnd) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if d.dead {
		return nil, context.Canceled
	}
	return d.DynamoDB.PutItem(ctx, in, o...)
}

func (d *dieAtEnd) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if d.dead {
		return nil, context.Canceled
	}
	return d.DynamoDB.DeleteItem(ctx, in, o...)
}

// Simulator seed 1597 (on 56c6a6b): a drainer died between the record's TTL
// write (then written just before the end) and its end; nothing ran for
// longer than the TTL (the end's time + retention + 1 h), TTL removed the
// record under the live action, and a resend with the key made a second
// action (invariant 6). The same with a cancel that dies at its end: its
// PROPOSED action is never reclaimed, so no reclaim could mend the record.
// The record's TTL is now written only after an end that landed.
func TestIdemRecordOutlivesAnOutageAfterItsEnderDied(t *testing.T) {
	for _, tc := range []struct {
		name    string
		propose bool
		die     func(ctx context.Context, e *Engine, id string) error
	}{
		{"drainer", false, func(ctx context.Context, e *Engine, _ string) error {
			_, err := e.Sweep(ctx, DrainParams{})
			return err
		}},
		{"cancel", true, func(ctx context.Context, e *Engine, id string) error {
			_, err := e.Cancel(ctx, id)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
			db := ddblocal.New(ddblocal.WithClock(clk))
			d := &dieAtEnd{DynamoDB: db}
			cfg := Config{Table: "ferry", Partitions: 1, Retention: time.Hour}
			dying := newPairEngine(t, d, clk, cfg)
			e := newPairEngine(t, db, clk, cfg) // the processes after the outage

			first, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", IdempotencyKey: "k40", Propose: tc.propose, Payload: []byte(`{"n":1}`)})
			require.NoError(t, err)
			d.armed = true
			require.Error(t, tc.die(ctx, dying, first.Action.ID))
			require.True(t, d.dead, "the process died at the end's write")
			got, err := e.ActionGet(ctx, first.Action.ID)
			require.NoError(t, err)
			require.False(t, got.State.Ended(), "the end did not land: %s", got.State)

			// Nothing runs for 45 hours (the simulator's clock jump); TTL
			// runs.
			clk.Advance(45 * time.Hour)
			db.SweepTTL()
			again, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", IdempotencyKey: "k40", Propose: tc.propose, Payload: []byte(`{"n":1}`)})
			require.NoError(t, err)
			require.Equal(t, first.Action.ID, again.Action.ID, "one action per key while the first is retained")
			require.True(t, again.Existing)
		})
	}
}

// failEndWrite fails the end's write of the action row once, as when the
// claim was lost.
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

// The record's strip and TTL are written only after an end that landed
// (design.md §3.5): when the end does not land, the action is live and its
// record keeps no TTL (design.md §11, invariant 6: a second enqueue with the
// key returns the action while it is retained). Its end, later, gives the
// record its TTL.
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
	require.True(t, has(rec(), attrPayload), "the record is written only after an end that landed")

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
