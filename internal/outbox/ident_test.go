package outbox

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// identityReads counts the reads and writes of the table's identity item.
type identityReads struct {
	DynamoDB
	gets, puts atomic.Int64
}

func (d *identityReads) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if getS(in.Key, attrPK) == pkIdentity {
		d.gets.Add(1)
	}
	return d.DynamoDB.GetItem(ctx, in, o...)
}

func (d *identityReads) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if getS(in.Item, attrPK) == pkIdentity {
		d.puts.Add(1)
	}
	return d.DynamoDB.PutItem(ctx, in, o...)
}

// TestIDsNeverRepeatAcrossTablesOrRestarts is issue 13, finding 4 end to
// end: ids were per-table counters, so a fresh table, a second stack or a
// `ferry dev` restart on the embedded DynamoDB handed out 0-1, 1-1, ...
// again, and the id is the webhook-id receivers deduplicate by. Two fresh
// tables driven identically (same clock, same config, same order) now mint
// different ids; a second process on the same table shares its table id;
// the identity costs one read per process and one write per table.
func TestIDsNeverRepeatAcrossTablesOrRestarts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	enqueue := func(e *Engine, n int) []string {
		var ids []string
		for range n {
			r, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", Payload: []byte(`{}`)})
			require.NoError(t, err)
			ids = append(ids, r.Action.ID)
		}
		return ids
	}
	cfg := Config{Table: "ferry", Partitions: 2}
	db1 := &identityReads{DynamoDB: ddblocal.New(ddblocal.WithClock(clk))}
	first := enqueue(newPairEngine(t, db1, clk, cfg), 5)
	// "Restart": a fresh embedded table, the same everything else.
	restarted := enqueue(newPairEngine(t, ddblocal.New(ddblocal.WithClock(clk)), clk, cfg), 5)
	seen := map[string]bool{}
	for i := range first {
		require.NotEqual(t, first[i], restarted[i])
		p1, s1, err := ParseActionID(first[i])
		require.NoError(t, err)
		p2, s2, _ := ParseActionID(restarted[i])
		require.Equal(t, [2]int64{int64(p1), s1}, [2]int64{int64(p2), s2}, "the same keys, told apart by the table id")
		seen[first[i]], seen[restarted[i]] = true, true
	}
	require.Len(t, seen, 10)

	// A second process on the first table: same table id, new keys.
	second := newPairEngine(t, db1, clk, cfg)
	more := enqueue(second, 3)
	require.Equal(t, first[0][idTimeChars:idTimeChars+idTableChars], more[0][idTimeChars:idTimeChars+idTableChars])
	require.Equal(t, int64(2), db1.gets.Load(), "one identity read per process, not per action")
	require.Equal(t, int64(1), db1.puts.Load(), "one identity write per table")
}

// TestIDMustMatchItsRow: an id built from another action's key (another
// time or table id) names nothing, for a read, an admit and a cancel: the
// key is in the id so that a read is one GetItem, but the row's stored id
// decides.
func TestIDMustMatchItsRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	e := newPairEngine(t, ddblocal.New(ddblocal.WithClock(clk)), clk, Config{Table: "ferry", Partitions: 1})
	r, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", Payload: []byte(`{}`), Propose: true})
	require.NoError(t, err)
	a := r.Action
	other := NewActionID(a.CreatedAt.Add(time.Second), 12345, a.Partition, a.Seq)
	for _, id := range []string{other} {
		_, err := e.ActionGet(ctx, id)
		require.ErrorIs(t, err, ErrNotFound, id)
		_, err = e.Admit(ctx, id)
		require.ErrorIs(t, err, ErrNotFound, id)
		_, err = e.Cancel(ctx, id)
		require.ErrorIs(t, err, ErrNotFound, id)
	}
	got, err := e.ActionGet(ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, StatePROPOSED, got.State, "untouched by the forged ids")
}

// TestActionIDLength pins the lengths docs/api.md and the README give
// (issue 28 item 15: the docs said "about 26", the README showed 2-1): 21
// characters, then the seq in base 32.
func TestActionIDLength(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for seq, want := range map[int64]int{1: 22, 31: 22, 32: 23, 1023: 23, 1024: 24, 32767: 24, 32768: 25, 1<<20 - 1: 25, 1 << 20: 26, 1<<25 - 1: 26, 1<<63 - 1: 34} {
		require.Len(t, NewActionID(created, 0xfedcba9876, 4095, seq), want, "seq %d", seq)
	}
}
