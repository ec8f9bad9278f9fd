package ddblocal_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

func TestUpdateTableIndexes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, map[string]types.AttributeValue{"pk": s("a"), "sk": s("1"), "owner": s("ann")})
	b.put(t, map[string]types.AttributeValue{"pk": s("b"), "sk": s("1"), "owner": n("7")}) // wrong type: left out of the index
	b.put(t, map[string]types.AttributeValue{"pk": s("c"), "sk": s("1")})
	out, err := b.db.UpdateTable(b.ctx, &dynamodb.UpdateTableInput{
		TableName:            aws.String(tbl),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("owner"), AttributeType: types.ScalarAttributeTypeS}},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName:  aws.String("by-owner"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("owner"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}}},
	})
	require.NoError(t, err)
	require.Len(t, out.TableDescription.GlobalSecondaryIndexes, 2)
	query := func() ([]map[string]types.AttributeValue, error) {
		q, err := b.db.Query(b.ctx, &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("by-owner"),
			KeyConditionExpression: aws.String("#o = :o"), ExpressionAttributeNames: map[string]string{"#o": "owner"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":o": s("ann")}})
		if err != nil {
			return nil, err
		}
		return q.Items, nil
	}
	items, err := query()
	require.NoError(t, err)
	require.Equal(t, []map[string]types.AttributeValue{{"pk": s("a"), "sk": s("1"), "owner": s("ann")}}, items, "backfilled")
	_, err = b.db.PutItem(b.ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s("d"), "sk": s("1"), "owner": n("1")}})
	require.Error(t, err, "the new index key's type is enforced")
	b.put(t, map[string]types.AttributeValue{"pk": s("d"), "sk": s("1"), "owner": s("ann")})
	items, err = query()
	require.NoError(t, err)
	require.Len(t, items, 2)

	_, err = b.db.UpdateTable(b.ctx, &dynamodb.UpdateTableInput{TableName: aws.String(tbl),
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Delete: &types.DeleteGlobalSecondaryIndexAction{IndexName: aws.String("by-owner")}}}})
	require.NoError(t, err)
	_, err = query()
	require.Equal(t, "ValidationException", apiCode(err))
	d, err := b.db.DescribeTable(b.ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tbl)})
	require.NoError(t, err)
	require.Len(t, d.Table.GlobalSecondaryIndexes, 1)
	require.Len(t, d.Table.AttributeDefinitions, 4, "the definition only the deleted index used is gone")
}

func TestUpdateTableStreamAndTags(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.db.UpdateTable(b.ctx, &dynamodb.UpdateTableInput{TableName: aws.String(tbl), StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(false)}})
	require.NoError(t, err)
	b.put(t, key("a", "1"))
	require.Empty(t, b.db.Changes(tbl, 0))
	_, err = b.db.UpdateTable(b.ctx, &dynamodb.UpdateTableInput{TableName: aws.String(tbl), StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly}})
	require.NoError(t, err)
	b.put(t, key("b", "1"))
	ch := b.db.Changes(tbl, 0)
	require.Len(t, ch, 1)
	require.Nil(t, ch[0].NewImage, "KEYS_ONLY keeps no images")

	d, err := b.db.DescribeTable(b.ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tbl)})
	require.NoError(t, err)
	arn := d.Table.TableArn
	_, err = b.db.TagResource(b.ctx, &dynamodb.TagResourceInput{ResourceArn: arn, Tags: []types.Tag{{Key: aws.String("app"), Value: aws.String("ferry")}, {Key: aws.String("env"), Value: aws.String("dev")}}})
	require.NoError(t, err)
	_, err = b.db.UntagResource(b.ctx, &dynamodb.UntagResourceInput{ResourceArn: arn, TagKeys: []string{"env"}})
	require.NoError(t, err)
	tags, err := b.db.ListTagsOfResource(b.ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: arn})
	require.NoError(t, err)
	require.Equal(t, []types.Tag{{Key: aws.String("app"), Value: aws.String("ferry")}}, tags.Tags)
	_, err = b.db.ListTagsOfResource(b.ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String("arn:aws:dynamodb:us-east-1:000000000000:table/none")})
	require.Equal(t, "ResourceNotFoundException", apiCode(err))
}
