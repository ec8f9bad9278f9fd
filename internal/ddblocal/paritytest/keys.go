package paritytest

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// keyCases: index key schemas and key limits (issue 20, items 3 and 5).
func keyCases() []parityCase {
	return []parityCase{
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
