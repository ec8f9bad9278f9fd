package ddbhttp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	smithy "github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
)

// differ drives two identical engines with the same calls, one in process
// and one through the handler and an SDK client, and requires the same
// answer from both: whole outputs (items, capacity, table descriptions,
// pagination keys) and whole errors (type, message, Item, reasons).
type differ struct {
	t      *testing.T
	local  ddblocal.API
	remote ddblocal.API
	failed []string // steps that failed (alike) on both faces
}

func newDiffer(t *testing.T) *differ {
	t.Helper()
	start := time.Date(2026, 11, 29, 12, 0, 0, 250_000_000, time.UTC)
	local := ddblocal.New(ddblocal.WithClock(clock.NewManual(start)))
	remote := ddblocal.New(ddblocal.WithClock(clock.NewManual(start)))
	srv := httptest.NewServer(ddbhttp.NewHandler(remote))
	t.Cleanup(srv.Close)
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")),
		config.WithRetryMaxAttempts(1))
	require.NoError(t, err)
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.HTTPClient = srv.Client()
	})
	return &differ{t: t, local: local, remote: client}
}

// same makes the call on both faces and requires the same answer. It
// returns the in-process output (nil on error) for the next step.
func same[Out any](d *differ, step string, call func(ctx context.Context, c ddblocal.API) (*Out, error)) *Out {
	d.t.Helper()
	ctx := context.Background()
	want, wantErr := call(ctx, d.local)
	got, gotErr := call(ctx, d.remote)
	if wantErr != nil || gotErr != nil {
		requireSameError(d.t, step, wantErr, gotErr)
		var ae smithy.APIError
		errors.As(wantErr, &ae)
		d.failed = append(d.failed, step+":"+ae.ErrorCode())
		return nil
	}
	require.Equal(d.t, stripMetadata(want), stripMetadata(got), "step %s", step)
	return want
}

func requireSameError(t *testing.T, step string, want, got error) {
	t.Helper()
	require.Error(t, want, "step %s: only the HTTP face failed: %v", step, got)
	require.Error(t, got, "step %s: only the in-process face failed: %v", step, want)
	var wantAPI, gotAPI smithy.APIError
	require.ErrorAs(t, want, &wantAPI, "step %s", step)
	require.ErrorAs(t, got, &gotAPI, "step %s", step)
	require.Equal(t, wantAPI.ErrorCode(), gotAPI.ErrorCode(), "step %s", step)
	require.Equal(t, wantAPI.ErrorMessage(), gotAPI.ErrorMessage(), "step %s", step)
	if _, generic := wantAPI.(*smithy.GenericAPIError); generic {
		return
	}
	// A modeled error: the same type with the same fields.
	target := reflect.New(reflect.TypeOf(wantAPI))
	require.True(t, errors.As(got, target.Interface()), "step %s: %T over HTTP, want %T", step, gotAPI, wantAPI)
	require.Equal(t, wantAPI, target.Elem().Interface(), "step %s", step)
}

