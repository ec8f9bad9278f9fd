package email_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/adapters/email"
	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

// crashableDB is the embedded DynamoDB with a switch that makes every write
// fail, as if the drainer's process died: nothing it would write next
// reaches the table.
type crashableDB struct {
	*ddblocal.DB
	crashed atomic.Bool
}

var errCrashed = errors.New("the drainer's process died")

func (d *crashableDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if d.crashed.Load() {
		return nil, errCrashed
	}
	return d.DB.UpdateItem(ctx, in, o...)
}

func (d *crashableDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if d.crashed.Load() {
		return nil, errCrashed
	}
	return d.DB.PutItem(ctx, in, o...)
}

func (d *crashableDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if d.crashed.Load() {
		return nil, errCrashed
	}
	return d.DB.DeleteItem(ctx, in, o...)
}

func (d *crashableDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if d.crashed.Load() {
		return nil, errCrashed
	}
	return d.DB.TransactWriteItems(ctx, in, o...)
}

type engineBundle struct {
	engine *outbox.Engine
	db     *crashableDB
	clock  *clock.Manual
}

func setupEngine(t *testing.T, sender email.Sender, cfg outbox.Config) *engineBundle {
	t.Helper()
	clk := clock.NewManual(start)
	db := &crashableDB{DB: ddblocal.New(ddblocal.WithClock(clk))}
	reg := outbox.NewRegistry()
	require.NoError(t, reg.Register(newAdapter(t, sender, nil)))
	cfg.Table, cfg.Partitions = "ferry", 1
	e, err := outbox.New(db, clk, reg, cfg)
	require.NoError(t, err)
	require.NoError(t, e.EnsureTable(context.Background()))
	return &engineBundle{engine: e, db: db, clock: clk}
}

func (b *engineBundle) enqueue(t *testing.T) string {
	t.Helper()
	r, err := b.engine.Enqueue(context.Background(), outbox.EnqueueParams{Kind: email.Kind, WorkspaceID: "ws1", Payload: json.RawMessage(payload)})
	require.NoError(t, err)
	return r.Action.ID
}

func (b *engineBundle) state(t *testing.T, id string) (outbox.State, outbox.StopReason) {
	t.Helper()
	a, err := b.engine.ActionGet(context.Background(), id)
	require.NoError(t, err)
	return a.State, a.StopReason
}

// afterwards runs everything that could send the action again: drainer
// runs, reclaims after the lease, the reaper, over a simulated hour.
func (b *engineBundle) afterwards(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < 6; i++ {
		b.clock.Advance(10 * time.Minute)
		require.NoError(t, b.engine.Drain(ctx))
		_, err := b.engine.Reap(ctx)
		require.NoError(t, err)
	}
}

func TestEngineSendsEmailOnce(t *testing.T) {
	t.Parallel()
	ses := newSESStandIn(t, accept)
	b := setupEngine(t, sesClient(ses.URL, nil), outbox.Config{})
	id := b.enqueue(t)
	require.NoError(t, b.engine.Drain(context.Background()))
	st, _ := b.state(t, id)
	require.Equal(t, outbox.StateDONE, st)
	b.afterwards(t)
	require.Len(t, ses.received(), 1)
	require.Equal(t, id, ses.received()[0].EmailTags[0].Value)
}

func TestEngineLeavesAcceptedThenDroppedEmailUncertain(t *testing.T) {
	t.Parallel()
	ses := newSESStandIn(t, drop)
	b := setupEngine(t, sesClient(ses.URL, nil), outbox.Config{})
	id := b.enqueue(t)
	require.NoError(t, b.engine.Drain(context.Background()))
	st, _ := b.state(t, id)
	require.Equal(t, outbox.StateUNCERTAIN, st)
	ses.setRespond(accept) // a healthy SES later must not get it again
	b.afterwards(t)
	st, _ = b.state(t, id)
	require.Equal(t, outbox.StateUNCERTAIN, st)
	require.Len(t, ses.received(), 1)
}

func TestEngineLeavesAcceptedThenStalledEmailUncertain(t *testing.T) {
	t.Parallel()
	ses := newSESStandIn(t, nil)
	ses.setRespond(ses.stall)
	// A short write margin, so the engine's deadline for Execute (margin
	// less skew) cuts the stalled call after half a second.
	b := setupEngine(t, sesClient(ses.URL, nil), outbox.Config{Lease: 10 * time.Second, WriteMargin: time.Second, ClockSkew: 500 * time.Millisecond})
	id := b.enqueue(t)
	_, err := b.engine.Sweep(context.Background(), outbox.DrainParams{})
	require.NoError(t, err)
	st, _ := b.state(t, id)
	require.Equal(t, outbox.StateUNCERTAIN, st)
	ses.setRespond(accept)
	b.afterwards(t)
	require.Len(t, ses.received(), 1)
}

func TestEngineNeverResendsAfterTheDrainerDied(t *testing.T) {
	t.Parallel()
	var b *engineBundle
	ses := newSESStandIn(t, func(w http.ResponseWriter, r *http.Request) {
		// SES has the message; then the drainer's process dies before it
		// can record anything, and the answer is lost with it.
		b.db.crashed.Store(true)
		drop(w, r)
	})
	b = setupEngine(t, sesClient(ses.URL, nil), outbox.Config{})
	id := b.enqueue(t)
	_, err := b.engine.Sweep(context.Background(), outbox.DrainParams{})
	require.ErrorIs(t, err, errCrashed)
	st, _ := b.state(t, id)
	require.Equal(t, outbox.StateEXECUTING, st) // fence set, outcome never written

	// A new drainer process: reclaims after the lease and the reaper run.
	b.db.crashed.Store(false)
	ses.setRespond(accept)
	b.afterwards(t)
	st, reason := b.state(t, id)
	require.Equal(t, outbox.StateUNCERTAIN, st)
	require.Equal(t, outbox.StopLeaseLostAfterWrite, reason)
	require.Len(t, ses.received(), 1)
}

func TestEngineRetriesWhatNeverLeft(t *testing.T) {
	t.Parallel()
	ses := newSESStandIn(t, awsError(429, "TooManyRequestsException"))
	b := setupEngine(t, sesClient(ses.URL, nil), outbox.Config{})
	id := b.enqueue(t)
	_, err := b.engine.Sweep(context.Background(), outbox.DrainParams{})
	require.NoError(t, err)
	a, err := b.engine.ActionGet(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, outbox.StateADMITTED, a.State) // deferred: SES refused, nothing sent
	require.Equal(t, start.Add(2*time.Second), a.NextAttemptAt.UTC())

	ses.setRespond(accept)
	require.NoError(t, b.engine.Drain(context.Background()))
	st, _ := b.state(t, id)
	require.Equal(t, outbox.StateDONE, st)
	require.Len(t, ses.received(), 2)
}
