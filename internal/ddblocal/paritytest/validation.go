package paritytest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

const docNaming = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.NamingRulesDataTypes.html"

// validationCases: validation and errors (issue 20, items 7 and 8).
func validationCases() []parityCase {
	return []parityCase{
		// Numbers out of DynamoDB's range are refused as such ("Number
		// overflow. ..."), in values and keys alike, not as unconvertible.
		{"NumberRangeMessages", docDataTypes, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutNumbers)
			_, err := b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.table), Key: item{"pk": s("a"), "sk": n("1")},
				UpdateExpression: aws.String("SET x = :a + :b"), ExpressionAttributeValues: item{":a": n("1.0"), ":b": n("1.0e100000000")}})
			requireAPIError(t, err, "ValidationException", "Number overflow. Attempting to store a number with magnitude larger than supported range")
			_, err = b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.table), Key: item{"pk": s("a"), "sk": n("1e126")},
				UpdateExpression: aws.String("SET x = :a"), ExpressionAttributeValues: item{":a": n("1")}})
			requireAPIError(t, err, "ValidationException", "Number overflow. Attempting to store a number with magnitude larger than supported range")
			_, err = b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: item{"pk": s("a"), "sk": n("1.23456789012345678901234567890123456789")}})
			requireAPIError(t, err, "ValidationException", "Attempting to store more than 38 significant digits in a Number")
		}},
		// Disabling TTL names the attribute it is on; the specification's
		// members are each required (DynamoDB's text for the first is not
		// documented: it says the name is a different one).
		{"TimeToLiveErrors", docTTL, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutHashOnly)
			ttl := func(attr string, on bool) error {
				_, err := b.client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(b.table),
					TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(on)}})
				return err
			}
			requireAPIError(t, ttl("expiration", false), "ValidationException", "TimeToLive is already disabled")
			requireAPIError(t, ttl(repeat("x", 256), true), "ValidationException", "Member must have length less than or equal to 255")
			require.NoError(t, ttl("expiration", true))
			requireAPIError(t, ttl("dog", false), "ValidationException", "different")
			requireAPIError(t, ttl("expiration", true), "ValidationException", "TimeToLive is already enabled")
		}},
		// A parallel Scan's ExclusiveStartKey must belong to its segment.
		{"ParallelScanStartKeySegment", docScan, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutHashOnly)
			_, err := b.client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(b.table), TotalSegments: aws.Int32(1000000), Segment: aws.Int32(0),
				ExclusiveStartKey: item{"pk": s("0")}})
			requireAPIError(t, err, "ValidationException", "The provided Exclusive start key does not map to the provided Segment and TotalSegments values")
		}},
		// A document path has at most 32 levels ("Invalid
		// ProjectionExpression: The document path has too many nesting
		// levels; nesting levels: 33", quoted from DynamoDB by
		// github.com/scylladb/scylladb test_projection_expression.py).
		{"PathNestingLimit", docProjection, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutHashOnly)
			_, err := b.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(b.table), Key: item{"pk": s("a")}, ProjectionExpression: aws.String("a" + repeat(".b", 31))})
			require.NoError(t, err)
			_, err = b.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(b.table), Key: item{"pk": s("a")}, ProjectionExpression: aws.String("a" + repeat(".b", 32))})
			requireAPIError(t, err, "ValidationException", "Invalid ProjectionExpression: The document path has too many nesting levels; nesting levels: 33")
		}},
		// A key condition without the partition key misses it (DynamoDB
		// names it: github.com/scylladb/scylladb
		// test_key_condition_expression_no_partition, checked against
		// DynamoDB).
		{"KeyConditionWithoutPartitionKey", docQueryAPI, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			_, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), KeyConditionExpression: aws.String("sk = :s"),
				ExpressionAttributeValues: item{":s": s("1")}})
			requireAPIError(t, err, "ValidationException", "Query condition missed key schema element: pk")
		}},
		// An improperly named table is a ValidationException on the
		// tableName member (checked before DynamoDB looks for the table),
		// not a missing table.
		{"ImproperTableName", docNaming, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			c := nc(t)
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("a$b"), Key: key("a", "1")})
			requireAPIError(t, err, "ValidationException", "1 validation error detected: Value 'a$b' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+")
			_, err = c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("ab")})
			requireAPIError(t, err, "ValidationException", "Member must have length greater than or equal to 3")
			_, err = c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(repeat("x", 256))})
			requireAPIError(t, err, "ValidationException", "Member must have length less than or equal to 255")
			_, err = c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("parity_missing_" + runID), Key: key("a", "1")})
			requireAPIError(t, err, "ResourceNotFoundException", "Requested resource not found")
		}},
		// A name token of an expression starts with a letter: "_a" and "1a"
		// are syntax errors on their first character (DynamoDB answers
		// `Syntax error; token: "_", near: "SET _a"`, github.com/scylladb/
		// scylladb test_update_expression_name_token, checked against
		// DynamoDB); a #name may go on with any letter, digit or underscore.
		{"ExpressionNameTokens", docUpdates, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutHashOnly)
			upd := func(e string, names map[string]string) error {
				_, err := b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.table), Key: item{"pk": s("a")},
					UpdateExpression: aws.String(e), ExpressionAttributeNames: names, ExpressionAttributeValues: item{":v": n("1")}})
				return err
			}
			requireAPIError(t, upd("SET _a = :v", nil), "ValidationException", `Invalid UpdateExpression: Syntax error; token: "_", near: "SET _a"`)
			requireAPIError(t, upd("SET 1a = :v", nil), "ValidationException", `Invalid UpdateExpression: Syntax error; token: "1"`)
			requireAPIError(t, upd("SET a-b = :v", nil), "ValidationException", "Syntax error")
			if err := upd("SET A1_b = :v, #_1 = :v", map[string]string{"#_1": "3 any name!"}); err != nil {
				t.Fatal(err)
			}
			got := b.get(t, item{"pk": s("a")})
			if got["A1_b"] == nil || got["3 any name!"] == nil {
				t.Fatalf("names not set: %v", got)
			}
		}},
	}
}
