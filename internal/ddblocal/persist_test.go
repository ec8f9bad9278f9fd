package ddblocal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// persistTables creates the tables of the persistence tests: one with a
// GSI, an LSI, a stream, TTL and tags; one hash-only without a stream.
func persistTables(t *testing.T, db *ddblocal.DB) {
	t.Helper()
	ctx := context.Background()
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String("main"),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("l"), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("by-g"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: []string{"v"}}}},
		LocalSecondaryIndexes: []types.LocalSecondaryIndex{{IndexName: aws.String("by-l"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("l"), KeyType: types.KeyTypeRange}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}}},
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
		Tags:                []types.Tag{{Key: aws.String("app"), Value: aws.String("ferry")}},
	})
	require.NoError(t, err)
	_, err = db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("main"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)}})
	require.NoError(t, err)
	_, err = db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:             aws.String("plain"),
		BillingMode:           types.BillingModeProvisioned,
		ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(5)},
		AttributeDefinitions:  []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema:             []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	require.NoError(t, err)
}

// workload applies step i of a seeded mix of writes (puts, updates,
// deletes, transactions with tokens, batches, TTL expiries, stream and
// index changes) to db.
func workload(t *testing.T, db *ddblocal.DB, clk *clock.Manual, rng *rand.Rand, i int) {
	t.Helper()
	ctx := context.Background()
	k := func() map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": s(fmt.Sprint("p", rng.IntN(5))), "sk": s(fmt.Sprint("s", rng.IntN(20)))}
	}
	full := func() map[string]types.AttributeValue {
		it := k()
		it["v"] = n(fmt.Sprint(rng.IntN(1000)))
		it["junk"] = s(strings.Repeat("x", rng.IntN(300)))
		if rng.IntN(2) == 0 {
			it["g"] = s(fmt.Sprint("g", rng.IntN(3)))
		}
		if rng.IntN(3) == 0 {
			it["l"] = n(fmt.Sprint(rng.IntN(50)))
		}
		if rng.IntN(4) == 0 {
			it["ttl"] = n(fmt.Sprint(clk.Now().Unix() + int64(rng.IntN(120))))
		}
		return it
	}
	var err error
	switch op := rng.IntN(20); {
	case op < 7:
		_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("main"), Item: full()})
	case op < 10:
		_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("main"), Key: k(),
			UpdateExpression: aws.String("SET v = if_not_exists(v, :z) + :one, g = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{
				":z": n("0"), ":one": n("1"), ":g": s(fmt.Sprint("g", rng.IntN(3)))}})
	case op < 12:
		_, err = db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("main"), Key: k()})
	case op < 14:
		items := []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String("main"), Item: full()}},
			{Put: &types.Put{TableName: aws.String("plain"), Item: map[string]types.AttributeValue{"id": n(fmt.Sprint(i)), "x": s("tx")}}},
		}
		_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items, ClientRequestToken: aws.String(fmt.Sprint("tok-", rng.IntN(10)))})
	case op < 16:
		var reqs []types.WriteRequest
		for j := range 5 {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"id": n(fmt.Sprint(i*10 + j)), "b": s("batch")}}})
		}
		_, err = db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"plain": reqs}})
	case op < 17:
		db.SweepTTL()
	case op < 18:
		_, err = db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("plain"), Key: map[string]types.AttributeValue{"id": n(fmt.Sprint(rng.IntN(i + 1)))}})
	default:
		// A conditional write that fails changes nothing.
		_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("main"), Item: full(), ConditionExpression: aws.String("attribute_exists(nothing)")})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			err = nil
		}
	}
	var tce *types.TransactionCanceledException
	var ipm *types.IdempotentParameterMismatchException
	if errors.As(err, &tce) || errors.As(err, &ipm) {
		err = nil
	}
	require.NoError(t, err, "step %d", i)
}

