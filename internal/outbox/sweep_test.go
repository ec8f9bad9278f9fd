package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// gateAdapter counts the attempts in flight. With wave > 0 every attempt
// waits until wave attempts have arrived (a cyclic barrier), so a sweep that
// does not run that many partitions at once never gets past the first.
type gateAdapter struct {
	wave int

	mu       sync.Mutex
	inFlight int
	maxIn    int
	arrived  int
	release  chan struct{} // closed when the current wave is complete
	ran      map[string]int
	stop     <-chan struct{} // the test's watchdog: a wedged sweep fails instead of hanging
}

func (*gateAdapter) Spec() KindSpec                         { return KindSpec{Name: "g", Class: AtMostOnce} }
func (*gateAdapter) Validate(string, json.RawMessage) error { return nil }

func (g *gateAdapter) Execute(_ context.Context, att *Attempt) Result {
	g.mu.Lock()
	g.inFlight++
	g.maxIn = max(g.maxIn, g.inFlight)
	g.ran[att.Action.ID]++
	wait := g.release
	if g.wave > 0 {
		g.arrived++
		if g.arrived%g.wave == 0 {
			close(g.release)
			g.release = make(chan struct{})
		}
	}
	g.mu.Unlock()
	if g.wave > 0 {
		select {
		case <-wait:
		case <-g.stop:
		}
	}
	g.mu.Lock()
	g.inFlight--
	g.mu.Unlock()
	return Done("")
}

// sweepBundle is an engine on 8 partitions with one due action in each.
func sweepBundle(t *testing.T, g *gateAdapter, wrap func(DynamoDB) DynamoDB) (*Engine, []string) {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	g.ran, g.release = map[string]int{}, make(chan struct{})
	reg := NewRegistry()
	require.NoError(t, reg.Register(g))
	e, err := New(wrap(ddblocal.New(ddblocal.WithClock(clk))), clk, reg, Config{Table: "ferry", Partitions: 8})
	require.NoError(t, err)
	require.NoError(t, e.EnsureTable(ctx))
	var ids []string
	parts := map[int]bool{}
	for range 8 {
		r, err := e.Enqueue(ctx, EnqueueParams{Kind: "g", WorkspaceID: "ws", Payload: []byte(`{}`)})
		require.NoError(t, err)
		ids = append(ids, r.Action.ID)
		parts[r.Action.Partition] = true
	}
	require.Len(t, parts, 8, "keyless actions spread over every partition")
	return e, ids
}

// watchdog closes its channel if the test runs far too long, so that a
// sweep that never reaches the barrier's wave fails the test rather than
// hanging it. It never decides a passing run.
func watchdog(t *testing.T) <-chan struct{} {
	t.Helper()
	stop := make(chan struct{})
	timer := time.AfterFunc(time.Minute, func() { close(stop) })
	t.Cleanup(func() { timer.Stop() })
	return stop
}

func TestSweepDrainsPartitionsConcurrently(t *testing.T) {
	t.Parallel()
	g := &gateAdapter{wave: 4, stop: watchdog(t)}
	e, ids := sweepBundle(t, g, func(db DynamoDB) DynamoDB { return db })
	dr, err := e.Sweep(context.Background(), DrainParams{Partitions: 4})
	require.NoError(t, err)
	select {
	case <-g.stop:
		t.Fatal("the sweep never ran 4 partitions at once")
	default:
	}
	require.Equal(t, 8, dr.Claimed)
	require.Equal(t, 8, dr.Ended)
	require.GreaterOrEqual(t, g.maxIn, 4, "4 partitions at once; more once they run their claims (TestSweepIsNotHeldBySlowPartitions)")
	for _, id := range ids {
		require.Equal(t, 1, g.ran[id], "each partition drained once")
		a, err := e.ActionGet(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, StateDONE, a.State)
	}
}

func TestSweepDefaultsToOnePartitionAtATime(t *testing.T) {
	t.Parallel()
	g := &gateAdapter{}
	e, ids := sweepBundle(t, g, func(db DynamoDB) DynamoDB { return db })
	dr, err := e.Sweep(context.Background(), DrainParams{})
	require.NoError(t, err)
	require.Equal(t, 8, dr.Ended)
	require.Equal(t, 1, g.maxIn)
	for _, id := range ids {
		require.Equal(t, 1, g.ran[id])
	}
}

// failingPartition fails, once on is set, every UpdateItem and Query that
// names partition 3's items: its drain fails at its first call.
type failingPartition struct {
	DynamoDB
	on *atomic.Bool
}

var errPartition3 = errors.New("injected: partition 3 unreachable")

func namesPartition3(vals map[string]types.AttributeValue) bool {
	for _, v := range vals {
		if s, ok := v.(*types.AttributeValueMemberS); ok && (s.Value == partitionPK(3) || s.Value == duePK(3)) {
			return true
		}
	}
	return false
}

func (f failingPartition) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.on.Load() && namesPartition3(in.Key) {
		return nil, errPartition3
	}
	return f.DynamoDB.UpdateItem(ctx, in, o...)
}

func (f failingPartition) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if f.on.Load() && namesPartition3(in.ExpressionAttributeValues) {
		return nil, errPartition3
	}
	return f.DynamoDB.Query(ctx, in, o...)
}

func TestConcurrentSweepReportsAPartitionsError(t *testing.T) {
	t.Parallel()
	g := &gateAdapter{}
	var on atomic.Bool
	e, ids := sweepBundle(t, g, func(db DynamoDB) DynamoDB { return failingPartition{DynamoDB: db, on: &on} })
	on.Store(true)
	dr, err := e.Sweep(context.Background(), DrainParams{Partitions: 4})
	require.ErrorIs(t, err, errPartition3)
	require.ErrorContains(t, err, "partition 3")
	require.NotNil(t, dr, "what the other partitions did is counted")
	require.Equal(t, dr.Ended, len(g.ran))
	for _, id := range ids {
		require.LessOrEqual(t, g.ran[id], 1, "no partition drained twice")
	}
}