func TestHTTPMatchesInProcess(t *testing.T) {
	t.Parallel()
	d := newDiffer(t)
	const tbl = "orders"
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	k := func(pk, sk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": s(pk), "sk": s(sk)}
	}

	createTable := func(ctx context.Context, c ddblocal.API) (*dynamodb.CreateTableOutput, error) {
		return c.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName: aws.String(tbl),
			AttributeDefinitions: []types.AttributeDefinition{
				{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String("gpk"), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String("gsk"), AttributeType: types.ScalarAttributeTypeN},
				{AttributeName: aws.String("lsk"), AttributeType: types.ScalarAttributeTypeN},
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
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: []string{"state"}},
			}},
			LocalSecondaryIndexes: []types.LocalSecondaryIndex{{
				IndexName: aws.String("lsi"),
				KeySchema: []types.KeySchemaElement{
					{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
					{AttributeName: aws.String("lsk"), KeyType: types.KeyTypeRange},
				},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
			}},
			StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
			BillingMode:         types.BillingModePayPerRequest,
		})
	}
	same(d, "CreateTable", createTable)
	same(d, "CreateTableAgain", createTable)
	same(d, "DescribeTable", func(ctx context.Context, c ddblocal.API) (*dynamodb.DescribeTableOutput, error) {
		return c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tbl)})
	})
	same(d, "UpdateTimeToLive", func(ctx context.Context, c ddblocal.API) (*dynamodb.UpdateTimeToLiveOutput, error) {
		return c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(tbl),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{Enabled: aws.Bool(true), AttributeName: aws.String("ttl")}})
	})
	same(d, "DescribeTimeToLive", func(ctx context.Context, c ddblocal.API) (*dynamodb.DescribeTimeToLiveOutput, error) {
		return c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(tbl)})
	})

	rich := richItem()
	rich["pk"], rich["sk"], rich["gpk"], rich["gsk"], rich["lsk"] = s("P#1"), s("A#0"), s("due"), n("100"), n("7")
	same(d, "PutRich", func(ctx context.Context, c ddblocal.API) (*dynamodb.PutItemOutput, error) {
		return c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: rich,
			ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes, ReturnItemCollectionMetrics: types.ReturnItemCollectionMetricsSize})
	})
	same(d, "PutConditionFailsWithOldItem", func(ctx context.Context, c ddblocal.API) (*dynamodb.PutItemOutput, error) {
		return c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: k("P#1", "A#0"),
			ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	})
	same(d, "GetProjected", func(ctx context.Context, c ddblocal.API) (*dynamodb.GetItemOutput, error) {
		return c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: k("P#1", "A#0"), ConsistentRead: aws.Bool(true),
			ProjectionExpression: aws.String("m.deep.x, l[2], #b, ns"), ExpressionAttributeNames: map[string]string{"#b": "bool"},
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	})
	same(d, "UpdateAllNew", func(ctx context.Context, c ddblocal.API) (*dynamodb.UpdateItemOutput, error) {
		return c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: k("P#1", "A#0"),
			UpdateExpression:          aws.String("SET m.deep.x = m.deep.x + :one, #s = :s REMOVE l[0], gsk ADD ns :ns DELETE ss :ss"),
			ExpressionAttributeNames:  map[string]string{"#s": "state"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1"), ":s": s("CLAIMED"), ":ns": &types.AttributeValueMemberNS{Value: []string{"9"}}, ":ss": &types.AttributeValueMemberSS{Value: []string{"a"}}},
			ReturnValues:              types.ReturnValueAllNew, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
	})
	same(d, "UpdateUpdatedOld", func(ctx context.Context, c ddblocal.API) (*dynamodb.UpdateItemOutput, error) {
		return c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: k("P#1", "A#0"),
			UpdateExpression: aws.String("SET gsk = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": n("5")},
			ReturnValues: types.ReturnValueUpdatedOld})
	})
	same(d, "UpdateValidationError", func(ctx context.Context, c ddblocal.API) (*dynamodb.UpdateItemOutput, error) {
		return c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: k("P#1", "A#0"),
			UpdateExpression: aws.String("SET #x = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": n("1")}})
	})

	var writes []types.WriteRequest
	for i := range 20 {
		writes = append(writes, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
			"pk": s("P#2"), "sk": s(fmt.Sprintf("A#%02d", i)), "gpk": s("due"), "gsk": n(fmt.Sprint(i * 3)), "lsk": n(fmt.Sprint(40 - i)),
			"state": s([]string{"ADMITTED", "CLAIMED"}[i%2]), "body": s(fmt.Sprintf("%0*d", 50+i*7, i)),
		}}})
	}
	same(d, "BatchWrite", func(ctx context.Context, c ddblocal.API) (*dynamodb.BatchWriteItemOutput, error) {
		return c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{tbl: writes},
			ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
	})

	var start map[string]types.AttributeValue
	for page := 0; ; page++ {
		out := same(d, fmt.Sprintf("QueryPage%d", page), func(ctx context.Context, c ddblocal.API) (*dynamodb.QueryOutput, error) {
			return c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(tbl),
				KeyConditionExpression:    aws.String("pk = :p AND begins_with(sk, :a)"),
				FilterExpression:          aws.String("#s = :s"),
				ExpressionAttributeNames:  map[string]string{"#s": "state"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("P#2"), ":a": s("A#"), ":s": s("ADMITTED")},
				ScanIndexForward:          aws.Bool(false), Limit: aws.Int32(6), ExclusiveStartKey: start,
				ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
		})
		require.NotNil(t, out)
		if out.LastEvaluatedKey == nil {
			break
		}
		start = out.LastEvaluatedKey
		require.Less(t, page, 10)
	}
	same(d, "QueryGSICount", func(ctx context.Context, c ddblocal.API) (*dynamodb.QueryOutput, error) {
		return c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("gsi"),
			KeyConditionExpression:    aws.String("gpk = :g AND gsk BETWEEN :lo AND :hi"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("due"), ":lo": n("6"), ":hi": n("30")},
			Select:                    types.SelectCount})
	})
	same(d, "QueryGSIProjected", func(ctx context.Context, c ddblocal.API) (*dynamodb.QueryOutput, error) {
		return c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("gsi"),
			KeyConditionExpression:    aws.String("gpk = :g AND gsk > :lo"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("due"), ":lo": n("40")}})
	})
	same(d, "QueryLSI", func(ctx context.Context, c ddblocal.API) (*dynamodb.QueryOutput, error) {
		return c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("lsi"),
			KeyConditionExpression:    aws.String("pk = :p AND lsk <= :l"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("P#2"), ":l": n("25")}, Limit: aws.Int32(3)})
	})
	same(d, "QueryConsistentGSIRefused", func(ctx context.Context, c ddblocal.API) (*dynamodb.QueryOutput, error) {
		return c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("gsi"), ConsistentRead: aws.Bool(true),
			KeyConditionExpression:    aws.String("gpk = :g"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("due")}})
	})
	for seg := range int32(2) {
		same(d, fmt.Sprintf("ScanSegment%d", seg), func(ctx context.Context, c ddblocal.API) (*dynamodb.ScanOutput, error) {
			return c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tbl), Segment: aws.Int32(seg), TotalSegments: aws.Int32(2),
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		})
	}
	same(d, "BatchGet", func(ctx context.Context, c ddblocal.API) (*dynamodb.BatchGetItemOutput, error) {
		return c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{tbl: {
			Keys:                 []map[string]types.AttributeValue{k("P#2", "A#03"), k("P#2", "A#04"), k("P#9", "none")},
			ProjectionExpression: aws.String("sk, body"),
		}}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	})

	same(d, "TransactCanceled", func(ctx context.Context, c ddblocal.API) (*dynamodb.TransactWriteItemsOutput, error) {
		return c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(tbl), Item: k("P#3", "A#0")}},
			{ConditionCheck: &types.ConditionCheck{TableName: aws.String(tbl), Key: k("P#2", "A#01"),
				ConditionExpression: aws.String("#s = :s"), ExpressionAttributeNames: map[string]string{"#s": "state"},
				ExpressionAttributeValues:           map[string]types.AttributeValue{":s": s("ADMITTED")},
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
		}})
	})
	transact := func(token, state string) func(ctx context.Context, c ddblocal.API) (*dynamodb.TransactWriteItemsOutput, error) {
		return func(ctx context.Context, c ddblocal.API) (*dynamodb.TransactWriteItemsOutput, error) {
			return c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String(token),
				ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
				TransactItems: []types.TransactWriteItem{
					{Update: &types.Update{TableName: aws.String(tbl), Key: k("P#2", "A#01"), UpdateExpression: aws.String("SET #s = :s"),
						ExpressionAttributeNames: map[string]string{"#s": "state"}, ExpressionAttributeValues: map[string]types.AttributeValue{":s": s(state)}}},
					{Delete: &types.Delete{TableName: aws.String(tbl), Key: k("P#2", "A#02")}},
				}})
		}
	}
	same(d, "TransactWithToken", transact("tok-1", "DONE"))
	same(d, "TransactSameTokenAgain", transact("tok-1", "DONE"))
	same(d, "TransactTokenMismatch", transact("tok-1", "FAILED"))
	same(d, "TransactGet", func(ctx context.Context, c ddblocal.API) (*dynamodb.TransactGetItemsOutput, error) {
		return c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
			{Get: &types.Get{TableName: aws.String(tbl), Key: k("P#2", "A#01")}},
			{Get: &types.Get{TableName: aws.String(tbl), Key: k("P#2", "A#02")}},
			{Get: &types.Get{TableName: aws.String(tbl), Key: k("P#1", "A#0"), ProjectionExpression: aws.String("m")}},
		}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	})
	same(d, "DeleteAllOld", func(ctx context.Context, c ddblocal.API) (*dynamodb.DeleteItemOutput, error) {
		return c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: k("P#1", "A#0"), ReturnValues: types.ReturnValueAllOld})
	})
	same(d, "PutMissingKey", func(ctx context.Context, c ddblocal.API) (*dynamodb.PutItemOutput, error) {
		return c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s("x")}})
	})
	same(d, "GetMissingTable", func(ctx context.Context, c ddblocal.API) (*dynamodb.GetItemOutput, error) {
		return c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("nope"), Key: k("a", "b")})
	})
	same(d, "ListTables", func(ctx context.Context, c ddblocal.API) (*dynamodb.ListTablesOutput, error) {
		return c.ListTables(ctx, &dynamodb.ListTablesInput{})
	})
	same(d, "DeleteTable", func(ctx context.Context, c ddblocal.API) (*dynamodb.DeleteTableOutput, error) {
		return c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(tbl)})
	})
	same(d, "DescribeDeleted", func(ctx context.Context, c ddblocal.API) (*dynamodb.DescribeTableOutput, error) {
		return c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tbl)})
	})

	// The steps meant to fail did, and only they.
	require.Equal(t, []string{
		"CreateTableAgain:ResourceInUseException",
		"PutConditionFailsWithOldItem:ConditionalCheckFailedException",
		"UpdateValidationError:ValidationException",
		"QueryConsistentGSIRefused:ValidationException",
		"TransactCanceled:TransactionCanceledException",
		"TransactTokenMismatch:IdempotentParameterMismatchException",
		"PutMissingKey:ValidationException",
		"GetMissingTable:ResourceNotFoundException",
		"DescribeDeleted:ResourceNotFoundException",
	}, d.failed)
}
