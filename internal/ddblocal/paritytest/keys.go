package paritytest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

const docMultiKeys = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.DesignPattern.MultiAttributeKeys.html"

// keyCases: index key schemas and key limits (issue 20, items 3 and 5).
func keyCases() []parityCase {
	return []parityCase{
		// Multi-attribute keys: a global secondary index key of up to four
		// HASH and four RANGE attributes (HASH ones first). A query gives
		// every HASH attribute an equality and RANGE attributes left to
		// right, an inequality only on the last one given; items order by
		// the RANGE attributes in turn; an item missing any key attribute
		// is not in the index. (DynamoDB's messages for the refusals are
		// not documented: the case checks their type.)
		{"MultiAttributeIndexKeys", docMultiKeys, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			c := nc(t)
			name := fmt.Sprintf("parity_%s_%d", runID, tableCount.Add(1))
			gsi := []types.KeySchemaElement{hash("tenant"), hash("site"), rng("dt"), rng("seq")}
			_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
				AttributeDefinitions: []types.AttributeDefinition{def("pk", "S"), def("tenant", "S"), def("site", "S"), def("dt", "S"), def("seq", "N")},
				KeySchema:            []types.KeySchemaElement{hash("pk")},
				GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("multi"), KeySchema: gsi,
					Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}}}})
			require.NoError(t, err)
			t.Cleanup(func() {
				_, _ = c.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
			})
			require.NoError(t, dynamodb.NewTableExistsWaiter(c).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Minute))
			d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
			require.NoError(t, err)
			require.Equal(t, gsi, d.Table.GlobalSecondaryIndexes[0].KeySchema)
			b := &bundle{ctx: ctx, client: c, table: name}
			for i, r := range []struct{ day, seq string }{{"d2", "1"}, {"d1", "10"}, {"d1", "9"}, {"d1", "2"}, {"d3", "1"}} {
				b.put(t, item{"pk": s(fmt.Sprint("p", i)), "tenant": s("t"), "site": s("eu"), "dt": s(r.day), "seq": n(r.seq), "other": s("x")})
			}
			b.put(t, item{"pk": s("nodays"), "tenant": s("t"), "site": s("eu"), "seq": n("1")}) // sparse: not in the index
			b.put(t, item{"pk": s("us"), "tenant": s("t"), "site": s("us"), "dt": s("d1"), "seq": n("1")})
			q := func(cond string, vals item, limit int32, start item) (*dynamodb.QueryOutput, error) {
				in := &dynamodb.QueryInput{TableName: aws.String(name), IndexName: aws.String("multi"), KeyConditionExpression: aws.String(cond),
					ExpressionAttributeValues: vals, ExclusiveStartKey: start}
				if limit > 0 {
					in.Limit = aws.Int32(limit)
				}
				return c.Query(ctx, in)
			}
			eu := item{":t": s("t"), ":r": s("eu")}
			eventually(t, func() bool {
				out, err := q("tenant = :t AND site = :r", eu, 0, nil)
				require.NoError(t, err)
				return fmt.Sprint(strs(out.Items, "pk")) == "[p3 p2 p1 p0 p4]"
			})
			out, err := q("site = :r AND dt = :d AND tenant = :t AND seq > :s", mergeItems(eu, item{":d": s("d1"), ":s": n("2")}), 0, nil)
			require.NoError(t, err)
			require.Equal(t, []string{"p2", "p1"}, strs(out.Items, "pk"))
			require.Equal(t, item{"pk": s("p2"), "tenant": s("t"), "site": s("eu"), "dt": s("d1"), "seq": n("9")}, out.Items[0], "KEYS_ONLY keeps every key attribute")
			out, err = q("tenant = :t AND site = :r AND dt BETWEEN :a AND :b", mergeItems(eu, item{":a": s("d1"), ":b": s("d2")}), 0, nil)
			require.NoError(t, err)
			require.Equal(t, []string{"p3", "p2", "p1", "p0"}, strs(out.Items, "pk"))
			// Paging: LastEvaluatedKey names every key attribute.
			var got []string
			var start item
			for pages := 0; pages < 10; pages++ {
				out, err := q("tenant = :t AND site = :r", eu, 2, start)
				require.NoError(t, err)
				got = append(got, strs(out.Items, "pk")...)
				if out.LastEvaluatedKey == nil {
					break
				}
				require.Len(t, out.LastEvaluatedKey, 5)
				start = out.LastEvaluatedKey
			}
			require.Equal(t, []string{"p3", "p2", "p1", "p0", "p4"}, got)
			_, err = q("tenant = :t", item{":t": s("t")}, 0, nil)
			requireAPIError(t, err, "ValidationException", "")
			_, err = q("tenant = :t AND site = :r AND seq = :s", mergeItems(eu, item{":s": n("1")}), 0, nil)
			requireAPIError(t, err, "ValidationException", "")
			_, err = q("tenant = :t AND site = :r AND dt > :d AND seq = :s", mergeItems(eu, item{":d": s("d1"), ":s": n("1")}), 0, nil)
			requireAPIError(t, err, "ValidationException", "")
			_, err = c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(name), IndexName: aws.String("multi"), KeyConditionExpression: aws.String("tenant = :t AND site = :r"),
				FilterExpression: aws.String("seq > :s"), ExpressionAttributeValues: mergeItems(eu, item{":s": n("1")})})
			requireAPIError(t, err, "ValidationException", "Filter Expression can only contain non-primary key attributes")
			// Five HASH attributes are refused.
			bad := fmt.Sprintf("parity_%s_%d", runID, tableCount.Add(1))
			_, err = c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(bad), BillingMode: types.BillingModePayPerRequest,
				AttributeDefinitions: []types.AttributeDefinition{def("pk", "S"), def("a", "S"), def("b", "S"), def("c", "S"), def("d", "S"), def("e", "S")},
				KeySchema:            []types.KeySchemaElement{hash("pk")},
				GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("five"), KeySchema: []types.KeySchemaElement{hash("a"), hash("b"), hash("c"), hash("d"), hash("e")},
					Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}})
			requireAPIError(t, err, "ValidationException", "")
		}},
		// "The maximum length of ... a partition key value is 2048 bytes;
		// ... a sort key value is 1024 bytes", in tables and indexes alike,
		// on reads and writes (DynamoDB's messages, "of2048" included).
		{"KeyValueSizeLimits", docLimits, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			b.put(t, item{"pk": s(repeat("p", 2048)), "sk": s(repeat("s", 1024)), "gpk": s(repeat("g", 2048)), "gsk": n("1")})
			_, err := b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: item{"pk": s(repeat("p", 2049)), "sk": s("1")}})
			requireAPIError(t, err, "ValidationException", "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes")
			_, err = b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: item{"pk": s("p"), "sk": s(repeat("s", 1025))}})
			requireAPIError(t, err, "ValidationException", "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes")
			_, err = b.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(b.table), Key: key("p", repeat("s", 1025))})
			requireAPIError(t, err, "ValidationException", "1024")
			_, err = b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: item{"pk": s("p"), "sk": s("1"), "gpk": s(repeat("g", 2049))}})
			requireAPIError(t, err, "ValidationException", "2048")
			_, err = b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: item{"pk": s("p"), "sk": s("1"), "kpk": &types.AttributeValueMemberS{Value: repeat("k", 2049)}}})
			requireAPIError(t, err, "ValidationException", "2048")
			require.Nil(t, b.get(t, key("p", "1")), "a refused write writes nothing")
		}},
		// Key attribute names are at most 255 characters (the API's
		// KeySchemaAttributeName), in tables and indexes.
		{"KeyAttributeNameLength", docLimits, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			c := nc(t)
			for _, l := range []int{256} {
				long := repeat("k", l)
				name := fmt.Sprintf("parity_%s_%d", runID, tableCount.Add(1))
				_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
					AttributeDefinitions: []types.AttributeDefinition{def(long, "S")}, KeySchema: []types.KeySchemaElement{hash(long)}})
				requireAPIError(t, err, "ValidationException", "Member must have length less than or equal to 255")
				_, err = c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
					AttributeDefinitions: []types.AttributeDefinition{def("pk", "S"), def(long, "S")}, KeySchema: []types.KeySchemaElement{hash("pk")},
					GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("gsi"), KeySchema: []types.KeySchemaElement{hash(long)},
						Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}})
				requireAPIError(t, err, "ValidationException", "Member must have length less than or equal to 255")
			}
		}},
		// A new index built over existing items leaves out an item whose
		// index key is over the size limit (the table keeps it: it was
		// written before the index existed); github.com/scylladb/scylladb
		// test_gsi_backfill_oversized_key, checked against DynamoDB.
		{"IndexBackfillSkipsOversizedKeys", docGSI, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutHashOnly)
			b.put(t, item{"pk": s("ok"), "x": s("hello")})
			b.put(t, item{"pk": s("big"), "x": s(repeat("a", 2049))})
			_, err := asAdmin(t, b.client).UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(b.table),
				AttributeDefinitions: []types.AttributeDefinition{def("x", "S")},
				GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
					IndexName: aws.String("byx"), KeySchema: []types.KeySchemaElement{hash("x")}, Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}}})
			require.NoError(t, err)
			eventually(t, func() bool {
				out, err := b.client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(b.table), IndexName: aws.String("byx")})
				if err != nil {
					return false // the index may still be CREATING
				}
				return len(out.Items) == 1 && fmt.Sprint(strs(out.Items, "pk")) == "[ok]"
			})
			require.NotNil(t, b.get(t, item{"pk": s("big")}))
		}},
	}
}
