package storetest

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Retention through the retention journal (design.md §3.6): every path that ends
// an action journals it, retention deletes what TTL left behind and trims
// beyond the row cap from the journal, and its cost follows what it deletes.

// journalEntry is one retention journal item as stored.
type journalEntry struct {
	pk, sk string
	seqs   []int64
}

// journal reads every retention journal item of the table (pk P#<p>, sk
// R#...), in key order.
func (tb *bundle) journal(t *testing.T) []journalEntry {
	t.Helper()
	return tb.listings(t, "R#")
}

// listings reads the table's items of sort key prefix (R#: the retention
// journal, with a TTL; H#: held rows' listings, without), in key order.
func (tb *bundle) listings(t *testing.T, prefix string) []journalEntry {
	t.Helper()
	var out []journalEntry
	for p := 0; p < tb.cfg.Partitions; p++ {
		var start map[string]types.AttributeValue
		for {
			q, err := tb.b.DB.Query(tb.ctx, &dynamodb.QueryInput{
				TableName: aws.String(tb.b.Table), ConsistentRead: aws.Bool(true),
				KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :r)"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":pk": &types.AttributeValueMemberS{Value: "P#" + strconv.Itoa(p)},
					":r":  &types.AttributeValueMemberS{Value: prefix},
				},
				ExclusiveStartKey: start,
			})
			require.NoError(t, err)
			for _, it := range q.Items {
				j := journalEntry{pk: it["pk"].(*types.AttributeValueMemberS).Value, sk: it["sk"].(*types.AttributeValueMemberS).Value}
				ns, ok := it["seqs"].(*types.AttributeValueMemberNS)
				require.True(t, ok, "journal item %s/%s lists its seqs as a number set", j.pk, j.sk)
				for _, v := range ns.Value {
					s, err := strconv.ParseInt(v, 10, 64)
					require.NoError(t, err)
					j.seqs = append(j.seqs, s)
				}
				n, ok := it["n"].(*types.AttributeValueMemberN)
				require.True(t, ok)
				require.Equal(t, strconv.Itoa(len(j.seqs)), n.Value, "count of %s", j.sk)
				_, ok = it["ttl"].(*types.AttributeValueMemberN)
				require.Equal(t, prefix == "R#", ok, "a journal item expires with its rows; a held rows' listing has no TTL (%s)", j.sk)
				out = append(out, j)
			}
			if q.LastEvaluatedKey == nil {
				break
			}
			start = q.LastEvaluatedKey
		}
	}
	return out
}

// journaled lists the ids the journal names (of the actions tb.enqueue
// made; others by their key), sorted.
func (tb *bundle) journaled(t *testing.T) []string {
	t.Helper()
	var ids []string
	for _, j := range tb.journal(t) {
		p, err := strconv.Atoi(strings.TrimPrefix(j.pk, "P#"))
		require.NoError(t, err)
		for _, s := range j.seqs {
			k := rowKey(p, s)
			tb.keysMu.Lock()
			if id, ok := tb.byKey[k]; ok {
				k = id
			}
			tb.keysMu.Unlock()
			ids = append(ids, k)
		}
	}
	sort.Strings(ids)
	return ids
}

func sorted(ids ...string) []string {
	out := append([]string(nil), ids...)
	sort.Strings(out)
	return out
}

