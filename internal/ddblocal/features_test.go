package ddblocal_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
)

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": s(pk), "sk": s(sk)}
}

func (b *testBundle) get(t *testing.T, pk, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := b.db.GetItem(b.ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: key(pk, sk), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	return out.Item
}

func TestTTLSweep(t *testing.T) {
	t.Parallel()
	b := setup(t, ddblocal.WithTTLDelay(time.Hour))
	_, err := b.db.UpdateTimeToLive(b.ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(tbl), TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)}})
	require.NoError(t, err)
	d, err := b.db.DescribeTimeToLive(b.ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(tbl)})
	require.NoError(t, err)
	require.Equal(t, types.TimeToLiveStatusEnabled, d.TimeToLiveDescription.TimeToLiveStatus)

	now := epoch.Unix()
	b.put(t, map[string]types.AttributeValue{"pk": s("a"), "sk": s("1"), "ttl": n(fmt.Sprint(now - 10))})
	b.put(t, map[string]types.AttributeValue{"pk": s("b"), "sk": s("1"), "ttl": n(fmt.Sprint(now + 100))})
	b.put(t, map[string]types.AttributeValue{"pk": s("c"), "sk": s("1"), "ttl": s("not a number")})
	b.put(t, map[string]types.AttributeValue{"pk": s("d"), "sk": s("1")})
	// "Items with an expiration time older than five years are not deleted."
	b.put(t, map[string]types.AttributeValue{"pk": s("e"), "sk": s("1"), "ttl": n(fmt.Sprint(now - 6*365*24*3600))})

	require.Equal(t, 0, b.db.SweepTTL(), "the delay has not passed")
	b.clock.Advance(time.Hour + time.Second)
	require.Equal(t, 1, b.db.SweepTTL())
	require.Nil(t, b.get(t, "a", "1"))
	require.NotNil(t, b.get(t, "b", "1"))
	require.NotNil(t, b.get(t, "e", "1"))
	b.clock.Advance(2 * time.Minute)
	// Moving the TTL later through an update keeps the item.
	_, err = b.db.UpdateItem(b.ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key("b", "1"), UpdateExpression: aws.String("SET #t = :t"),
		ExpressionAttributeNames: map[string]string{"#t": "ttl"}, ExpressionAttributeValues: map[string]types.AttributeValue{":t": n(fmt.Sprint(now + 100000))}})
	require.NoError(t, err)
	require.Equal(t, 0, b.db.SweepTTL())

	changes := b.db.Changes(tbl, 0)
	last := changes[len(changes)-1]
	var removed *ddblocal.Change
	for i := range changes {
		if changes[i].EventName == ddblocal.EventRemove {
			removed = &changes[i]
		}
	}
	require.NotNil(t, removed)
	require.True(t, removed.ByTTL)
	require.Equal(t, key("a", "1"), removed.Keys)
	require.Equal(t, ddblocal.EventModify, last.EventName)
}

func TestTTLSweepFromClock(t *testing.T) {
	t.Parallel()
	b := setup(t, ddblocal.WithTTLSweepEvery(time.Minute))
	_, err := b.db.UpdateTimeToLive(b.ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(tbl), TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)}})
	require.NoError(t, err)
	b.put(t, map[string]types.AttributeValue{"pk": s("a"), "sk": s("1"), "ttl": n(fmt.Sprint(epoch.Unix() + 5))})
	b.clock.Advance(30 * time.Second)
	require.NotNil(t, b.get(t, "a", "1"))
	b.clock.Advance(31 * time.Second)
	require.Nil(t, b.get(t, "a", "1"))
}

func TestWatchSignalsChanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch, stop := b.db.Watch()
	defer stop()
	b.put(t, map[string]types.AttributeValue{"pk": s("a"), "sk": s("1")})
	select {
	case <-ch:
	default:
		t.Fatal("no signal after a write")
	}
	first := b.db.Changes(tbl, 0)
	require.Len(t, first, 1)
	// An identical put changes nothing and records nothing.
	b.put(t, map[string]types.AttributeValue{"pk": s("a"), "sk": s("1")})
	require.Empty(t, b.db.Changes(tbl, first[0].Seq+1))
}

func TestChangeLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, ddblocal.WithChangeLimit(3))
	for i := 0; i < 5; i++ {
		b.put(t, key("a", fmt.Sprint(i)))
	}
	changes := b.db.Changes(tbl, 0)
	require.Len(t, changes, 3)
	require.Equal(t, key("a", "2"), changes[0].Keys, "the oldest went first")
}

func TestIndexLag(t *testing.T) {
	t.Parallel()
	b := setup(t, ddblocal.WithIndexLagDuration(time.Second))
	b.put(t, map[string]types.AttributeValue{"pk": s("a"), "sk": s("1"), "gpk": s("g"), "gsk": n("1")})
	require.Empty(t, b.queryIndex(t, "g"), "the index lags")
	require.NotNil(t, b.get(t, "a", "1"), "the base table does not")
	b.clock.Advance(time.Second)
	require.Len(t, b.queryIndex(t, "g"), 1)
	_, err := b.db.DeleteItem(b.ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: key("a", "1")})
	require.NoError(t, err)
	require.Len(t, b.queryIndex(t, "g"), 1, "the delete lags too")
	b.clock.Advance(time.Second)
	require.Empty(t, b.queryIndex(t, "g"))
}

func TestFaults(t *testing.T) {
	t.Parallel()
	var next ddblocal.Fault
	plan := ddblocal.FaultPlanFunc(func(c ddblocal.Call) ddblocal.Fault {
		f := next
		next = ddblocal.Fault{}
		return f
	})
	var slept time.Duration
	b := setup(t, ddblocal.WithFaults(plan), ddblocal.WithSleeper(func(_ context.Context, d time.Duration) error { slept += d; return nil }))

	next = ddblocal.Fault{Kind: ddblocal.FaultFailBefore}
	_, err := b.db.PutItem(b.ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: key("a", "1")})
	var ise *types.InternalServerError
	require.ErrorAs(t, err, &ise)
	require.Nil(t, b.get(t, "a", "1"))

	next = ddblocal.Fault{Kind: ddblocal.FaultFailAfter, Err: context.DeadlineExceeded, Delay: time.Second}
	_, err = b.db.PutItem(b.ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: key("a", "1")})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotNil(t, b.get(t, "a", "1"), "an ambiguous write committed")
	require.Equal(t, time.Second, slept)

	next = ddblocal.Fault{Kind: ddblocal.FaultThrottle}
	_, err = b.db.GetItem(b.ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: key("a", "1")})
	var pte *types.ProvisionedThroughputExceededException
	require.ErrorAs(t, err, &pte)

	next = ddblocal.Fault{Kind: ddblocal.FaultConflict}
	_, err = b.db.TransactWriteItems(b.ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(tbl), Item: key("b", "1")}},
		{Delete: &types.Delete{TableName: aws.String(tbl), Key: key("a", "1")}},
	}})
	var tce *types.TransactionCanceledException
	require.ErrorAs(t, err, &tce)
	require.Equal(t, "TransactionConflict", aws.ToString(tce.CancellationReasons[0].Code))
	require.Nil(t, b.get(t, "b", "1"))
	require.NotNil(t, b.get(t, "a", "1"))

	next = ddblocal.Fault{Kind: ddblocal.FaultThrottle}
	_, err = b.db.TransactWriteItems(b.ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(tbl), Item: key("b", "1")}},
	}})
	require.ErrorAs(t, err, &tce)
	require.Equal(t, "ThrottlingError", aws.ToString(tce.CancellationReasons[0].Code))
	require.Nil(t, b.get(t, "b", "1"))

	next = ddblocal.Fault{Kind: ddblocal.FaultConflict}
	_, err = b.db.UpdateItem(b.ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key("a", "1"), UpdateExpression: aws.String("SET x = :x"), ExpressionAttributeValues: map[string]types.AttributeValue{":x": n("1")}})
	var tconf *types.TransactionConflictException
	require.ErrorAs(t, err, &tconf)
}

