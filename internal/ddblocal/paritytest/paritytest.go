package paritytest

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// Documentation pages the cases follow.
const (
	docDataTypes    = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.NamingRulesDataTypes.html"
	docConditions   = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ConditionExpressions.html"
	docUpdates      = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.UpdateExpressions.html"
	docUpdateItem   = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateItem.html"
	docPutItem      = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html"
	docGetItem      = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_GetItem.html"
	docQuery        = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Query.html"
	docQueryAPI     = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Query.html"
	docScan         = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Scan.html"
	docGSI          = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html"
	docLSI          = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/LSI.html"
	docProjection   = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ProjectionExpressions.html"
	docSparse       = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-indexes-general-sparse-indexes.html"
	docTransactions = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html"
	docTransactAPI  = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html"
	docBatchWrite   = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchWriteItem.html"
	docLimits       = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html"
	docExprValues   = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ExpressionAttributeValues.html"
	docTTL          = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/TTL.html"
	docCapacity     = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html"
	docDescribe     = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_DescribeTable.html"
	docErrors       = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html"
)

// parityCase is one behaviour.
type parityCase struct {
	name string
	doc  string
	run  func(ctx context.Context, t *testing.T, newClient func(t *testing.T) Client)
}

// Exercise runs every case against clients made by newClient (called once
// per case; the engine may hand out a fresh instance each time, a real
// endpoint the same client).
func Exercise(ctx context.Context, t *testing.T, newClient func(t *testing.T) Client) {
	for _, c := range allCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			t.Logf("follows %s", c.doc)
			c.run(ctx, t, newClient)
		})
	}
}

// allCases is every case: the core ones, then the groups kept in their own
// files.
func allCases() []parityCase {
	var all []parityCase
	for _, group := range [][]parityCase{cases(), updateCases(), tagCases(), tableAdminCases(), validationCases(), httpCases(), keyCases(), legacyCases(), batchCases(), billingCases()} {
		all = append(all, group...)
	}
	return all
}

