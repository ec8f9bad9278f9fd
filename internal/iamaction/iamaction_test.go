package iamaction_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/iamaction"
)

func perm(action, table, index string) iamaction.Permission {
	return iamaction.Permission{Action: action, Resource: iamaction.Resource{Table: table, Index: index}}
}

func TestForInput(t *testing.T) {
	t.Parallel()
	tbl := aws.String("ferry")
	for _, tc := range []struct {
		name string
		in   any
		want []iamaction.Permission
	}{
		{"GetItem", &dynamodb.GetItemInput{TableName: tbl}, []iamaction.Permission{perm("dynamodb:GetItem", "ferry", "")}},
		{"QueryTable", &dynamodb.QueryInput{TableName: tbl}, []iamaction.Permission{perm("dynamodb:Query", "ferry", "")}},
		{"QueryIndex", &dynamodb.QueryInput{TableName: tbl, IndexName: aws.String("due")}, []iamaction.Permission{perm("dynamodb:Query", "ferry", "due")}},
		{"ScanIndex", &dynamodb.ScanInput{TableName: tbl, IndexName: aws.String("subject")}, []iamaction.Permission{perm("dynamodb:Scan", "ferry", "subject")}},
		{"TableARN", &dynamodb.PutItemInput{TableName: aws.String("arn:aws:dynamodb:eu-west-1:111122223333:table/ferry")},
			[]iamaction.Permission{perm("dynamodb:PutItem", "ferry", "")}},
		{"TransactWriteItemsItemByItem", &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{ConditionCheck: &types.ConditionCheck{TableName: tbl}},
			{Put: &types.Put{TableName: tbl}},
			{Update: &types.Update{TableName: tbl}},
			{Update: &types.Update{TableName: tbl}},
			{Delete: &types.Delete{TableName: aws.String("other")}},
		}}, []iamaction.Permission{
			perm("dynamodb:ConditionCheckItem", "ferry", ""), perm("dynamodb:PutItem", "ferry", ""),
			perm("dynamodb:UpdateItem", "ferry", ""), perm("dynamodb:DeleteItem", "other", ""),
		}},
		{"TransactGetItems", &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{{Get: &types.Get{TableName: tbl}}}},
			[]iamaction.Permission{perm("dynamodb:GetItem", "ferry", "")}},
		{"BatchGetItemPerTable", &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{"b": {}, "a": {}}},
			[]iamaction.Permission{perm("dynamodb:BatchGetItem", "a", ""), perm("dynamodb:BatchGetItem", "b", "")}},
		{"BatchWriteItem", &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"ferry": nil}},
			[]iamaction.Permission{perm("dynamodb:BatchWriteItem", "ferry", "")}},
		{"DescribeStream", &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String("arn:aws:dynamodb:eu-west-1:111122223333:table/ferry/stream/2026-12-01T00:00:00.000")},
			[]iamaction.Permission{{Action: "dynamodb:DescribeStream", Resource: iamaction.Resource{Table: "ferry", Stream: "2026-12-01T00:00:00.000"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := iamaction.ForInput(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			for _, p := range got {
				require.NotEqual(t, "dynamodb:TransactWriteItems", p.Action, "not an IAM action")
			}
		})
	}
	t.Run("UnknownRequest", func(t *testing.T) {
		_, err := iamaction.ForInput(&dynamodb.ExecuteStatementInput{})
		require.ErrorContains(t, err, "no mapping for *dynamodb.ExecuteStatementInput")
	})
	t.Run("TransactItemWithTwoActions", func(t *testing.T) {
		_, err := iamaction.ForInput(&dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: tbl}, Delete: &types.Delete{TableName: tbl}},
		}})
		require.ErrorContains(t, err, "TransactItems[0]")
	})
}

func TestResourceARN(t *testing.T) {
	t.Parallel()
	r := iamaction.Resource{Table: "ferry", Index: "due"}
	require.Equal(t, "index/due", r.Key())
	require.Equal(t, "arn:aws:dynamodb:eu-west-1:111122223333:table/ferry/index/due", r.ARN("aws", "eu-west-1", "111122223333"))
	require.Equal(t, "arn:aws:dynamodb:eu-west-1:111122223333:table/ferry", iamaction.Resource{Table: "ferry"}.ARN("aws", "eu-west-1", "111122223333"))
	require.Equal(t, "table", iamaction.Resource{Table: "ferry"}.Key())
}

func TestForRequest(t *testing.T) {
	t.Parallel()
	got, err := iamaction.ForRequest("TransactWriteItems", []byte(`{"TransactItems":[
		{"ConditionCheck":{"TableName":"ferry","Key":{},"ConditionExpression":"x"}},
		{"Update":{"TableName":"ferry","Key":{},"UpdateExpression":"REMOVE #t"}}],"ClientRequestToken":"t"}`))
	require.NoError(t, err)
	require.Equal(t, []iamaction.Permission{perm("dynamodb:ConditionCheckItem", "ferry", ""), perm("dynamodb:UpdateItem", "ferry", "")}, got)

	got, err = iamaction.ForRequest("Query", []byte(`{"TableName":"ferry","IndexName":"due","KeyConditionExpression":"a = :a"}`))
	require.NoError(t, err)
	require.Equal(t, []iamaction.Permission{perm("dynamodb:Query", "ferry", "due")}, got)

	got, err = iamaction.ForRequest("BatchGetItem", []byte(`{"RequestItems":{"ferry":{"Keys":[]}}}`))
	require.NoError(t, err)
	require.Equal(t, []iamaction.Permission{perm("dynamodb:BatchGetItem", "ferry", "")}, got)

	got, err = iamaction.ForRequest("GetShardIterator", []byte(`{"StreamArn":"arn:aws:dynamodb:eu-west-1:111122223333:table/ferry/stream/L","ShardId":"s"}`))
	require.NoError(t, err)
	require.Equal(t, []iamaction.Permission{{Action: "dynamodb:GetShardIterator", Resource: iamaction.Resource{Table: "ferry", Stream: "L"}}}, got)

	_, err = iamaction.ForRequest("ExecuteStatement", []byte(`{}`))
	require.ErrorContains(t, err, `no mapping for operation "ExecuteStatement"`)
	_, err = iamaction.ForRequest("PutItem", []byte(`{`))
	require.Error(t, err)
}