func TestRandomFaultsAreDeterministic(t *testing.T) {
	t.Parallel()
	draw := func() []ddblocal.Fault {
		p := ddblocal.NewRandomFaults(42, ddblocal.FaultRates{FailBefore: 0.1, FailAfter: 0.1, Throttle: 0.1, Conflict: 0.1, Delay: 0.2, MaxDelay: time.Second})
		var out []ddblocal.Fault
		for i := 0; i < 200; i++ {
			out = append(out, p.Decide(ddblocal.Call{Op: "PutItem", Table: tbl}))
		}
		return out
	}
	a, b := draw(), draw()
	require.Equal(t, a, b)
	kinds := map[ddblocal.FaultKind]int{}
	for _, f := range a {
		kinds[f.Kind]++
	}
	require.Len(t, kinds, 5, "every kind is drawn")
}

func TestConsumedCapacity(t *testing.T) {
	t.Parallel()
	b := setup(t)
	big := make([]byte, 1500)
	for i := range big {
		big[i] = 'x'
	}
	out, err := b.db.PutItem(b.ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
		Item: map[string]types.AttributeValue{"pk": s("a"), "sk": s("1"), "gpk": s("g"), "gsk": n("1"), "payload": s(string(big))}})
	require.NoError(t, err)
	cc := out.ConsumedCapacity
	require.Equal(t, 3.0, aws.ToFloat64(cc.CapacityUnits), "2 units for a 1.5 KB item, 1 for its keys-only index entry")
	require.Equal(t, 2.0, aws.ToFloat64(cc.Table.CapacityUnits))
	require.Equal(t, 1.0, aws.ToFloat64(cc.GlobalSecondaryIndexes["gsi"].CapacityUnits))

	// An update that changes the index key: a delete and a put in the index.
	up, err := b.db.UpdateItem(b.ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key("a", "1"), UpdateExpression: aws.String("SET gsk = :k REMOVE payload"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": n("2")}, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
	require.NoError(t, err)
	require.Equal(t, 2.0, aws.ToFloat64(up.ConsumedCapacity.Table.CapacityUnits), "billed on the larger, old item")
	require.Equal(t, 2.0, aws.ToFloat64(up.ConsumedCapacity.GlobalSecondaryIndexes["gsi"].CapacityUnits))

	g, err := b.db.GetItem(b.ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: key("a", "1"), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	require.NoError(t, err)
	require.Equal(t, 0.5, aws.ToFloat64(g.ConsumedCapacity.CapacityUnits))

	tx, err := b.db.TransactWriteItems(b.ctx, &dynamodb.TransactWriteItemsInput{ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal, TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(tbl), Item: key("b", "1")}},
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(tbl), Key: key("a", "1"), ConditionExpression: aws.String("attribute_exists(pk)")}},
	}})
	require.NoError(t, err)
	require.Equal(t, 4.0, aws.ToFloat64(tx.ConsumedCapacity[0].CapacityUnits), "2 per transactional write, 2 per condition check")

	st := b.db.Capacity(tbl)
	require.Equal(t, 2.0+2.0+4.0, st.WriteUnits)
	require.Equal(t, 0.5, st.ReadUnits)
	require.Equal(t, 3.0, st.Indexes["gsi"].WriteUnits)
	require.Equal(t, int64(1), st.Calls["TransactWriteItems"])
}

