package paritytest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

const docNaming = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.NamingRulesDataTypes.html"

// validationCases: validation and errors (issue 20, items 7 and 8).
func validationCases() []parityCase {
	return []parityCase{
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
