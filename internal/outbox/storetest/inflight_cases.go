package storetest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Cases of design.md §3.3: a claim takes actions out of the due index, and the
// partition's claim fence row tracks them in its in-flight map ("inf": seq ->
// lease expiry in Unix ms) until their holder sees them settle.

// fenceRow reads partition p's claim fence row.
func (tb *bundle) fenceRow(t *testing.T, p int) map[string]types.AttributeValue {
	t.Helper()
	out, err := tb.b.DB.GetItem(tb.ctx, &dynamodb.GetItemInput{
		TableName: aws.String(tb.b.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "P#" + strconv.Itoa(p)},
			"sk": &types.AttributeValueMemberS{Value: "FENCE"},
		},
	})
	require.NoError(t, err)
	return out.Item
}

// inflight lists the seqs in partition p's in-flight map with their lease
// expiry.
func (tb *bundle) inflight(t *testing.T, p int) map[int64]time.Time {
	t.Helper()
	out := map[int64]time.Time{}
	m, ok := tb.fenceRow(t, p)["inf"].(*types.AttributeValueMemberM)
	if !ok {
		return out
	}
	for k, v := range m.Value {
		seq, err := strconv.ParseInt(k, 10, 64)
		require.NoError(t, err)
		ms, err := strconv.ParseInt(v.(*types.AttributeValueMemberN).Value, 10, 64)
		require.NoError(t, err)
		out[seq] = time.UnixMilli(ms).UTC()
	}
	return out
}

// actionRow reads an action's row as stored.
func (tb *bundle) actionRow(t *testing.T, a outbox.Action) map[string]types.AttributeValue {
	t.Helper()
	out, err := tb.b.DB.GetItem(tb.ctx, &dynamodb.GetItemInput{
		TableName: aws.String(tb.b.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "P#" + strconv.Itoa(a.Partition)},
			"sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("A#%020d", a.Seq)},
		},
	})
	require.NoError(t, err)
	return out.Item
}

// dueRows reads partition p's due index: seq -> projected state.
func (tb *bundle) dueRows(t *testing.T, p int) map[int64]string {
	t.Helper()
	tb.settled()
	out := map[int64]string{}
	q, err := tb.b.DB.Query(tb.ctx, &dynamodb.QueryInput{
		TableName: aws.String(tb.b.Table), IndexName: aws.String(outbox.IndexDue),
		KeyConditionExpression:    aws.String("due_pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "D#" + strconv.Itoa(p)}},
	})
	require.NoError(t, err)
	for _, it := range q.Items {
		var seq int64
		_, err := fmt.Sscanf(it["sk"].(*types.AttributeValueMemberS).Value, "A#%d", &seq)
		require.NoError(t, err)
		st, _ := it["st"].(*types.AttributeValueMemberS)
		out[seq] = st.Value
	}
	return out
}

// itemSize is DynamoDB's item size (Developer Guide, "Item sizes and
// formats"): names and values in UTF-8 bytes, numbers about one byte per two
// significant digits plus one, 3 bytes per map plus one per element.
func itemSize(it map[string]types.AttributeValue) int {
	n := 0
	for k, v := range it {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return len(x.Value)
	case *types.AttributeValueMemberN:
		digits := 0
		for _, c := range x.Value {
			if c >= '0' && c <= '9' {
				digits++
			}
		}
		return (digits+1)/2 + 1
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range x.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 1
}

var _ = register("ClaimTakesActionsOutOfDue", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{})
	b := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	c := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	require.Len(t, tb.dueRows(t, 0), 3)
	res, _, _ := tb.claim(t, 0, 10)
	require.Equal(t, [][]string{{a.ID}, {b.ID, c.ID}}, ids(res))
	require.Empty(t, tb.dueRows(t, 0), "no claimed row stays in the due index")
	inf := tb.inflight(t, 0)
	for _, x := range []outbox.Action{a, b, c} {
		row := tb.actionRow(t, x)
		require.NotContains(t, row, "due_pk")
		require.NotContains(t, row, "due_sk")
		require.Contains(t, inf, x.Seq, "a claimed action is tracked on its fence row")
		require.Equal(t, tb.get(t, x.ID).LeaseExpiresAt, inf[x.Seq])
	}
})

var _ = register("CrashedClaimIsReclaimedFromInflightMapAfterItsLease", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{})
	later := tb.enqueue(t, outbox.EnqueueParams{})
	res, _, _ := tb.claim(t, 0, 1) // its drainer dies right after the claim
	require.Equal(t, [][]string{{a.ID}}, ids(res))
	lease := tb.get(t, a.ID).LeaseExpiresAt

	tb.b.Clock.Set(lease.Add(-time.Second))
	r := tb.drain(t)
	require.Equal(t, 1, r.Claimed, "only the other action: the lease still runs")
	got := tb.get(t, a.ID)
	require.Equal(t, outbox.StateEXECUTING, got.State)
	require.EqualValues(t, 1, got.Epoch)
	require.Equal(t, outbox.StateDONE, tb.get(t, later.ID).State)
	require.Equal(t, map[int64]time.Time{a.Seq: lease}, tb.inflight(t, 0),
		"the entry of the lost claim stays; the drain's own entries went with its release")

	tb.b.Clock.Set(lease)
	r = tb.drain(t)
	require.Equal(t, 1, r.Claimed, "reclaimed from the fence's map: it is in no index")
	got = tb.get(t, a.ID)
	require.Equal(t, outbox.StateDONE, got.State)
	require.EqualValues(t, 2, got.Epoch)
	require.Empty(t, tb.inflight(t, 0))
})

