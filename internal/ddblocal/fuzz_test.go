package ddblocal_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/ferryhq/ferry/internal/ddblocal"
)

// FuzzEngineExpressions drives the engine with arbitrary expressions and
// values: it must answer DynamoDB errors, never panic, and never lose the
// item's keys or an index's consistency.
func FuzzEngineExpressions(f *testing.F) {
	f.Add("SET a = :v", "attribute_exists(pk)", "pk = :v", "1")
	f.Add("REMOVE a[0], #n.b", "size(a) > :v", "pk = :v AND sk BETWEEN :v AND :v", "x")
	f.Add("ADD c :v DELETE s :v", "NOT contains(s, :v)", "begins_with(sk, :v)", "-1e3")
	f.Add("SET gpk = :v, gsk = :v", "", "gpk = :v", "2")
	f.Add("SET l = list_append(if_not_exists(l, :v), :v)", "a IN (:v, :v)", "pk = :v AND sk > :v", "")
	f.Fuzz(func(t *testing.T, update, cond, keyCond, val string) {
		ctx := context.Background()
		b := setup(t)
		b.put(t, map[string]types.AttributeValue{"pk": s("p"), "sk": s("1"), "a": &types.AttributeValueMemberL{Value: []types.AttributeValue{n("1")}},
			"s": &types.AttributeValueMemberSS{Value: []string{"x", "y"}}, "n": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"b": s("z")}}})
		values := map[string]types.AttributeValue{":v": s(val)}
		if _, err := ddblocal.New().PutItem(ctx, &dynamodb.PutItemInput{}); err == nil {
			t.Fatal("an empty PutItem succeeded")
		}
		in := &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key("p", "1"), UpdateExpression: aws.String(update),
			ExpressionAttributeNames: map[string]string{"#n": "n"}, ExpressionAttributeValues: values, ReturnValues: types.ReturnValueAllNew}
		if cond != "" {
			in.ConditionExpression = aws.String(cond)
		}
		_, err := b.db.UpdateItem(ctx, in)
		requireDynamoError(t, err)
		q, err := b.db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(tbl), KeyConditionExpression: aws.String(keyCond), ExpressionAttributeValues: values,
			FilterExpression: aws.String(cond + " OR attribute_exists(a)")})
		requireDynamoError(t, err)
		if err == nil && q.Count > q.ScannedCount {
			t.Fatalf("count %d > scanned %d", q.Count, q.ScannedCount)
		}
		got := b.get(t, "p", "1")
		if got == nil || got["pk"] == nil || got["sk"] == nil {
			t.Fatalf("item lost its keys: %v", got)
		}
		// The index holds the item exactly when it has both index keys of
		// the right types.
		_, hasP := got["gpk"].(*types.AttributeValueMemberS)
		_, hasK := got["gsk"].(*types.AttributeValueMemberN)
		if hasP {
			items := b.queryIndex(t, got["gpk"].(*types.AttributeValueMemberS).Value)
			if hasK != (len(items) == 1) {
				t.Fatalf("index out of step: item %v, index %v", got, items)
			}
		}
	})
}

func requireDynamoError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("not a DynamoDB error: %v", err)
	}
	switch ae.ErrorCode() {
	case "ValidationException", "ConditionalCheckFailedException":
	default:
		t.Fatalf("unexpected error code %s: %v", ae.ErrorCode(), err)
	}
}