var _ = register("RetentionJournalCoversEveryEndAndSweepsOnlyExpired", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Retention = time.Hour; c.Partitions = 2 })
	// Ended by the drainer: two keyless, one keyed, one of a kind that keeps
	// its rows 72h, and a lane head.
	a1 := tb.enqueue(t, outbox.EnqueueParams{})
	a2 := tb.enqueue(t, outbox.EnqueueParams{})
	keyed := tb.enqueue(t, outbox.EnqueueParams{IdempotencyKey: "k"})
	long := tb.enqueue(t, outbox.EnqueueParams{Kind: KindLong})
	head := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", SubjectID: "bob"})
	member := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", SubjectID: "alice"})
	// Erased while its predecessor is live: a tombstone (an ended row).
	n, err := tb.settled().EraseSubject(ctx, "ws", "alice")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	tb.drain(t)
	// Ended by the API.
	cancelled := tb.enqueue(t, outbox.EnqueueParams{})
	_, err = tb.e.Cancel(ctx, cancelled.ID)
	require.NoError(t, err)
	// Ended by the reaper.
	expiring := tb.enqueue(t, outbox.EnqueueParams{Propose: true, ExpiresAt: tb.b.Clock.Now().Add(time.Minute)})
	tb.b.Clock.Advance(2 * time.Minute)
	rr, err := tb.settled().Reap(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rr.Expired)
	tb.b.Clock.Advance(50 * time.Minute)
	late := tb.enqueue(t, outbox.EnqueueParams{})
	tb.drain(t)

	first := sorted(a1.ID, a2.ID, keyed.ID, head.ID, member.ID, cancelled.ID, expiring.ID)
	all := sorted(append(append([]string{}, first...), long.ID, late.ID)...)
	require.Equal(t, all, tb.journaled(t), "every ending is journaled once, whatever ended it")

	// At 1h30: the first endings expired (TTL has not removed them: the
	// backend sweeps no TTL), late and long have not.
	tb.b.Clock.Advance(38 * time.Minute)
	res, err := tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Equal(t, len(first), res.Deleted)
	require.Zero(t, res.Trimmed)
	require.Equal(t, sorted(long.ID, late.ID), tb.journaled(t), "processed journal items are gone")
	require.Equal(t, outbox.StateDONE, tb.get(t, late.ID).State)
	require.Equal(t, outbox.StateDONE, tb.get(t, long.ID).State, "its kind keeps it 72h")
	r, err := tb.e.Enqueue(ctx, outbox.EnqueueParams{Kind: KindIdem, WorkspaceID: "ws", IdempotencyKey: "k", Payload: Payload(Script{})})
	require.NoError(t, err)
	require.False(t, r.Existing, "the idempotency record went with its action")
	require.NoError(t, tb.e.Drain(ctx))

	tb.b.Clock.Advance(30 * time.Minute)
	res, err = tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Deleted, "late")
	require.Equal(t, outbox.StateDONE, tb.get(t, long.ID).State)

	tb.b.Clock.Advance(72 * time.Hour)
	res, err = tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, res.Deleted, "long, and the keyed re-enqueue")
	require.Empty(t, tb.journaled(t))
	_, err = tb.e.ActionGet(ctx, long.ID)
	require.ErrorIs(t, err, outbox.ErrNotFound)
	res, err = tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Deleted+res.Trimmed)
})

var _ = register("RetentionJournalSplitsByRetentionPeriod", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Retention = time.Hour })
	for range 3 {
		tb.enqueue(t, outbox.EnqueueParams{})
		tb.enqueue(t, outbox.EnqueueParams{Kind: KindLong})
	}
	r := tb.drain(t)
	require.Equal(t, 6, r.Ended)
	j := tb.journal(t)
	require.Len(t, j, 2, "one batch, two retention periods: two journal items")
	require.Len(t, j[0].seqs, 3)
	require.Len(t, j[1].seqs, 3)
	require.Less(t, j[0].sk, j[1].sk, "the shorter retention expires first")
})

var _ = register("RowCapTrimsOldestFirstAcrossPartitionsFromTheJournal", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.RowCap = 3; c.Partitions = 2 })
	byPart := map[int][]string{}
	for range 4 {
		a := tb.enqueue(t, outbox.EnqueueParams{})
		byPart[a.Partition] = append(byPart[a.Partition], a.ID)
	}
	require.Len(t, byPart[0], 2, "keyless actions spread round robin")
	// Partition 0's batch ends first, then partition 1's: one journal item
	// each, partition 1's with the later expiry.
	for p := range 2 {
		r, err := tb.settled().DrainPartition(ctx, p, outbox.DrainParams{})
		require.NoError(t, err)
		require.Equal(t, 2, r.Ended)
		tb.b.Clock.Advance(time.Minute)
	}
	newer := []string{tb.enqueue(t, outbox.EnqueueParams{}).ID, tb.enqueue(t, outbox.EnqueueParams{}).ID}
	tb.drain(t)
	// Six ended, cap three: partition 0's two and the older of partition
	// 1's (the lower seq) go; partition 1's journal item keeps the other.
	res, err := tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, res.Trimmed)
	gone := append(append([]string{}, byPart[0]...), byPart[1][0])
	for _, id := range gone {
		_, err := tb.e.ActionGet(ctx, id)
		require.ErrorIs(t, err, outbox.ErrNotFound, id)
	}
	kept := append([]string{byPart[1][1]}, newer...)
	for _, id := range kept {
		require.Equal(t, outbox.StateDONE, tb.get(t, id).State, id)
	}
	require.Equal(t, sorted(kept...), tb.journaled(t))
	res, err = tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Trimmed+res.Deleted, "at the cap")
	// One more ending: the oldest left, from the shrunk journal item, goes.
	tb.b.Clock.Advance(time.Minute)
	tb.enqueue(t, outbox.EnqueueParams{})
	tb.drain(t)
	res, err = tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Trimmed)
	_, err = tb.e.ActionGet(ctx, byPart[1][1])
	require.ErrorIs(t, err, outbox.ErrNotFound)
})

