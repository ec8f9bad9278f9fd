package ddblocal_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

var _ outbox.DynamoDB = (*ddblocal.DB)(nil)

type testBundle struct {
	db    *ddblocal.DB
	clock *clock.Manual
	ctx   context.Context
}

const tbl = "items"

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func setup(t *testing.T, opts ...ddblocal.Option) *testBundle {
	t.Helper()
	clk := clock.NewManual(epoch)
	db := ddblocal.New(append([]ddblocal.Option{ddblocal.WithClock(clk)}, opts...)...)
	b := &testBundle{db: db, clock: clk, ctx: context.Background()}
	_, err := db.CreateTable(b.ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(tbl),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("gpk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("gsk"), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String("gsi"),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("gpk"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("gsk"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	})
	require.NoError(t, err)
	return b
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func (b *testBundle) put(t *testing.T, item map[string]types.AttributeValue) {
	t.Helper()
	_, err := b.db.PutItem(b.ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: item})
	require.NoError(t, err)
}

func (b *testBundle) queryIndex(t *testing.T, gpk string) []map[string]types.AttributeValue {
	t.Helper()
	out, err := b.db.Query(b.ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(tbl),
		IndexName:                 aws.String("gsi"),
		KeyConditionExpression:    aws.String("gpk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s(gpk)},
	})
	require.NoError(t, err)
	return out.Items
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestPutGetUpdateDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, map[string]types.AttributeValue{"pk": s("a"), "sk": s("1"), "v": n("1.50")})
	got, err := b.db.GetItem(b.ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("a"), "sk": s("1")}})
	require.NoError(t, err)
	require.Equal(t, n("1.5"), got.Item["v"])

	up, err := b.db.UpdateItem(b.ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(tbl),
		Key:                       map[string]types.AttributeValue{"pk": s("a"), "sk": s("1")},
		UpdateExpression:          aws.String("SET v = v + :one REMOVE nope"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1")},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	require.NoError(t, err)
	require.Equal(t, n("2.5"), up.Attributes["v"])

	_, err = b.db.PutItem(b.ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(tbl),
		Item:                                map[string]types.AttributeValue{"pk": s("a"), "sk": s("1")},
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	require.ErrorAs(t, err, &ccf)
	require.Equal(t, n("2.5"), ccf.Item["v"])

	del, err := b.db.DeleteItem(b.ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("a"), "sk": s("1")}, ReturnValues: types.ReturnValueAllOld})
	require.NoError(t, err)
	require.Equal(t, n("2.5"), del.Attributes["v"])

	changes := b.db.Changes(tbl, 0)
	require.Len(t, changes, 3)
	require.Equal(t, []string{"INSERT", "MODIFY", "REMOVE"}, []string{changes[0].EventName, changes[1].EventName, changes[2].EventName})
}

func TestIndexFollowsUpdates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, map[string]types.AttributeValue{"pk": s("a"), "sk": s("1")})
	require.Empty(t, b.queryIndex(t, "D#1"))
	_, err := b.db.UpdateItem(b.ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(tbl),
		Key:                       map[string]types.AttributeValue{"pk": s("a"), "sk": s("1")},
		UpdateExpression:          aws.String("SET gpk = :p, gsk = :k"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("D#1"), ":k": n("5")},
	})
	require.NoError(t, err)
	items := b.queryIndex(t, "D#1")
	require.Len(t, items, 1)
	require.Equal(t, map[string]types.AttributeValue{"pk": s("a"), "sk": s("1"), "gpk": s("D#1"), "gsk": n("5")}, items[0])
	_, err = b.db.UpdateItem(b.ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(tbl),
		Key:              map[string]types.AttributeValue{"pk": s("a"), "sk": s("1")},
		UpdateExpression: aws.String("REMOVE gpk"),
	})
	require.NoError(t, err)
	require.Empty(t, b.queryIndex(t, "D#1"))
}