var _ = register("ReaperFindsExpiredLeaseInNoIndex", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{Kind: KindAMO, Payload: Payload(Script{Do: []string{"crash"}})})
	tb.drain(t) // the drainer dies inside the provider call
	require.NotContains(t, tb.actionRow(t, a), "due_pk")
	require.Empty(t, tb.dueRows(t, 0))
	require.Contains(t, tb.inflight(t, 0), a.Seq)

	rr, err := tb.settled().Reap(ctx)
	require.NoError(t, err)
	require.Zero(t, rr.Uncertain, "its lease still runs")
	require.Equal(t, 1, rr.Gauges[0].ClaimedDepth, "counted from the fence's map")

	tb.b.Clock.Advance(tb.cfg.Lease + time.Second)
	rr, err = tb.settled().Reap(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rr.Uncertain)
	got := tb.get(t, a.ID)
	require.Equal(t, outbox.StateUNCERTAIN, got.State)
	require.Equal(t, outbox.StopLeaseLostAfterWrite, got.StopReason)
	require.Contains(t, tb.inflight(t, 0), a.Seq, "the reaper does not hold the fence: the entry waits for a holder")

	r := tb.drain(t)
	require.Zero(t, r.Claimed)
	require.Empty(t, tb.inflight(t, 0), "the next holder saw it ended and removed the entry")
	require.Equal(t, 1, tb.rec.Execs(a.ID))
})

var _ = register("InflightMapIsEmptiedByTheHoldersRelease", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	var all []outbox.Action
	for _, do := range []string{"done", "retry", "defer", "failed", "cancelled"} {
		all = append(all, tb.enqueue(t, outbox.EnqueueParams{Payload: Payload(Script{Do: []string{do, "done"}})}))
	}
	all = append(all, tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", Payload: Payload(Script{Do: []string{"retry", "done"}})}))
	all = append(all, tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"}))
	r := tb.drain(t)
	require.Equal(t, len(all), r.Claimed)
	require.Empty(t, tb.inflight(t, 0), "every claimed action settled: the release removed their entries")
	due := tb.dueRows(t, 0)
	require.Equal(t, map[int64]string{
		all[1].Seq: "ADMITTED", all[2].Seq: "ADMITTED", all[5].Seq: "ADMITTED", all[6].Seq: "ADMITTED",
	}, due, "retried, deferred and released actions are back in due")
	tb.b.Clock.Advance(tb.cfg.RetryCap)
	tb.drain(t)
	for i, a := range all {
		if i == 2 {
			continue // a deferral does not count the attempt: it defers again
		}
		require.True(t, tb.get(t, a.ID).State.Ended(), a.ID)
	}
	require.Equal(t, map[int64]string{all[2].Seq: "ADMITTED"}, tb.dueRows(t, 0))
	require.Empty(t, tb.inflight(t, 0))
})

var _ = register("RereadComesBackThroughDue", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{Kind: KindRB, Payload: Payload(Script{Do: []string{"reread"}, ReadBack: "done"})})
	tb.drain(t)
	got := tb.get(t, a.ID)
	require.Equal(t, outbox.StateEXECUTING, got.State)
	require.Empty(t, got.Owner)
	require.Equal(t, map[int64]string{a.Seq: "EXECUTING"}, tb.dueRows(t, 0), "back in due at its lease expiry")
	require.Equal(t, fmt.Sprintf("%013d#%020d", got.LeaseExpiresAt.UnixMilli(), a.Seq), tb.actionRow(t, a)["due_sk"].(*types.AttributeValueMemberS).Value)
	require.Empty(t, tb.inflight(t, 0), "in due again: its entry went")

	res, _, _ := tb.claim(t, 0, 10)
	require.Empty(t, res.Groups, "not before its lease ends")
	tb.b.Clock.Set(got.LeaseExpiresAt)
	r := tb.drain(t)
	require.Equal(t, 1, r.Claimed)
	got = tb.get(t, a.ID)
	require.Equal(t, outbox.StateDONE, got.State)
	require.Equal(t, 1, tb.rec.ReadBacks(a.ID))
	require.Equal(t, 1, tb.rec.Execs(a.ID))
	require.Empty(t, tb.inflight(t, 0))
})

var _ = register("FenceRowStaysUnderOneKBForABatchOf25", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.BatchSize = 25 })
	// A partition that has seen many actions: 13-digit seqs.
	_, err := tb.b.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(tb.b.Table),
		Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "P#0"}, "sk": &types.AttributeValueMemberS{Value: "SEQ"},
			"next": &types.AttributeValueMemberN{Value: "999999999999"},
		},
	})
	require.NoError(t, err)
	for range 75 {
		tb.enqueue(t, outbox.EnqueueParams{})
	}
	maxSize, maxEntries := 0, 0
	tb.rec.OnExecute = func(*outbox.Attempt) {
		row := tb.fenceRow(t, 0)
		maxSize = max(maxSize, itemSize(row))
		maxEntries = max(maxEntries, len(row["inf"].(*types.AttributeValueMemberM).Value))
	}
	r, err := tb.settled().DrainPartition(ctx, 0, outbox.DrainParams{Concurrency: 1})
	require.NoError(t, err)
	require.Equal(t, 75, r.Claimed)
	require.Equal(t, 25, maxEntries, "a batch's entries; the batch before it went in the same claim")
	require.LessOrEqual(t, maxSize, 1024, "the claim's fence update stays at 1 write unit")
	require.Empty(t, tb.inflight(t, 0))
})
