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

const docTagging = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Tagging.html"

// tagger is the tag API: the engine, the SDK client and the HTTP face's
// clients all have it.
type tagger interface {
	TagResource(ctx context.Context, in *dynamodb.TagResourceInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TagResourceOutput, error)
	UntagResource(ctx context.Context, in *dynamodb.UntagResourceInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UntagResourceOutput, error)
	ListTagsOfResource(ctx context.Context, in *dynamodb.ListTagsOfResourceInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ListTagsOfResourceOutput, error)
}

func asTagger(t *testing.T, c Client) tagger {
	t.Helper()
	tg, ok := c.(tagger)
	require.True(t, ok, "the client has no tag API")
	return tg
}

func tag(k, v string) types.Tag { return types.Tag{Key: aws.String(k), Value: aws.String(v)} }

// tagCases: tags (issue 20, item 4). DynamoDB's tag messages are observed,
// not documented: the cases check the type and the documented limits, and
// the observed wording where a public record of it exists.
func tagCases() []parityCase {
	return []parityCase{
		// Tags given at CreateTable are the table's tags.
		{"TagsFromCreateTable", docTagging, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			c := nc(t)
			name := fmt.Sprintf("parity_%s_%d", runID, tableCount.Add(1))
			out, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
				AttributeDefinitions: []types.AttributeDefinition{def("pk", "S")}, KeySchema: []types.KeySchemaElement{hash("pk")},
				Tags: []types.Tag{tag("team", "ferry"), tag("env", "")}})
			require.NoError(t, err)
			t.Cleanup(func() {
				_, _ = c.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
			})
			w := dynamodb.NewTableExistsWaiter(c)
			require.NoError(t, w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Minute))
			lt, err := asTagger(t, c).ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: out.TableDescription.TableArn})
			require.NoError(t, err)
			require.ElementsMatch(t, []types.Tag{tag("team", "ferry"), tag("env", "")}, lt.Tags)
			// More than 50 tags: the table is not created.
			many := make([]types.Tag, 51)
			for i := range many {
				many[i] = tag(fmt.Sprint("k", i), "v")
			}
			bad := fmt.Sprintf("parity_%s_%d", runID, tableCount.Add(1))
			_, err = c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(bad), BillingMode: types.BillingModePayPerRequest,
				AttributeDefinitions: []types.AttributeDefinition{def("pk", "S")}, KeySchema: []types.KeySchemaElement{hash("pk")}, Tags: many})
			requireAPIError(t, err, "ValidationException", "")
			_, err = c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(bad)})
			requireAPIError(t, err, "ResourceNotFoundException", "")
		}},
		// TagResource's validation: all or nothing, a ValidationException.
		{"TagValidation", docTagging, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutHashOnly)
			tg := asTagger(t, b.client)
			d, err := b.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(b.table)})
			require.NoError(t, err)
			arn := d.Table.TableArn
			tagIt := func(tags []types.Tag) error {
				_, err := tg.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: arn, Tags: tags})
				return err
			}
			require.NoError(t, tagIt([]types.Tag{tag(repeat("k", 128), repeat("v", 256)), tag("a+b-c=d.e_f:g/h@i", "ключ 表")}))
			requireAPIError(t, tagIt([]types.Tag{tag(repeat("k", 129), "v")}), "ValidationException", "The Tag Key provided is invalid")
			requireAPIError(t, tagIt([]types.Tag{tag("k", repeat("v", 257))}), "ValidationException", "The Tag Value provided is invalid")
			requireAPIError(t, tagIt([]types.Tag{tag("", "v")}), "ValidationException", "The Tag Key provided is invalid")
			requireAPIError(t, tagIt([]types.Tag{}), "ValidationException", "Atleast one Tag needs to be provided as Input.")
			// (A tag without a Value and a request without Tags are refused by
			// the SDK before they are sent.)
			for _, x := range []string{"hi!", "d%g", `"hello"`, "a,b"} {
				requireAPIError(t, tagIt([]types.Tag{tag(x, "v")}), "ValidationException", "The Tag Key provided is invalid")
				requireAPIError(t, tagIt([]types.Tag{tag("k", x)}), "ValidationException", "The Tag Value provided is invalid")
			}
			requireAPIError(t, tagIt([]types.Tag{tag("ok", "v"), tag("aws:x", "v")}), "ValidationException", "aws:")
			// 49 more would make 51: refused, and nothing is added.
			more := make([]types.Tag, 49)
			for i := range more {
				more[i] = tag(fmt.Sprint("k", i), "v")
			}
			requireAPIError(t, tagIt(more), "ValidationException", "")
			lt, err := tg.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: arn})
			require.NoError(t, err)
			require.Len(t, lt.Tags, 2)
			_, err = tg.UntagResource(ctx, &dynamodb.UntagResourceInput{ResourceArn: arn, TagKeys: []string{}})
			requireAPIError(t, err, "ValidationException", "Atleast one Tag Key needs to be provided as Input.")
			_, err = tg.UntagResource(ctx, &dynamodb.UntagResourceInput{ResourceArn: arn, TagKeys: []string{"a+b-c=d.e_f:g/h@i", "absent"}})
			require.NoError(t, err)
			lt, err = tg.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: arn})
			require.NoError(t, err)
			require.Equal(t, []types.Tag{tag(repeat("k", 128), repeat("v", 256))}, lt.Tags)
		}},
		// ARNs: a malformed one, or an index's, is a ValidationException; a
		// well-formed table ARN of no table is ResourceNotFoundException.
		{"TagResourceARNs", docTagging, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			tg := asTagger(t, b.client)
			d, err := b.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(b.table)})
			require.NoError(t, err)
			arn := aws.ToString(d.Table.TableArn)
			tags := []types.Tag{tag("k", "v")}
			_, err = tg.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: aws.String("I_do_not_exist"), Tags: tags})
			requireAPIError(t, err, "ValidationException", "ARNs must start with 'arn:'")
			_, err = tg.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: aws.String("arn:not/a/good/format"), Tags: tags})
			requireAPIError(t, err, "ValidationException", "")
			_, err = tg.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: d.Table.GlobalSecondaryIndexes[0].IndexArn, Tags: tags})
			requireAPIError(t, err, "ValidationException", "arn")
			_, err = tg.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: d.Table.LocalSecondaryIndexes[0].IndexArn})
			requireAPIError(t, err, "ValidationException", "arn")
			_, err = tg.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: aws.String(arn + "x"), Tags: tags})
			requireAPIError(t, err, "ResourceNotFoundException", "")
		}},
	}
}
