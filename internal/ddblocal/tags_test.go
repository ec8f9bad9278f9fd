package ddblocal_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"
)

// The SDKs refuse these before sending; other clients (boto3 without
// parameter validation, raw HTTP) reach the engine with them.
func TestTagsMissingMembers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d, err := b.db.DescribeTable(b.ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tbl)})
	require.NoError(t, err)
	for _, c := range []struct {
		tags []types.Tag
		msg  string
	}{
		{nil, "1 validation error detected: Value null at 'tags' failed to satisfy constraint: Member must not be null"},
		{[]types.Tag{{Key: aws.String("k")}}, "The Tag Value provided is invalid, Value: null"},
		{[]types.Tag{{Value: aws.String("v")}}, "The Tag Key provided is invalid, Key: null"},
		{[]types.Tag{{Key: aws.String("k"), Value: aws.String("1")}, {Key: aws.String("k"), Value: aws.String("2")}}, "Duplicate Tag Keys provided as input: Duplicate Tag Key found k"},
	} {
		_, err := b.db.TagResource(b.ctx, &dynamodb.TagResourceInput{ResourceArn: d.Table.TableArn, Tags: c.tags})
		var ae smithy.APIError
		require.ErrorAs(t, err, &ae)
		require.Equal(t, "ValidationException", ae.ErrorCode())
		require.Equal(t, c.msg, ae.ErrorMessage())
	}
	_, err = b.db.UntagResource(b.ctx, &dynamodb.UntagResourceInput{ResourceArn: d.Table.TableArn})
	require.ErrorContains(t, err, "Value null at 'tagKeys'")
}