func cases() []parityCase {
	return []parityCase{
		// Every data type round-trips; numbers lose leading and trailing
		// zeroes ("Leading and trailing zeroes are trimmed").
		{"DataTypesRoundTrip", docDataTypes, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutHashOnly)
			it := item{
				"pk": s("a"), "s": s("héllo"), "n": n("0012.50"), "b": &types.AttributeValueMemberB{Value: []byte{0, 1, 2}},
				"t": &types.AttributeValueMemberBOOL{Value: true}, "z": &types.AttributeValueMemberNULL{Value: true},
				"m":  &types.AttributeValueMemberM{Value: item{"x": n("1"), "y": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("q")}}}},
				"ss": &types.AttributeValueMemberSS{Value: []string{"x"}}, "ns": &types.AttributeValueMemberNS{Value: []string{"7"}},
				"bs": &types.AttributeValueMemberBS{Value: [][]byte{{9}}},
				"es": s(""),
			}
			b.put(t, it)
			got := b.get(t, item{"pk": s("a")})
			want := item{}
			for k, v := range it {
				want[k] = v
			}
			want["n"] = n("12.5")
			require.Equal(t, want, got)
		}},
		// GetItem of an absent item answers without an Item.
		{"GetMissingItem", docGetItem, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			require.Nil(t, b.get(t, key("none", "none")))
		}},
		// A failed condition is ConditionalCheckFailedException; with
		// ReturnValuesOnConditionCheckFailure=ALL_OLD it carries the item.
		{"ConditionFailureReturnsOldItem", docConditions, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			b.put(t, item{"pk": s("a"), "sk": s("1"), "v": n("1")})
			_, err := b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: key("a", "1"),
				ConditionExpression: aws.String("attribute_not_exists(pk)")})
			requireAPIError(t, err, "ConditionalCheckFailedException", "The conditional request failed")
			_, err = b.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(b.table), Key: key("a", "1"),
				ConditionExpression: aws.String("v > :v"), ExpressionAttributeValues: item{":v": n("5")},
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
			var ccf *types.ConditionalCheckFailedException
			require.ErrorAs(t, err, &ccf)
			require.Equal(t, item{"pk": s("a"), "sk": s("1"), "v": n("1")}, ccf.Item)
			require.NotNil(t, b.get(t, key("a", "1")))
		}},
		// UpdateItem's ReturnValues: ALL_OLD, ALL_NEW, UPDATED_OLD, UPDATED_NEW.
		{"UpdateReturnValues", docUpdateItem, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			b.put(t, item{"pk": s("a"), "sk": s("1"), "v": n("1"), "w": s("keep")})
			upd := func(rv types.ReturnValue) item {
				out, err := b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.table), Key: key("a", "1"),
					UpdateExpression: aws.String("SET v = v + :one"), ExpressionAttributeValues: item{":one": n("1")}, ReturnValues: rv})
				require.NoError(t, err)
				return out.Attributes
			}
			require.Equal(t, item{"pk": s("a"), "sk": s("1"), "v": n("1"), "w": s("keep")}, upd(types.ReturnValueAllOld))
			require.Equal(t, item{"pk": s("a"), "sk": s("1"), "v": n("3"), "w": s("keep")}, upd(types.ReturnValueAllNew))
			require.Equal(t, item{"v": n("3")}, upd(types.ReturnValueUpdatedOld))
			require.Equal(t, item{"v": n("5")}, upd(types.ReturnValueUpdatedNew))
			require.Nil(t, upd(types.ReturnValueNone))
			b.put(t, item{"pk": s("a"), "sk": s("2"), "m": &types.AttributeValueMemberM{Value: item{"x": n("1"), "y": n("1")}}})
			out, err := b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.table), Key: key("a", "2"),
				UpdateExpression: aws.String("SET m.x = :two"), ExpressionAttributeValues: item{":two": n("2")}, ReturnValues: types.ReturnValueUpdatedNew})
			require.NoError(t, err)
			require.Equal(t, item{"m": &types.AttributeValueMemberM{Value: item{"x": n("2")}}}, out.Attributes, "only the updated path")
		}},
		// UpdateItem creates the item when it does not exist ("Edits an
		// existing item's attributes, or adds a new item to the table if it
		// does not already exist").
		{"UpdateCreatesItem", docUpdateItem, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			_, err := b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.table), Key: key("new", "1"),
				UpdateExpression: aws.String("SET c = if_not_exists(c, :zero) + :one"), ExpressionAttributeValues: item{":zero": n("0"), ":one": n("1")}})
			require.NoError(t, err)
			require.Equal(t, item{"pk": s("new"), "sk": s("1"), "c": n("1")}, b.get(t, key("new", "1")))
		}},
		// REMOVE of top-level and nested attributes and of list elements;
		// list_append; ADD and DELETE on sets.
		{"UpdateRemoveNestedAndSets", docUpdates, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			b.put(t, item{"pk": s("a"), "sk": s("1"), "top": s("x"),
				"m":    &types.AttributeValueMemberM{Value: item{"keep": n("1"), "drop": n("2")}},
				"l":    &types.AttributeValueMemberL{Value: []types.AttributeValue{s("a"), s("b"), s("c")}},
				"tags": &types.AttributeValueMemberSS{Value: []string{"red", "blue"}}})
			_, err := b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.table), Key: key("a", "1"),
				UpdateExpression:          aws.String("REMOVE top, m.#d, l[1] SET l = list_append(l, :more) ADD tags :green, cnt :five DELETE tags :red"),
				ExpressionAttributeNames:  map[string]string{"#d": "drop"},
				ExpressionAttributeValues: item{":more": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("d")}}, ":green": &types.AttributeValueMemberSS{Value: []string{"green"}}, ":red": &types.AttributeValueMemberSS{Value: []string{"red"}}, ":five": n("5")}})
			// REMOVE l[1] and SET l together overlap on l: DynamoDB refuses
			// overlapping document paths.
			requireAPIError(t, err, "ValidationException", "Two document paths")
			_, err = b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.table), Key: key("a", "1"),
				UpdateExpression:          aws.String("REMOVE top, m.#d, l[1] ADD tags :green, cnt :five"),
				ExpressionAttributeNames:  map[string]string{"#d": "drop"},
				ExpressionAttributeValues: item{":green": &types.AttributeValueMemberSS{Value: []string{"green"}}, ":five": n("5")}})
			require.NoError(t, err)
			_, err = b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.table), Key: key("a", "1"),
				UpdateExpression:          aws.String("SET l = list_append(l, :more) DELETE tags :red"),
				ExpressionAttributeValues: item{":more": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("d")}}, ":red": &types.AttributeValueMemberSS{Value: []string{"red"}}}})
			require.NoError(t, err)
			got := b.get(t, key("a", "1"))
			require.NotContains(t, got, "top")
			require.Equal(t, &types.AttributeValueMemberM{Value: item{"keep": n("1")}}, got["m"])
			require.Equal(t, &types.AttributeValueMemberL{Value: []types.AttributeValue{s("a"), s("c"), s("d")}}, got["l"])
			tags := got["tags"].(*types.AttributeValueMemberSS).Value
			sort.Strings(tags)
			require.Equal(t, []string{"blue", "green"}, tags)
			require.Equal(t, n("5"), got["cnt"])
		}},
		// Key attributes cannot be updated.
		{"UpdateKeyRefused", docUpdateItem, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			_, err := b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.table), Key: key("a", "1"),
				UpdateExpression: aws.String("SET sk = :v"), ExpressionAttributeValues: item{":v": s("2")}})
			requireAPIError(t, err, "ValidationException", "Cannot update attribute sk. This attribute is part of the key")
		}},
		// Items must carry their key attributes, of the declared types, and
		// string key values cannot be empty.
		{"KeyValidation", docPutItem, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			_, err := b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: item{"pk": s("a")}})
			requireAPIError(t, err, "ValidationException", "Missing the key sk in the item")
			_, err = b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: item{"pk": s("a"), "sk": n("1")}})
			requireAPIError(t, err, "ValidationException", "Type mismatch for key sk expected: S actual: N")
			_, err = b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: item{"pk": s(""), "sk": s("1")}})
			requireAPIError(t, err, "ValidationException", "The AttributeValue for a key attribute cannot contain an empty string value")
			_, err = b.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(b.table), Key: item{"pk": s("a")}})
			requireAPIError(t, err, "ValidationException", "The provided key element does not match the schema")
			_, err = b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: item{"pk": s("a"), "sk": s("1"), "gsk": s("x")}})
			requireAPIError(t, err, "ValidationException", "Type mismatch for Index Key gsk Expected: N Actual: S")
		}},
		// "The maximum item size in DynamoDB is 400 KB".
		{"ItemSizeLimit", docLimits, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			_, err := b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: item{"pk": s("a"), "sk": s("1"), "big": s(repeat("x", 400*1024))}})
			requireAPIError(t, err, "ValidationException", "Item size has exceeded the maximum allowed size")
			b.put(t, item{"pk": s("a"), "sk": s("1"), "big": s(repeat("x", 390*1024))})
		}},
		// A missing table is ResourceNotFoundException.
		{"UnknownTable", docErrors, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			c := nc(t)
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("parity_missing_" + runID), Key: key("a", "1")})
			requireAPIError(t, err, "ResourceNotFoundException", "Requested resource not found")
		}},
		// Number sort keys order numerically; ScanIndexForward=false reverses.
		{"QueryNumberOrder", docQuery, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutNumbers)
			for _, v := range []string{"10", "-3.5", "2", "0", "-20", "2.25", "100"} {
				b.put(t, item{"pk": s("p"), "sk": n(v)})
			}
			out, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: item{":p": s("p")}})
			require.NoError(t, err)
			require.Equal(t, []string{"-20", "-3.5", "0", "2", "2.25", "10", "100"}, strs(out.Items, "sk"))
			out, err = b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), KeyConditionExpression: aws.String("pk = :p AND sk >= :z"),
				ExpressionAttributeValues: item{":p": s("p"), ":z": n("0")}, ScanIndexForward: aws.Bool(false)})
			require.NoError(t, err)
			require.Equal(t, []string{"100", "10", "2.25", "2", "0"}, strs(out.Items, "sk"))
		}},
		// String sort keys order by UTF-8 bytes.
		{"QueryStringByteOrder", docQuery, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			for _, v := range []string{"é", "a", "Z", "aa", "a0", "~"} {
				b.put(t, item{"pk": s("p"), "sk": s(v)})
			}
			out, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: item{":p": s("p")}})
			require.NoError(t, err)
			require.Equal(t, []string{"Z", "a", "a0", "aa", "~", "é"}, strs(out.Items, "sk"))
		}},
		// Limit and ExclusiveStartKey/LastEvaluatedKey page through a result
		// without gaps or repeats.
		{"QueryPaging", docQuery, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			for i := 0; i < 23; i++ {
				b.put(t, item{"pk": s("p"), "sk": s(fmt.Sprintf("%02d", i))})
			}
			var got []string
			var start item
			for pages := 0; pages < 10; pages++ {
				out, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), KeyConditionExpression: aws.String("pk = :p"),
					ExpressionAttributeValues: item{":p": s("p")}, Limit: aws.Int32(5), ExclusiveStartKey: start})
				require.NoError(t, err)
				got = append(got, strs(out.Items, "sk")...)
				if out.LastEvaluatedKey == nil {
					break
				}
				start = out.LastEvaluatedKey
			}
			require.Len(t, got, 23)
			require.True(t, sort.StringsAreSorted(got))
		}},
		// "A filter expression is applied after a Query finishes, but before
		// the results are returned": Limit counts items read (ScannedCount),
		// Count the ones that passed.
		{"QueryFilterAfterLimit", docQuery, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			for i := 0; i < 10; i++ {
				b.put(t, item{"pk": s("p"), "sk": s(fmt.Sprintf("%02d", i)), "even": &types.AttributeValueMemberBOOL{Value: i%2 == 0}})
			}
			out, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), KeyConditionExpression: aws.String("pk = :p"),
				FilterExpression: aws.String("even = :t"), ExpressionAttributeValues: item{":p": s("p"), ":t": &types.AttributeValueMemberBOOL{Value: true}}, Limit: aws.Int32(5)})
			require.NoError(t, err)
			require.Equal(t, int32(5), out.ScannedCount)
			require.Equal(t, int32(3), out.Count)
			require.Equal(t, []string{"00", "02", "04"}, strs(out.Items, "sk"))
			require.NotNil(t, out.LastEvaluatedKey)
		}},
		// "A filter expression cannot contain partition key or sort key
		// attributes. You need to specify those attributes in the key
		// condition expression, not the filter expression."
		{"QueryFilterOnKeyRefused", docQuery, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			b.put(t, item{"pk": s("p"), "sk": s("a1"), "v": n("1")})
			_, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), KeyConditionExpression: aws.String("pk = :p"),
				FilterExpression: aws.String("begins_with(#s, :a) AND v > :z"), ExpressionAttributeNames: map[string]string{"#s": "sk"},
				ExpressionAttributeValues: item{":p": s("p"), ":a": s("a"), ":z": n("0")}})
			requireAPIError(t, err, "ValidationException", "Filter Expression can only contain non-primary key attributes: Primary key attribute: sk")
			out, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), KeyConditionExpression: aws.String("pk = :p AND begins_with(sk, :a)"),
				FilterExpression: aws.String("v > :z AND m.sk = :a"), ExpressionAttributeValues: item{":p": s("p"), ":a": s("a"), ":z": n("0")}})
			require.NoError(t, err, "a nested attribute named like a key is not a key")
			require.Equal(t, int32(0), out.Count)
			sc, err := b.client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(b.table), FilterExpression: aws.String("begins_with(sk, :a)"), ExpressionAttributeValues: item{":a": s("a")}})
			require.NoError(t, err, "Scan may filter on keys")
			require.Equal(t, int32(1), sc.Count)
		}},
		// begins_with and BETWEEN on the sort key; Select COUNT.
		{"QueryKeyConditions", docQueryAPI, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			for _, v := range []string{"A#1", "A#2", "AB", "B#1", "B#2", "C"} {
				b.put(t, item{"pk": s("p"), "sk": s(v)})
			}
			q := func(cond string, vals item) []string {
				vals[":p"] = s("p")
				out, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), KeyConditionExpression: aws.String(cond), ExpressionAttributeValues: vals})
				require.NoError(t, err)
				return strs(out.Items, "sk")
			}
			require.Equal(t, []string{"A#1", "A#2"}, q("pk = :p AND begins_with(sk, :a)", item{":a": s("A#")}))
			require.Equal(t, []string{"A#2", "AB", "B#1"}, q("pk = :p AND sk BETWEEN :a AND :b", item{":a": s("A#2"), ":b": s("B#1")}))
			require.Equal(t, []string{"A#1", "A#2", "AB"}, q("pk = :p AND sk < :a", item{":a": s("B")}))
			require.Equal(t, []string{"C"}, q("pk = :p AND sk > :a", item{":a": s("B#2")}))
			out, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), KeyConditionExpression: aws.String("pk = :p"),
				ExpressionAttributeValues: item{":p": s("p")}, Select: types.SelectCount})
			require.NoError(t, err)
			require.Equal(t, int32(6), out.Count)
			require.Empty(t, out.Items)
		}},
		// "Strongly consistent reads are not supported on global secondary
		// indexes"; Limit must be at least 1.
		{"QueryRefusals", docGSI, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			_, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), IndexName: aws.String("gsi"), ConsistentRead: aws.Bool(true),
				KeyConditionExpression: aws.String("gpk = :p"), ExpressionAttributeValues: item{":p": s("g")}})
			requireAPIError(t, err, "ValidationException", "Consistent reads are not supported on global secondary indexes")
			_, err = b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), Limit: aws.Int32(0),
				KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: item{":p": s("g")}})
			requireAPIError(t, err, "ValidationException", "limit")
		}},
		// Sparse indexes: "only items that have the index's key attributes
		// appear in the index" — including when UpdateItem adds or removes
		// them.
		{"SparseIndexFollowsUpdates", docSparse, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			b.put(t, item{"pk": s("a"), "sk": s("1"), "payload": s("x")})
			b.put(t, item{"pk": s("b"), "sk": s("1"), "gpk": s("g"), "gsk": n("2")})
			index := func() []string {
				out, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), IndexName: aws.String("gsi"),
					KeyConditionExpression: aws.String("gpk = :p"), ExpressionAttributeValues: item{":p": s("g")}})
				require.NoError(t, err)
				return strs(out.Items, "pk")
			}
			eventually(t, func() bool { return fmt.Sprint(index()) == "[b]" })
			_, err := b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.table), Key: key("a", "1"),
				UpdateExpression: aws.String("SET gpk = :p, gsk = :k"), ExpressionAttributeValues: item{":p": s("g"), ":k": n("1")}})
			require.NoError(t, err)
			eventually(t, func() bool { return fmt.Sprint(index()) == "[a b]" })
			_, err = b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.table), Key: key("b", "1"), UpdateExpression: aws.String("REMOVE gsk")})
			require.NoError(t, err)
			eventually(t, func() bool { return fmt.Sprint(index()) == "[a]" })
			out, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), IndexName: aws.String("gsi"),
				KeyConditionExpression: aws.String("gpk = :p"), ExpressionAttributeValues: item{":p": s("g")}})
			require.NoError(t, err)
			require.Equal(t, s("x"), out.Items[0]["payload"], "ALL projection keeps every attribute")
		}},
		// A KEYS_ONLY index returns the table and index keys only.
		{"KeysOnlyProjection", docGSI, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			b.put(t, item{"pk": s("a"), "sk": s("1"), "kpk": s("k"), "payload": s("x")})
			eventually(t, func() bool {
				out, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), IndexName: aws.String("keys"),
					KeyConditionExpression: aws.String("kpk = :k"), ExpressionAttributeValues: item{":k": s("k")}})
				require.NoError(t, err)
				return len(out.Items) == 1 && reflect.DeepEqual(out.Items[0], item{"pk": s("a"), "sk": s("1"), "kpk": s("k")})
			})
		}},
		// Transactions are all or nothing; CancellationReasons follow the
		// request order; ALL_OLD returns the item that failed its condition.
		{"TransactAllOrNothing", docTransactAPI, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			b.put(t, item{"pk": s("a"), "sk": s("1"), "v": n("1")})
			_, err := b.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Put: &types.Put{TableName: aws.String(b.table), Item: key("new", "1")}},
				{ConditionCheck: &types.ConditionCheck{TableName: aws.String(b.table), Key: key("a", "1"), ConditionExpression: aws.String("v = :two"),
					ExpressionAttributeValues: item{":two": n("2")}, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
				{Delete: &types.Delete{TableName: aws.String(b.table), Key: key("a", "1")}},
			}})
			// The Delete names the same item as the ConditionCheck.
			requireAPIError(t, err, "ValidationException", "Transaction request cannot include multiple operations on one item")
			_, err = b.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Put: &types.Put{TableName: aws.String(b.table), Item: key("new", "1")}},
				{ConditionCheck: &types.ConditionCheck{TableName: aws.String(b.table), Key: key("a", "1"), ConditionExpression: aws.String("v = :two"),
					ExpressionAttributeValues: item{":two": n("2")}, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
				{Update: &types.Update{TableName: aws.String(b.table), Key: key("b", "1"), UpdateExpression: aws.String("SET v = :one"), ExpressionAttributeValues: item{":one": n("1")}}},
			}})
			var tce *types.TransactionCanceledException
			require.ErrorAs(t, err, &tce)
			require.Len(t, tce.CancellationReasons, 3)
			codes := []string{aws.ToString(tce.CancellationReasons[0].Code), aws.ToString(tce.CancellationReasons[1].Code), aws.ToString(tce.CancellationReasons[2].Code)}
			require.Equal(t, []string{"None", "ConditionalCheckFailed", "None"}, codes)
			require.Equal(t, item{"pk": s("a"), "sk": s("1"), "v": n("1")}, tce.CancellationReasons[1].Item)
			require.Contains(t, aws.ToString(tce.Message), "[None, ConditionalCheckFailed, None]")
			require.Nil(t, b.get(t, key("new", "1")))
			require.Nil(t, b.get(t, key("b", "1")))
		}},
		// "TransactWriteItems is a synchronous write operation that groups up
		// to 100 action requests".
		{"TransactActionLimit", docTransactAPI, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			var items []types.TransactWriteItem
			for i := 0; i < 101; i++ {
				items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(b.table), Item: key("p", fmt.Sprint(i))}})
			}
			_, err := b.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
			requireAPIError(t, err, "ValidationException", "100")
			_, err = b.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items[:100]})
			require.NoError(t, err)
		}},
		// ClientRequestToken: a repeated call succeeds without applying
		// again; the same token with other parameters is
		// IdempotentParameterMismatchException.
		{"TransactIdempotency", docTransactions, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			b.put(t, item{"pk": s("c"), "sk": s("1"), "v": n("0")})
			token := "parity-" + runID + "-" + fmt.Sprint(tableCount.Add(1))
			tx := func(by string) error {
				_, err := b.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String(token), TransactItems: []types.TransactWriteItem{
					{Update: &types.Update{TableName: aws.String(b.table), Key: key("c", "1"), UpdateExpression: aws.String("ADD v :by"), ExpressionAttributeValues: item{":by": n(by)}}},
				}})
				return err
			}
			require.NoError(t, tx("1"))
			require.NoError(t, tx("1"))
			require.Equal(t, n("1"), b.get(t, key("c", "1"))["v"])
			requireAPIError(t, tx("2"), "IdempotentParameterMismatchException", "")
		}},
		// TransactGetItems reads items atomically, in request order.
		{"TransactGet", docTransactions, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			b.put(t, item{"pk": s("a"), "sk": s("1"), "v": n("1")})
			out, err := b.client.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
				{Get: &types.Get{TableName: aws.String(b.table), Key: key("missing", "1")}},
				{Get: &types.Get{TableName: aws.String(b.table), Key: key("a", "1"), ProjectionExpression: aws.String("v")}},
			}})
			require.NoError(t, err)
			require.Len(t, out.Responses, 2)
			require.Nil(t, out.Responses[0].Item)
			require.Equal(t, item{"v": n("1")}, out.Responses[1].Item)
		}},
		// BatchWriteItem puts and deletes; duplicate keys in one batch are
		// refused.
		{"BatchWriteAndGet", docBatchWrite, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			b.put(t, item{"pk": s("old"), "sk": s("1")})
			var reqs []types.WriteRequest
			for i := 0; i < 24; i++ {
				reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: key("p", fmt.Sprint(i))}})
			}
			reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key("old", "1")}})
			out, err := b.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{b.table: reqs}})
			require.NoError(t, err)
			require.Empty(t, out.UnprocessedItems)
			require.Nil(t, b.get(t, key("old", "1")))
			g, err := b.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{b.table: {Keys: []item{key("p", "3"), key("p", "7"), key("nope", "1")}}}})
			require.NoError(t, err)
			require.Len(t, g.Responses[b.table], 2)
			dup := []types.WriteRequest{{PutRequest: &types.PutRequest{Item: key("d", "1")}}, {DeleteRequest: &types.DeleteRequest{Key: key("d", "1")}}}
			_, err = b.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{b.table: dup}})
			requireAPIError(t, err, "ValidationException", "Provided list of item keys contains duplicates")
		}},
		// A parallel scan's segments partition the table.
		{"ScanSegments", docScan, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutHashOnly)
			for i := 0; i < 40; i++ {
				b.put(t, item{"pk": s(fmt.Sprint(i))})
			}
			seen := map[string]int{}
			for seg := int32(0); seg < 3; seg++ {
				out, err := b.client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(b.table), Segment: aws.Int32(seg), TotalSegments: aws.Int32(3), ConsistentRead: aws.Bool(true)})
				require.NoError(t, err)
				require.Nil(t, out.LastEvaluatedKey)
				for _, v := range strs(out.Items, "pk") {
					seen[v]++
				}
			}
			require.Len(t, seen, 40)
			for _, c := range seen {
				require.Equal(t, 1, c)
			}
		}},
		// Unused ExpressionAttributeValues are refused.
		{"UnusedExpressionValues", docExprValues, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			_, err := b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: key("a", "1"),
				ConditionExpression: aws.String("attribute_not_exists(pk)"), ExpressionAttributeValues: item{":unused": s("x")}})
			requireAPIError(t, err, "ValidationException", "Value provided in ExpressionAttributeValues unused in expressions: keys: {:unused}")
		}},
		// DescribeTable reports an ACTIVE table with its keys, indexes and
		// billing mode; ListTables lists it; DeleteTable removes it.
		{"DescribeListDelete", docDescribe, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			d, err := b.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(b.table)})
			require.NoError(t, err)
			require.Equal(t, types.TableStatusActive, d.Table.TableStatus)
			require.Equal(t, types.BillingModePayPerRequest, d.Table.BillingModeSummary.BillingMode)
			require.Len(t, d.Table.GlobalSecondaryIndexes, 2)
			require.Len(t, d.Table.LocalSecondaryIndexes, 1)
			require.Contains(t, aws.ToString(d.Table.TableArn), ":table/"+b.table)
			found := false
			var start *string
			for {
				lt, err := b.client.ListTables(ctx, &dynamodb.ListTablesInput{ExclusiveStartTableName: start})
				require.NoError(t, err)
				for _, name := range lt.TableNames {
					found = found || name == b.table
				}
				if lt.LastEvaluatedTableName == nil {
					break
				}
				start = lt.LastEvaluatedTableName
			}
			require.True(t, found)
		}},
		// UpdateTimeToLive enables TTL on an attribute; DescribeTimeToLive
		// reports it.
		{"TimeToLiveSetting", docTTL, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			d, err := b.client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(b.table)})
			require.NoError(t, err)
			require.Equal(t, types.TimeToLiveStatusDisabled, d.TimeToLiveDescription.TimeToLiveStatus)
			_, err = b.client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(b.table),
				TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)}})
			require.NoError(t, err)
			d, err = b.client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(b.table)})
			require.NoError(t, err)
			require.Contains(t, []types.TimeToLiveStatus{types.TimeToLiveStatusEnabled, types.TimeToLiveStatusEnabling}, d.TimeToLiveDescription.TimeToLiveStatus)
			require.Equal(t, "ttl", aws.ToString(d.TimeToLiveDescription.AttributeName))
		}},
		// "One write request unit represents one write for an item up to 1
		// KB"; an eventually consistent read of up to 4 KB costs half a unit.
		{"ConsumedCapacity", docCapacity, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutHashOnly)
			out, err := b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: item{"pk": s("a"), "x": s(repeat("y", 1500))},
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
			require.NoError(t, err)
			require.Equal(t, 2.0, aws.ToFloat64(out.ConsumedCapacity.CapacityUnits))
			g, err := b.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(b.table), Key: item{"pk": s("a")}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
			require.NoError(t, err)
			require.Equal(t, 0.5, aws.ToFloat64(g.ConsumedCapacity.CapacityUnits))
			g, err = b.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(b.table), Key: item{"pk": s("a")}, ConsistentRead: aws.Bool(true), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
			require.NoError(t, err)
			require.Equal(t, 1.0, aws.ToFloat64(g.ConsumedCapacity.CapacityUnits))
		}},
		// Index queries page by the index key and then the table key:
		// items with equal index keys are all returned, once each.
		{"IndexPagingWithEqualIndexKeys", docGSI, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			for i := 0; i < 7; i++ {
				b.put(t, item{"pk": s(fmt.Sprintf("p%d", i%3)), "sk": s(fmt.Sprint(i)), "gpk": s("g"), "gsk": n("1")})
			}
			eventually(t, func() bool {
				seen := map[string]bool{}
				var start item
				for pages := 0; pages < 20; pages++ {
					out, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), IndexName: aws.String("gsi"), Limit: aws.Int32(2), ExclusiveStartKey: start,
						KeyConditionExpression: aws.String("gpk = :p AND gsk = :k"), ExpressionAttributeValues: item{":p": s("g"), ":k": n("1")}})
					require.NoError(t, err)
					for _, it := range out.Items {
						k := fmt.Sprint(strs([]item{it}, "pk"), strs([]item{it}, "sk"))
						require.False(t, seen[k], "returned twice: %s", k)
						seen[k] = true
					}
					if out.LastEvaluatedKey == nil {
						break
					}
					require.Contains(t, out.LastEvaluatedKey, "gsk", "an index's LastEvaluatedKey names the index and table keys")
					require.Contains(t, out.LastEvaluatedKey, "pk")
					start = out.LastEvaluatedKey
				}
				return len(seen) == 7
			})
		}},
		// A local secondary index orders a partition by another sort key and
		// reads strongly consistently.
		{"LocalIndexOrder", docLSI, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			for i, l := range []string{"30", "10", "20"} {
				b.put(t, item{"pk": s("p"), "sk": s(fmt.Sprint(i)), "lsk": n(l)})
			}
			b.put(t, item{"pk": s("p"), "sk": s("no-lsk")})
			out, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), IndexName: aws.String("lsi"), ConsistentRead: aws.Bool(true),
				KeyConditionExpression: aws.String("pk = :p AND lsk > :z"), ExpressionAttributeValues: item{":p": s("p"), ":z": n("0")}})
			require.NoError(t, err)
			require.Equal(t, []string{"10", "20", "30"}, strs(out.Items, "lsk"))
			require.Equal(t, []string{"1", "2", "0"}, strs(out.Items, "sk"))
		}},
		// "A single Query operation can retrieve a maximum of 1 MB of data":
		// a page stops there and names where to go on.
		{"QueryPageLimit1MB", docQuery, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			for i := 0; i < 14; i++ {
				b.put(t, item{"pk": s("p"), "sk": s(fmt.Sprintf("%02d", i)), "pad": s(repeat("x", 100*1024))})
			}
			out, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), KeyConditionExpression: aws.String("pk = :p"),
				ExpressionAttributeValues: item{":p": s("p")}, ProjectionExpression: aws.String("sk")})
			require.NoError(t, err)
			require.NotNil(t, out.LastEvaluatedKey)
			require.Less(t, len(out.Items), 14)
			require.GreaterOrEqual(t, len(out.Items), 9)
			rest, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), KeyConditionExpression: aws.String("pk = :p"),
				ExpressionAttributeValues: item{":p": s("p")}, ProjectionExpression: aws.String("sk"), ExclusiveStartKey: out.LastEvaluatedKey})
			require.NoError(t, err)
			require.Equal(t, 14, len(out.Items)+len(rest.Items))
		}},
		// Numbers keep up to 38 significant digits exactly; more are refused.
		{"NumberPrecision", docDataTypes, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutHashOnly)
			b.put(t, item{"pk": s("a"), "n": n("12345678901234567890123456789012345678")})
			_, err := b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.table), Key: item{"pk": s("a")},
				UpdateExpression: aws.String("SET n = n - :one"), ExpressionAttributeValues: item{":one": n("1")}})
			require.NoError(t, err)
			require.Equal(t, n("12345678901234567890123456789012345677"), b.get(t, item{"pk": s("a")})["n"])
			_, err = b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: item{"pk": s("b"), "n": n("123456789012345678901234567890123456789")}})
			requireAPIError(t, err, "ValidationException", "38")
		}},
		// ProjectionExpression picks nested attributes and list elements.
		{"NestedProjection", docProjection, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutHashOnly)
			b.put(t, item{"pk": s("a"), "m": &types.AttributeValueMemberM{Value: item{"x": n("1"), "y": n("2")}},
				"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("l0"), s("l1")}}, "other": s("o")})
			out, err := b.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(b.table), Key: item{"pk": s("a")}, ProjectionExpression: aws.String("m.y, l[1]")})
			require.NoError(t, err)
			require.Equal(t, item{"m": &types.AttributeValueMemberM{Value: item{"y": n("2")}}, "l": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("l1")}}}, out.Item)
		}},
		// A condition on an absent item sees every attribute as missing.
		{"ConditionOnAbsentItem", docConditions, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			_, err := b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.table), Key: key("none", "1"),
				UpdateExpression: aws.String("SET v = :one"), ConditionExpression: aws.String("attribute_exists(pk)"), ExpressionAttributeValues: item{":one": n("1")},
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
			var ccf *types.ConditionalCheckFailedException
			require.ErrorAs(t, err, &ccf)
			require.Nil(t, ccf.Item)
			require.Nil(t, b.get(t, key("none", "1")), "a failed update creates nothing")
			_, err = b.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{ConditionCheck: &types.ConditionCheck{TableName: aws.String(b.table), Key: key("none", "1"), ConditionExpression: aws.String("attribute_not_exists(pk)")}},
				{Put: &types.Put{TableName: aws.String(b.table), Item: key("new", "1")}},
			}})
			require.NoError(t, err)
			require.NotNil(t, b.get(t, key("new", "1")))
		}},
		// Comparison functions of condition expressions.
		{"ConditionFunctions", docConditions, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			b.put(t, item{"pk": s("a"), "sk": s("1"), "name": s("ferry"), "tags": &types.AttributeValueMemberSS{Value: []string{"x", "y"}}, "n": n("7")})
			check := func(cond string, vals item) bool {
				_, err := b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.table), Key: key("a", "1"),
					UpdateExpression: aws.String("SET touched = :t"), ConditionExpression: aws.String(cond), ExpressionAttributeValues: mergeItems(item{":t": n("1")}, vals),
					ExpressionAttributeNames: map[string]string{"#n": "name"}})
				if err == nil {
					return true
				}
				var ccf *types.ConditionalCheckFailedException
				require.ErrorAs(t, err, &ccf)
				return false
			}
			require.True(t, check("size(#n) = :five AND attribute_exists(#n)", item{":five": n("5")}))
			require.True(t, check("contains(tags, :x) AND attribute_type(n, :ntype) AND attribute_exists(#n)", item{":x": s("x"), ":ntype": s("N")}))
			require.False(t, check("n IN (:a, :b) AND attribute_exists(#n)", item{":a": n("1"), ":b": n("2")}))
			require.True(t, check("(n BETWEEN :a AND :b) AND NOT begins_with(#n, :z)", item{":a": n("5"), ":b": n("10"), ":z": s("z")}))
		}},
	}
}

func mergeItems(a, b item) item {
	out := item{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