// countingDB counts the calls an engine makes, by operation.
type countingDB struct {
	outbox.DynamoDB
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingDB) count(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[op]++
}

func (c *countingDB) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.calls {
		out[k] = v
	}
	return out
}

func (c *countingDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.count("Query")
	out, err := c.DynamoDB.Query(ctx, in, o...)
	if err == nil {
		c.mu.Lock()
		c.calls["Query items"] += len(out.Items)
		if aws.ToString(in.IndexName) == "due" {
			c.calls["Query due items"] += len(out.Items)
		}
		c.mu.Unlock()
	}
	return out, err
}

func (c *countingDB) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	c.count("Scan")
	return c.DynamoDB.Scan(ctx, in, o...)
}

func (c *countingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.count("GetItem")
	return c.DynamoDB.GetItem(ctx, in, o...)
}

func (c *countingDB) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c.count("BatchGetItem")
	for _, ka := range in.RequestItems {
		c.mu.Lock()
		c.calls["BatchGetItem keys"] += len(ka.Keys)
		c.mu.Unlock()
	}
	return c.DynamoDB.BatchGetItem(ctx, in, o...)
}

func (c *countingDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.count("DeleteItem")
	return c.DynamoDB.DeleteItem(ctx, in, o...)
}

func (c *countingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.count("UpdateItem")
	return c.DynamoDB.UpdateItem(ctx, in, o...)
}

func (c *countingDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.count("PutItem")
	return c.DynamoDB.PutItem(ctx, in, o...)
}

func (c *countingDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.count("TransactWriteItems")
	return c.DynamoDB.TransactWriteItems(ctx, in, o...)
}

var _ = register("RetentionCostFollowsWhatItDeletes", func(ctx context.Context, t *testing.T, nb NewBackend) {
	// run ends `expired` actions, then half an hour later `kept` more, and
	// an hour after the first runs retention with a counting client.
	run := func(expired, kept int) (map[string]int, *outbox.RetainResult) {
		tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Retention = time.Hour; c.BatchSize = 10 })
		for i := range expired {
			tb.enqueue(t, outbox.EnqueueParams{IdempotencyKey: fmt.Sprintf("x%d", i)})
		}
		tb.drain(t)
		tb.b.Clock.Advance(30 * time.Minute)
		for range kept {
			tb.enqueue(t, outbox.EnqueueParams{})
		}
		tb.drain(t)
		tb.b.Clock.Advance(31 * time.Minute)
		db := &countingDB{DynamoDB: tb.b.DB, calls: map[string]int{}}
		e, err := outbox.New(db, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg)
		require.NoError(t, err)
		tb.settled()
		res, err := e.Retain(ctx)
		require.NoError(t, err)
		return db.snapshot(), res
	}
	small, r1 := run(3, 10)
	require.Equal(t, 3, r1.Deleted)
	big, r2 := run(3, 60)
	require.Equal(t, 3, r2.Deleted)
	// Six times the history, the same calls: one journal query for the
	// partition, one read of the listed rows, a delete per row, per
	// idempotency record and for the journal item.
	require.Equal(t, small, big)
	// One journal query for the partition (and, where DescribeTable's item
	// count is not known yet, as on a new real table, one to count the cap).
	require.LessOrEqual(t, small["Query"], 2)
	require.Equal(t, 1, small["BatchGetItem"])
	require.Equal(t, 3+3+1, small["DeleteItem"])
	more, r3 := run(12, 10)
	require.Equal(t, 12, r3.Deleted)
	// Twelve expired in two batches of ten: two journal items.
	require.Equal(t, 12+12+2, more["DeleteItem"])
	require.Equal(t, 2, more["BatchGetItem"])
	require.Equal(t, small["Query"], more["Query"])
})
