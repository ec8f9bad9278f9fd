package outbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// layoutTable makes table "users" with Ferry's keys and indexes and, unless
// marker is nil, the marker item marker; it returns the embedded DynamoDB.
func layoutTable(t *testing.T, clk clock.Clock, marker map[string]types.AttributeValue) *ddblocal.DB {
	t.Helper()
	ctx := context.Background()
	db := ddblocal.New(ddblocal.WithClock(clk))
	_, err := db.CreateTable(ctx, TableInput("users"))
	require.NoError(t, err)
	if marker != nil {
		_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("users"), Item: marker})
		require.NoError(t, err)
	}
	return db
}

// itemsOf scans the whole table.
func itemsOf(t *testing.T, db *ddblocal.DB) []map[string]types.AttributeValue {
	t.Helper()
	out, err := db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("users")})
	require.NoError(t, err)
	return out.Items
}

// TestLayoutRefusals: a table whose marker is missing (not a Ferry table),
// has no layout version (created before v0.1.0), or an older or newer
// version than Layout is refused by every path — the first call of any
// engine method, EnsureTable, an enqueue, a drain, a partition count change
// — with a *LayoutError naming the table, both versions and the docs
// section, and nothing is written.
func TestLayoutRefusals(t *testing.T) {
	t.Parallel()
	withLV := func(lv int64) map[string]types.AttributeValue {
		it := key(pkIdentity, skIdentity)
		it[attrLayout] = avN(lv)
		return it
	}
	for _, tc := range []struct {
		name   string
		marker map[string]types.AttributeValue
		want   []string
	}{
		{"NotFerry", nil, []string{"table users is not a Ferry table", "layout 1", LayoutDocs}},
		{"Missing", key(pkIdentity, skIdentity), []string{"table users has no layout version", "before v0.1.0", "layout 1", LayoutDocs}},
		{"Older", withLV(Layout - 1), []string{"table users has layout 0, older than layout 1", LayoutDocs}},
		{"Newer", withLV(Layout + 1), []string{"table users has layout 2, newer than layout 1", LayoutDocs}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clk := clock.NewManual(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
			db := layoutTable(t, clk, tc.marker)
			before := itemsOf(t, db)
			e := newPairEngineOn(t, db, clk, Config{Table: "users", Partitions: 2})
			calls := map[string]func() error{
				"LayoutCheck": func() error { return e.LayoutCheck(ctx) },
				"EnsureTable": func() error { return e.EnsureTable(ctx) },
				"Enqueue": func() error {
					_, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", LaneKey: "l", Payload: []byte(`{}`)})
					return err
				},
				"Drain":         func() error { return e.Drain(ctx) },
				"PartitionsSet": func() error { return e.PartitionsSet(ctx, 4) },
				"Reap":          func() error { _, err := e.Reap(ctx); return err },
			}
			for name, call := range calls {
				err := call()
				var le *LayoutError
				require.True(t, errors.As(err, &le), "%s: %v", name, err)
				require.ErrorIs(t, err, ErrLayout, name)
				for _, w := range tc.want {
					require.Contains(t, err.Error(), w, name)
				}
			}
			require.Equal(t, before, itemsOf(t, db), "nothing written")
			ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("users")})
			require.NoError(t, err)
			require.NotEqual(t, types.TimeToLiveStatusEnabled, ttl.TimeToLiveDescription.TimeToLiveStatus, "TTL left alone")
		})
	}
}

// TestLayoutRefusesATableOfOtherKeys: a table that is not Ferry's and is
// keyed otherwise (`id` alone, as a users table is) is refused with a
// *LayoutError that says so, not DynamoDB's ValidationException, by every
// path, and nothing is written.
func TestLayoutRefusesATableOfOtherKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("users"),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	require.NoError(t, err)
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("users"), Item: map[string]types.AttributeValue{"id": avS("ann")}})
	require.NoError(t, err)
	before := itemsOf(t, db)
	e := newPairEngineOn(t, db, clk, Config{Table: "users", Partitions: 2})
	for name, call := range map[string]func() error{
		"LayoutCheck": func() error { return e.LayoutCheck(ctx) },
		"EnsureTable": func() error { return e.EnsureTable(ctx) },
		"Enqueue": func() error {
			_, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", Payload: []byte(`{}`)})
			return err
		},
		"PartitionsSet": func() error { return e.PartitionsSet(ctx, 4) },
		"TableLayout":   func() error { _, err := e.TableLayout(ctx); return err },
	} {
		err := call()
		var le *LayoutError
		require.True(t, errors.As(err, &le), "%s: %v", name, err)
		require.ErrorIs(t, err, ErrLayout, name)
		require.Contains(t, err.Error(), "table users is not a Ferry table: its key schema is not Ferry's", name)
		require.Contains(t, err.Error(), LayoutDocs, name)
	}
	require.Equal(t, before, itemsOf(t, db), "nothing written")
}

// TestMarkerWithoutIdentityGetsOneOnce: the stack's custom resource writes
// the layout only (LayoutMarker); the first engine that needs the table's
// identity adds it, and a second engine takes the first one's.
func TestMarkerWithoutIdentityGetsOneOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	db := layoutTable(t, clk, LayoutMarker())
	a := newPairEngineOn(t, db, clk, Config{Table: "users", Partitions: 2})
	b := newPairEngineOn(t, db, clk, Config{Table: "users", Partitions: 2})
	ra, err := a.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", Payload: []byte(`{}`)})
	require.NoError(t, err)
	rb, err := b.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: "ws", Payload: []byte(`{}`)})
	require.NoError(t, err)
	ida, err := a.identity(ctx)
	require.NoError(t, err)
	idb, err := b.identity(ctx)
	require.NoError(t, err)
	require.Equal(t, ida, idb)
	require.Equal(t, ra.Action.ID[idTimeChars:idTimeChars+idTableChars], rb.Action.ID[idTimeChars:idTimeChars+idTableChars])
	m := itemsOf(t, db)
	found := false
	for _, it := range m {
		if getS(it, attrPK) == pkIdentity {
			found = true
			require.EqualValues(t, Layout, getN(it, attrLayout))
			require.True(t, has(it, attrTableID))
		}
	}
	require.True(t, found)
	// The first engine of such a table recorded its count in the map.
	pm, err := a.readPartitionMap(ctx, true)
	require.NoError(t, err)
	require.Equal(t, 2, pm.n)
}

// TestEnsureTableWritesTheMarker: a table EnsureTable creates carries the
// marker of Layout with the table's identity, read by the next engine.
func TestEnsureTableWritesTheMarker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	e := newPairEngine(t, db, clk, Config{Table: "users", Partitions: 2})
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("users"), Key: key(pkIdentity, skIdentity), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.EqualValues(t, Layout, getN(out.Item, attrLayout))
	id, err := identityOf(out.Item)
	require.NoError(t, err)
	require.NotNil(t, id)
	lv, err := e.TableLayout(ctx)
	require.NoError(t, err)
	require.Equal(t, Layout, lv)
	other := newPairEngineOn(t, db, clk, Config{Table: "users", Partitions: 2})
	got, err := other.identity(ctx)
	require.NoError(t, err)
	require.Equal(t, id, got)
}