func TestQueryOrderAndPaging(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := 0; i < 25; i++ {
		b.put(t, map[string]types.AttributeValue{"pk": s("p"), "sk": s(fmt.Sprintf("%03d", i)), "gpk": s("g"), "gsk": n(fmt.Sprint(i - 10))})
	}
	b.put(t, map[string]types.AttributeValue{"pk": s("q"), "sk": s("000")})
	var seen []string
	var start map[string]types.AttributeValue
	for {
		out, err := b.db.Query(b.ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(tbl),
			KeyConditionExpression:    aws.String("pk = :p AND sk BETWEEN :a AND :b"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("p"), ":a": s("005"), ":b": s("020")},
			Limit:                     aws.Int32(4),
			ExclusiveStartKey:         start,
			ScanIndexForward:          aws.Bool(false),
		})
		require.NoError(t, err)
		for _, it := range out.Items {
			seen = append(seen, it["sk"].(*types.AttributeValueMemberS).Value)
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		start = out.LastEvaluatedKey
	}
	require.Len(t, seen, 16)
	require.Equal(t, "020", seen[0])
	require.Equal(t, "005", seen[15])

	out, err := b.db.Query(b.ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(tbl),
		IndexName:                 aws.String("gsi"),
		KeyConditionExpression:    aws.String("gpk = :p AND gsk < :z"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("g"), ":z": n("-7.5")},
	})
	require.NoError(t, err)
	require.Len(t, out.Items, 3) // -10, -9, -8
	require.Equal(t, n("-10"), out.Items[0]["gsk"])
}

func TestTransactWrite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, map[string]types.AttributeValue{"pk": s("a"), "sk": s("1"), "v": n("1")})
	tx := func(token string, cond string) error {
		_, err := b.db.TransactWriteItems(b.ctx, &dynamodb.TransactWriteItemsInput{
			ClientRequestToken: aws.String(token),
			TransactItems: []types.TransactWriteItem{
				{Put: &types.Put{TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s("b"), "sk": s("1")}}},
				{Update: &types.Update{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("a"), "sk": s("1")},
					UpdateExpression: aws.String("SET v = v + :one"), ConditionExpression: aws.String(cond),
					ExpressionAttributeValues:           map[string]types.AttributeValue{":one": n("1")},
					ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
			},
		})
		return err
	}
	err := tx("t1", "v = :one AND attribute_not_exists(nope)")
	require.NoError(t, err)
	require.NoError(t, tx("t1", "v = :one AND attribute_not_exists(nope)")) // replay: not applied again
	got, err := b.db.GetItem(b.ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("a"), "sk": s("1")}})
	require.NoError(t, err)
	require.Equal(t, n("2"), got.Item["v"])

	var mismatch *types.IdempotentParameterMismatchException
	require.ErrorAs(t, tx("t1", "v = :one"), &mismatch)

	err = tx("t2", "v = :one")
	var tce *types.TransactionCanceledException
	require.ErrorAs(t, err, &tce)
	require.Len(t, tce.CancellationReasons, 2)
	require.Equal(t, "None", aws.ToString(tce.CancellationReasons[0].Code))
	require.Equal(t, "ConditionalCheckFailed", aws.ToString(tce.CancellationReasons[1].Code))
	require.Equal(t, n("2"), tce.CancellationReasons[1].Item["v"])
	require.Contains(t, aws.ToString(tce.Message), "[None, ConditionalCheckFailed]")

	b.clock.Advance(11 * time.Minute)
	require.NoError(t, tx("t1", "attribute_exists(v) OR v = :one")) // token expired: a new request
}

func TestConcurrentCounters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, map[string]types.AttributeValue{"pk": s("c"), "sk": s("1"), "v": n("0")})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				_, err := b.db.UpdateItem(b.ctx, &dynamodb.UpdateItemInput{
					TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("c"), "sk": s("1")},
					UpdateExpression: aws.String("ADD v :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1")},
				})
				if err != nil {
					t.Error(err)
				}
				_, _ = b.db.Query(b.ctx, &dynamodb.QueryInput{TableName: aws.String(tbl), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("c")}})
			}
		}()
	}
	wg.Wait()
	got, err := b.db.GetItem(b.ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("c"), "sk": s("1")}, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Equal(t, n("400"), got.Item["v"])
}