// dump renders everything a client can read of db as JSON: table
// descriptions, TTL, tags, items, index contents and streams.
func dump(t *testing.T, db *ddblocal.DB) string {
	t.Helper()
	ctx := context.Background()
	out := map[string]any{}
	lt, err := db.ListTables(ctx, &dynamodb.ListTablesInput{})
	require.NoError(t, err)
	for _, name := range lt.TableNames {
		d, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		require.NoError(t, err)
		ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
		require.NoError(t, err)
		tags, err := db.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: d.Table.TableArn})
		require.NoError(t, err)
		scan := func(index *string) []string {
			var rows []string
			var start map[string]types.AttributeValue
			for {
				sc, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(name), IndexName: index, ExclusiveStartKey: start})
				require.NoError(t, err)
				for _, it := range sc.Items {
					rows = append(rows, render(it))
				}
				if sc.LastEvaluatedKey == nil {
					break
				}
				start = sc.LastEvaluatedKey
			}
			sort.Strings(rows)
			return rows
		}
		tbl := map[string]any{"describe": d.Table, "ttl": ttl.TimeToLiveDescription, "tags": tags.Tags, "items": scan(nil)}
		for _, g := range d.Table.GlobalSecondaryIndexes {
			tbl["gsi:"+*g.IndexName] = scan(g.IndexName)
		}
		for _, l := range d.Table.LocalSecondaryIndexes {
			tbl["lsi:"+*l.IndexName] = scan(l.IndexName)
		}
		out[name] = tbl
	}
	ls, err := db.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{})
	require.NoError(t, err)
	var streams []any
	for _, st := range ls.Streams {
		d, err := db.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: st.StreamArn})
		require.NoError(t, err)
		var recs []stypes.Record
		for _, sh := range d.StreamDescription.Shards {
			it, err := db.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: st.StreamArn, ShardId: sh.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
			require.NoError(t, err)
			iter := it.ShardIterator
			for iter != nil {
				gr, err := db.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
				require.NoError(t, err)
				recs = append(recs, gr.Records...)
				if len(gr.Records) == 0 {
					break
				}
				iter = gr.NextShardIterator
			}
		}
		streams = append(streams, map[string]any{"describe": d.StreamDescription, "records": recs})
	}
	out["streams"] = streams
	b, err := json.MarshalIndent(out, "", " ")
	require.NoError(t, err)
	return string(b)
}

func render(it map[string]types.AttributeValue) string {
	keys := make([]string, 0, len(it))
	for k := range it {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%#v;", k, it[k])
	}
	return b.String()
}

// TestPersistenceMatchesMemory runs one workload against an in-memory
// engine and a persistent one that is crashed (as by SIGKILL) or closed and
// reopened at random points, with snapshots taken often; after each reopen
// both must read the same.
func TestPersistenceMatchesMemory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clock.NewManual(epoch)
	mem := ddblocal.New(ddblocal.WithClock(clk))
	opts := []ddblocal.Option{ddblocal.WithClock(clk), ddblocal.WithSnapshotEvery(8 << 10)}
	disk, err := ddblocal.Open(dir, opts...)
	require.NoError(t, err)
	persistTables(t, mem)
	persistTables(t, disk)
	rngA, rngB := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
	reopen := rand.New(rand.NewPCG(7, 7))
	reopens := 0
	for i := range 600 {
		clk.Advance(time.Duration(reopen.IntN(3000)) * time.Millisecond)
		// Both engines take the same step (two generators, one seed).
		workload(t, mem, clk, rngA, i)
		workload(t, disk, clk, rngB, i)
		if admin, ok := adminSteps[i]; ok {
			for _, db := range []*ddblocal.DB{mem, disk} {
				admin(t, db)
			}
		}
		if reopen.IntN(40) == 0 || i == 599 {
			if reopen.IntN(2) == 0 {
				ddblocal.CrashForTest(disk)
			} else {
				require.NoError(t, disk.Close())
			}
			disk, err = ddblocal.Open(dir, opts...)
			require.NoError(t, err)
			rec := disk.Recovery()
			require.Nil(t, rec.TornTail)
			require.NotEmpty(t, rec.Snapshot, "snapshots are taken as the log grows")
			reopens++
			t.Logf("step %d: %s", i, rec)
			require.Equal(t, dump(t, mem), dump(t, disk), "after step %d", i)
		}
	}
	require.NoError(t, disk.Close())
	require.Greater(t, reopens, 10)
}