func TestValidationMessages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		name string
		err  error
		code string
		msg  string
	}{}
	add := func(name string, err error, code, msg string) {
		cases = append(cases, struct {
			name string
			err  error
			code string
			msg  string
		}{name, err, code, msg})
	}
	_, err := b.db.PutItem(b.ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s("a")}})
	add("MissingKey", err, "ValidationException", "One or more parameter values were invalid: Missing the key sk in the item")
	_, err = b.db.PutItem(b.ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s("a"), "sk": n("1")}})
	add("WrongKeyType", err, "ValidationException", "One or more parameter values were invalid: Type mismatch for key sk expected: S actual: N")
	_, err = b.db.PutItem(b.ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s(""), "sk": s("1")}})
	add("EmptyKey", err, "ValidationException", "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: pk")
	_, err = b.db.PutItem(b.ctx, &dynamodb.PutItemInput{TableName: aws.String("nope"), Item: key("a", "1")})
	add("UnknownTable", err, "ResourceNotFoundException", "Requested resource not found")
	_, err = b.db.GetItem(b.ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("a")}})
	add("PartialKey", err, "ValidationException", "The provided key element does not match the schema")
	_, err = b.db.Query(b.ctx, &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("gsi"), ConsistentRead: aws.Bool(true), KeyConditionExpression: aws.String("gpk = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("g")}})
	add("ConsistentGSI", err, "ValidationException", "Consistent reads are not supported on global secondary indexes")
	_, err = b.db.Query(b.ctx, &dynamodb.QueryInput{TableName: aws.String(tbl), Limit: aws.Int32(0), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("g")}})
	add("LimitZero", err, "ValidationException", "1 validation error detected: Value '0' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1")
	_, err = b.db.PutItem(b.ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s("a"), "sk": s("1"), "gsk": s("x")}})
	add("IndexKeyType", err, "ValidationException", "One or more parameter values were invalid: Type mismatch for Index Key gsk Expected: N Actual: S IndexName: gsi")
	_, err = b.db.UpdateItem(b.ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key("a", "1"), UpdateExpression: aws.String("SET pk = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("b")}})
	add("UpdateKey", err, "ValidationException", "One or more parameter values were invalid: Cannot update attribute pk. This attribute is part of the key")
	_, err = b.db.TransactWriteItems(b.ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(tbl), Item: key("a", "1")}},
		{Delete: &types.Delete{TableName: aws.String(tbl), Key: key("a", "1")}},
	}})
	add("TxSameItem", err, "ValidationException", "Transaction request cannot include multiple operations on one item")
	_, err = b.db.CreateTable(b.ctx, &dynamodb.CreateTableInput{TableName: aws.String(tbl), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}}})
	add("TableExists", err, "ResourceInUseException", "Table already exists: "+tbl)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Error(t, c.err)
			require.Equal(t, c.code, apiCode(c.err), c.err.Error())
			require.Equal(t, c.msg, apiMessage(c.err))
		})
	}
}

func apiMessage(err error) string {
	var ae interface{ ErrorMessage() string }
	if errors.As(err, &ae) {
		return ae.ErrorMessage()
	}
	return ""
}

// TestWithUnprocessedRetryLoop: with WithUnprocessed, batch calls leave
// some work unprocessed, and the retry loop DynamoDB's documentation asks
// for gets everything written and read.
func TestWithUnprocessedRetryLoop(t *testing.T) {
	t.Parallel()
	b := setup(t, ddblocal.WithUnprocessed(0.5, 42))
	var reqs []types.WriteRequest
	var keys []map[string]types.AttributeValue
	for i := range 25 {
		it := map[string]types.AttributeValue{"pk": s(fmt.Sprint("u", i)), "sk": s("1")}
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
		keys = append(keys, it)
	}
	pending := map[string][]types.WriteRequest{tbl: reqs}
	calls, partial := 0, 0
	for len(pending) > 0 {
		out, err := b.db.BatchWriteItem(b.ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
		require.NoError(t, err)
		calls++
		if len(out.UnprocessedItems) > 0 {
			partial++
		}
		pending = out.UnprocessedItems
		require.Less(t, calls, 100)
	}
	require.Positive(t, partial, "some writes were left unprocessed")
	got := 0
	want := map[string]types.KeysAndAttributes{tbl: {Keys: keys}}
	for len(want) > 0 {
		out, err := b.db.BatchGetItem(b.ctx, &dynamodb.BatchGetItemInput{RequestItems: want})
		require.NoError(t, err)
		got += len(out.Responses[tbl])
		want = out.UnprocessedKeys
	}
	require.Equal(t, 25, got, "every item was written once the loop ended")
}
