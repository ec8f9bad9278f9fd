package ddblocal_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

func TestLocalIndexAllAttributesReadsTheTable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.db.CreateTable(b.ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String("withlsi"),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: "S"}, {AttributeName: aws.String("sk"), AttributeType: "S"},
			{AttributeName: aws.String("at"), AttributeType: "N"}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
		LocalSecondaryIndexes: []types.LocalSecondaryIndex{{IndexName: aws.String("by-at"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("at"), KeyType: types.KeyTypeRange}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}}},
	})
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		_, err := b.db.PutItem(b.ctx, &dynamodb.PutItemInput{TableName: aws.String("withlsi"), Item: map[string]types.AttributeValue{
			"pk": s("p"), "sk": s(fmt.Sprint(i)), "at": n(fmt.Sprint(10 - i)), "payload": s("x")}})
		require.NoError(t, err)
	}
	q := func(sel types.Select) *dynamodb.QueryOutput {
		out, err := b.db.Query(b.ctx, &dynamodb.QueryInput{TableName: aws.String("withlsi"), IndexName: aws.String("by-at"), Select: sel, ConsistentRead: aws.Bool(true),
			KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("p")}})
		require.NoError(t, err)
		return out
	}
	projected := q("")
	require.Equal(t, map[string]types.AttributeValue{"pk": s("p"), "sk": s("2"), "at": n("8")}, projected.Items[0])
	all := q(types.SelectAllAttributes)
	require.Equal(t, s("x"), all.Items[0]["payload"], "ALL_ATTRIBUTES on a local index reads the table item")
	require.Equal(t, []string{"8", "9", "10"}, []string{
		all.Items[0]["at"].(*types.AttributeValueMemberN).Value, all.Items[1]["at"].(*types.AttributeValueMemberN).Value, all.Items[2]["at"].(*types.AttributeValueMemberN).Value})
}

func TestScanPagesTablesAndIndexes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := 0; i < 9; i++ {
		it := key(fmt.Sprint(i%3), fmt.Sprint(i))
		if i%2 == 0 {
			it["gpk"], it["gsk"] = s("g"), n(fmt.Sprint(i))
		}
		b.put(t, it)
	}
	scanAll := func(index *string) int {
		var start map[string]types.AttributeValue
		total := 0
		for {
			out, err := b.db.Scan(b.ctx, &dynamodb.ScanInput{TableName: aws.String(tbl), IndexName: index, Limit: aws.Int32(2), ExclusiveStartKey: start})
			require.NoError(t, err)
			total += len(out.Items)
			if out.LastEvaluatedKey == nil {
				return total
			}
			start = out.LastEvaluatedKey
		}
	}
	require.Equal(t, 9, scanAll(nil))
	require.Equal(t, 5, scanAll(aws.String("gsi")), "the index is sparse")
	out, err := b.db.Scan(b.ctx, &dynamodb.ScanInput{TableName: aws.String(tbl), Select: types.SelectCount,
		FilterExpression: aws.String("attribute_exists(gpk)")})
	require.NoError(t, err)
	require.Equal(t, int32(5), out.Count)
	require.Equal(t, int32(9), out.ScannedCount)
	_, err = b.db.Scan(b.ctx, &dynamodb.ScanInput{TableName: aws.String(tbl), IndexName: aws.String("gsi"), ConsistentRead: aws.Bool(true)})
	require.Equal(t, "ValidationException", apiCode(err))
	_, err = b.db.Scan(b.ctx, &dynamodb.ScanInput{TableName: aws.String(tbl), Segment: aws.Int32(3), TotalSegments: aws.Int32(3)})
	require.Equal(t, "ValidationException", apiCode(err))
}

func TestEnablingTTLCoversExistingItems(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, map[string]types.AttributeValue{"pk": s("a"), "sk": s("1"), "exp": n(fmt.Sprint(epoch.Unix() - 1))})
	_, err := b.db.UpdateTimeToLive(b.ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(tbl), TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(true)}})
	require.NoError(t, err)
	b.clock.Advance(time.Second)
	require.Equal(t, 1, b.db.SweepTTL())
	_, err = b.db.UpdateTimeToLive(b.ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(tbl), TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(false)}})
	require.NoError(t, err)
	b.put(t, map[string]types.AttributeValue{"pk": s("b"), "sk": s("1"), "exp": n(fmt.Sprint(epoch.Unix() - 1))})
	require.Equal(t, 0, b.db.SweepTTL(), "TTL is off")
	st := b.db.Capacity(tbl)
	require.Equal(t, st.WriteUnits, st.TotalWriteUnits())
	b.db.ResetCapacity()
	require.Zero(t, b.db.Capacity(tbl).TotalReadUnits())
}