// adminSteps are table-administration calls the persistence workload makes
// at fixed steps: a GSI created (backfilled) and deleted, the stream
// disabled and enabled again, TTL off, billing changed, tags, a table
// deleted and created again.
var adminSteps = map[int]func(*testing.T, *ddblocal.DB){
	100: func(t *testing.T, db *ddblocal.DB) {
		_, err := db.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{TableName: aws.String("main"),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("v"), AttributeType: types.ScalarAttributeTypeN}},
			GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{IndexName: aws.String("by-v"),
				KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("v"), KeyType: types.KeyTypeHash}}, Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}}})
		require.NoError(t, err)
	},
	200: func(t *testing.T, db *ddblocal.DB) {
		_, err := db.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{TableName: aws.String("main"), StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(false)}})
		require.NoError(t, err)
		d, err := db.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("main")})
		require.NoError(t, err)
		_, err = db.UntagResource(context.Background(), &dynamodb.UntagResourceInput{ResourceArn: d.Table.TableArn, TagKeys: []string{"app"}})
		require.NoError(t, err)
		_, err = db.TagResource(context.Background(), &dynamodb.TagResourceInput{ResourceArn: d.Table.TableArn, Tags: []types.Tag{{Key: aws.String("env"), Value: aws.String("dev")}}})
		require.NoError(t, err)
	},
	260: func(t *testing.T, db *ddblocal.DB) {
		_, err := db.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{TableName: aws.String("main"), StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly}})
		require.NoError(t, err)
		_, err = db.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{TableName: aws.String("plain"), BillingMode: types.BillingModePayPerRequest})
		require.NoError(t, err)
	},
	400: func(t *testing.T, db *ddblocal.DB) {
		_, err := db.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{TableName: aws.String("main"),
			GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Delete: &types.DeleteGlobalSecondaryIndexAction{IndexName: aws.String("by-g")}}}})
		require.NoError(t, err)
		_, err = db.UpdateTimeToLive(context.Background(), &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("main"),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(false)}})
		require.NoError(t, err)
	},
	500: func(t *testing.T, db *ddblocal.DB) {
		_, err := db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String("plain")})
		require.NoError(t, err)
		_, err = db.CreateTable(context.Background(), &dynamodb.CreateTableInput{
			TableName: aws.String("plain"), BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeN}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
			StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage},
		})
		require.NoError(t, err)
	},
}

// lastSegment returns the path of the newest log segment in dir.
func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	require.NoError(t, err)
	require.NotEmpty(t, segs)
	sort.Strings(segs)
	return segs[len(segs)-1]
}

// crashedWith writes n items to a fresh persistent engine and crashes it.
func crashedWith(t *testing.T, count int) string {
	t.Helper()
	dir := t.TempDir()
	db, err := ddblocal.Open(dir, ddblocal.WithSnapshotEvery(0))
	require.NoError(t, err)
	persistTables(t, db)
	for i := range count {
		_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("plain"), Item: map[string]types.AttributeValue{"id": n(fmt.Sprint(i))}})
		require.NoError(t, err)
	}
	ddblocal.CrashForTest(db)
	return dir
}

func countPlain(t *testing.T, db *ddblocal.DB) int {
	t.Helper()
	out, err := db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("plain"), Select: types.SelectCount})
	require.NoError(t, err)
	return int(out.Count)
}

func TestPersistenceTornTailIsReportedAndDropped(t *testing.T) {
	t.Parallel()
	dir := crashedWith(t, 10)
	seg := lastSegment(t, dir)
	st, err := os.Stat(seg)
	require.NoError(t, err)
	// A record cut short, as a crash in the middle of write(2) leaves it.
	f, err := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte{200, 0, 0, 0, 1, 2, 3, 4, 5, 6})
	require.NoError(t, err)
	require.NoError(t, f.Close())

	db, err := ddblocal.Open(dir)
	require.NoError(t, err)
	rec := db.Recovery()
	require.NotNil(t, rec.TornTail)
	require.Equal(t, st.Size(), rec.TornTail.Offset)
	require.Equal(t, int64(10), rec.TornTail.Bytes)
	require.Contains(t, rec.String(), "torn tail")
	require.Equal(t, 10, countPlain(t, db), "every acknowledged item")
	require.NoError(t, db.Close())
	db, err = ddblocal.Open(dir)
	require.NoError(t, err)
	require.Nil(t, db.Recovery().TornTail, "dropped once")
	require.Equal(t, 10, countPlain(t, db))
	require.NoError(t, db.Close())
}

// TestPersistenceLastRecordWithBadChecksumIsATornTail: a last record whole
// in length but not in content is a torn tail when it was never durable (so
// never acknowledged); the same damage to an acknowledged record is refused
// (TestRecoveryRefusesADamagedLastAcknowledgedRecord).
func TestPersistenceLastRecordWithBadChecksumIsATornTail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := ddblocal.Open(dir, ddblocal.WithSnapshotEvery(0))
	require.NoError(t, err)
	persistTables(t, db)
	for i := range 4 {
		putAcked(t, db, i)
	}
	ddblocal.UnsyncedForTest(db, func() { putAcked(t, db, 4) })
	ddblocal.CrashForTest(db)
	seg := lastSegment(t, dir)
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	b[len(b)-1] ^= 0xff // the last record, whole in length but not in content
	require.NoError(t, os.WriteFile(seg, b, 0o644))
	db, err = ddblocal.Open(dir)
	require.NoError(t, err)
	require.NotNil(t, db.Recovery().TornTail)
	require.Equal(t, 4, countPlain(t, db), "the unacknowledged last write is not used")
	require.NoError(t, db.Close())
}

func TestPersistenceCorruptionIsRefused(t *testing.T) {
	t.Parallel()
	dir := crashedWith(t, 5)
	seg := lastSegment(t, dir)
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	first := recordOffsets(t, seg)[0]
	b[first+ddblocal.RecordHeaderForTest+2] ^= 0xff // inside the first record's payload, with records after it
	require.NoError(t, os.WriteFile(seg, b, 0o644))
	_, err = ddblocal.Open(dir)
	var ce *ddblocal.CorruptionError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, filepath.Base(seg), ce.File)
	require.Equal(t, first, ce.Offset)

	// A damaged snapshot is refused too.
	dir = crashedWith(t, 5)
	db, err := ddblocal.Open(dir)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	snaps, err := filepath.Glob(filepath.Join(dir, "snap-*"))
	require.NoError(t, err)
	require.Len(t, snaps, 1)
	b, err = os.ReadFile(snaps[0])
	require.NoError(t, err)
	b[len(b)/2] ^= 0xff
	require.NoError(t, os.WriteFile(snaps[0], b, 0o644))
	_, err = ddblocal.Open(dir)
	require.ErrorAs(t, err, &ce)
	require.Contains(t, err.Error(), "snap-")
	// So is a snapshot cut short.
	require.NoError(t, os.WriteFile(snaps[0], b[:len(b)-20], 0o644))
	_, err = ddblocal.Open(dir)
	require.ErrorAs(t, err, &ce)
}

func TestPersistenceDirectoryIsLocked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := ddblocal.Open(dir)
	require.NoError(t, err)
	_, err = ddblocal.Open(dir)
	require.ErrorContains(t, err, "in use by another process")
	// Issue 28 item 11: the lock is the directory's, not a file's that can
	// be deleted (earlier versions locked a LOCK file in it).
	if err := os.Remove(filepath.Join(dir, "LOCK")); err != nil {
		require.ErrorIs(t, err, os.ErrNotExist)
	}
	_, err = ddblocal.Open(dir)
	require.ErrorContains(t, err, "in use by another process", "deleting files in the directory does not release it")
	require.NoError(t, db.Close())
	db, err = ddblocal.Open(dir)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	_, err = db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("x"), Item: map[string]types.AttributeValue{"id": n("1")}})
	require.Error(t, err, "a closed engine answers nothing")
}

// TestPersistenceConcurrentWriters: writers share fsyncs (group commit)
// while snapshots are taken; every acknowledged write survives a crash.
func TestPersistenceConcurrentWriters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := ddblocal.Open(dir, ddblocal.WithSnapshotEvery(16<<10))
	require.NoError(t, err)
	persistTables(t, db)
	const writers, each = 8, 60
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := range each {
				_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("plain"),
					Item: map[string]types.AttributeValue{"id": n(fmt.Sprint(w*each + i)), "pad": s(strings.Repeat("p", 200))}})
				if err != nil {
					errs <- err
					return
				}
				if i%10 == 0 {
					if _, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("plain"), Key: map[string]types.AttributeValue{"id": n(fmt.Sprint(w * each))}}); err != nil {
						errs <- err
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		require.NoError(t, <-errs)
	}
	ddblocal.CrashForTest(db)
	db, err = ddblocal.Open(dir)
	require.NoError(t, err)
	require.Equal(t, writers*each, countPlain(t, db))
	require.NoError(t, db.Close())
}
