package paritytest

import (
	"context"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// The legacy conditional parameters. Where the API reference does not give
// a message, the cases check the one DynamoDB answers as recorded by
// emulators tested against it (not checked against AWS from here); the
// error type is what the reference states.
const (
	docLegacy        = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/LegacyConditionalParameters.html"
	docLegacyCond    = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Condition.html"
	docLegacyExpect  = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_ExpectedAttributeValue.html"
	docLegacyUpdates = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_AttributeValueUpdate.html"
)

func cond(op types.ComparisonOperator, vals ...types.AttributeValue) types.Condition {
	return types.Condition{ComparisonOperator: op, AttributeValueList: vals}
}

func ss(v ...string) types.AttributeValue { return &types.AttributeValueMemberSS{Value: v} }

func sortedStrs(items []item, attr string) []string {
	out := strs(items, attr)
	sort.Strings(out)
	return out
}

// scanFilter scans b's table with a legacy filter and returns the sorted
// sk values of the items it keeps.
func (b *bundle) scanFilter(t *testing.T, filter map[string]types.Condition, op types.ConditionalOperator) []string {
	t.Helper()
	out, err := b.client.Scan(b.ctx, &dynamodb.ScanInput{TableName: aws.String(b.table), ScanFilter: filter, ConditionalOperator: op, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	return sortedStrs(out.Items, "sk")
}

func legacyCases() []parityCase {
	return []parityCase{
		// Query with KeyConditions (EQ on the hash key and each range
		// operator), QueryFilter with ConditionalOperator, AttributesToGet
		// and Select COUNT.
		{"LegacyQueryKeyConditions", docLegacy, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			for _, sk := range []string{"a1", "a2", "b1", "b2", "c1"} {
				b.put(t, item{"pk": s("p"), "sk": s(sk), "v": n(sk[1:]), "w": s("x" + sk)})
			}
			b.put(t, item{"pk": s("other"), "sk": s("a1")})
			q := func(in *dynamodb.QueryInput) []item {
				t.Helper()
				in.TableName = aws.String(b.table)
				out, err := b.client.Query(ctx, in)
				require.NoError(t, err)
				return out.Items
			}
			eq := cond(types.ComparisonOperatorEq, s("p"))
			require.Equal(t, []string{"a1", "a2", "b1", "b2", "c1"}, strs(q(&dynamodb.QueryInput{KeyConditions: map[string]types.Condition{"pk": eq}}), "sk"))
			for _, c := range []struct {
				rng  types.Condition
				want []string
			}{
				{cond(types.ComparisonOperatorEq, s("b1")), []string{"b1"}},
				{cond(types.ComparisonOperatorLt, s("b1")), []string{"a1", "a2"}},
				{cond(types.ComparisonOperatorLe, s("b1")), []string{"a1", "a2", "b1"}},
				{cond(types.ComparisonOperatorGt, s("b1")), []string{"b2", "c1"}},
				{cond(types.ComparisonOperatorGe, s("b1")), []string{"b1", "b2", "c1"}},
				{cond(types.ComparisonOperatorBeginsWith, s("b")), []string{"b1", "b2"}},
				{cond(types.ComparisonOperatorBetween, s("a2"), s("b2")), []string{"a2", "b1", "b2"}},
			} {
				got := q(&dynamodb.QueryInput{KeyConditions: map[string]types.Condition{"pk": eq, "sk": c.rng}})
				require.Equal(t, c.want, strs(got, "sk"), "%s", c.rng.ComparisonOperator)
			}
			got := q(&dynamodb.QueryInput{KeyConditions: map[string]types.Condition{"pk": eq},
				QueryFilter:         map[string]types.Condition{"v": cond(types.ComparisonOperatorEq, n("1")), "w": cond(types.ComparisonOperatorBeginsWith, s("xc"))},
				ConditionalOperator: types.ConditionalOperatorOr, AttributesToGet: []string{"sk", "v"}, ScanIndexForward: aws.Bool(false)})
			require.Equal(t, []item{{"sk": s("c1"), "v": n("1")}, {"sk": s("b1"), "v": n("1")}, {"sk": s("a1"), "v": n("1")}}, got)
			out, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), KeyConditions: map[string]types.Condition{"pk": eq},
				QueryFilter: map[string]types.Condition{"v": cond(types.ComparisonOperatorEq, n("2")), "w": cond(types.ComparisonOperatorBeginsWith, s("xa"))}, Select: types.SelectCount})
			require.NoError(t, err)
			require.EqualValues(t, 1, out.Count, "AND is the default")
			require.EqualValues(t, 5, out.ScannedCount)
			// A key condition on an index, and KeyConditions with a
			// FilterExpression (DynamoDB accepts that mix).
			b.put(t, item{"pk": s("i"), "sk": s("1"), "gpk": s("g"), "gsk": n("5"), "x": n("1")})
			b.put(t, item{"pk": s("i"), "sk": s("2"), "gpk": s("g"), "gsk": n("7"), "x": n("2")})
			eventually(t, func() bool {
				out, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(b.table), IndexName: aws.String("gsi"),
					KeyConditions:            map[string]types.Condition{"gpk": cond(types.ComparisonOperatorEq, s("g")), "gsk": cond(types.ComparisonOperatorGt, n("5"))},
					FilterExpression:         aws.String("#x = :x"),
					ExpressionAttributeNames: map[string]string{"#x": "x"}, ExpressionAttributeValues: item{":x": n("2")}})
				require.NoError(t, err)
				return len(out.Items) == 1 && strs(out.Items, "sk")[0] == "2"
			})
		}},
		// Every comparison operator of a ScanFilter, and AND / OR.
		{"LegacyScanFilterOperators", docLegacyCond, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			b.put(t, item{"pk": s("a"), "sk": s("1"), "n": n("1"), "str": s("apple"), "set": ss("red", "blue"), "l": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("x")}}})
			b.put(t, item{"pk": s("a"), "sk": s("2"), "n": n("2"), "str": s("banana"), "set": ss("green")})
			b.put(t, item{"pk": s("a"), "sk": s("3"), "n": s("3"), "str": s("cherry")})
			b.put(t, item{"pk": s("a"), "sk": s("4")})
			one := func(attr string, c types.Condition) []string {
				return b.scanFilter(t, map[string]types.Condition{attr: c}, "")
			}
			require.Equal(t, []string{"2"}, one("n", cond(types.ComparisonOperatorEq, n("2"))))
			require.Equal(t, []string{"1", "3", "4"}, one("n", cond(types.ComparisonOperatorNe, n("2"))), "NE: a missing attribute or another type is not equal")
			require.Equal(t, []string{"1", "2"}, one("n", cond(types.ComparisonOperatorLe, n("2"))), "the S \"3\" does not compare with numbers")
			require.Equal(t, []string{"1"}, one("n", cond(types.ComparisonOperatorLt, n("2"))))
			require.Equal(t, []string{"2"}, one("n", cond(types.ComparisonOperatorGe, n("2"))))
			require.Equal(t, []string{"3"}, one("n", cond(types.ComparisonOperatorGt, s("2"))))
			require.Equal(t, []string{"1", "2", "3"}, one("str", cond(types.ComparisonOperatorNotNull)))
			require.Equal(t, []string{"4"}, one("str", cond(types.ComparisonOperatorNull)))
			require.Equal(t, []string{"2"}, one("str", cond(types.ComparisonOperatorContains, s("nan"))))
			require.Equal(t, []string{"1"}, one("set", cond(types.ComparisonOperatorContains, s("red"))))
			require.Equal(t, []string{"1"}, one("l", cond(types.ComparisonOperatorContains, s("x"))), "a list member")
			// NOT_CONTAINS is false on a missing attribute, as CONTAINS is
			// (Alternator's test_update_expected_1_not_contains, recorded
			// against DynamoDB for Expected; the filters share its rules).
			require.Equal(t, []string{"2"}, one("set", cond(types.ComparisonOperatorNotContains, s("red"))))
			require.Equal(t, []string{"2", "3"}, one("str", cond(types.ComparisonOperatorNotContains, s("pp"))))
			// EQ and NE take any type: lists and maps compare whole.
			require.Equal(t, []string{"1"}, one("l", cond(types.ComparisonOperatorEq, &types.AttributeValueMemberL{Value: []types.AttributeValue{s("x")}})))
			require.Equal(t, []string{"2", "3", "4"}, one("l", cond(types.ComparisonOperatorNe, &types.AttributeValueMemberL{Value: []types.AttributeValue{s("x")}})))
			require.Equal(t, []string{"2"}, one("str", cond(types.ComparisonOperatorBeginsWith, s("ban"))))
			require.Equal(t, []string{"1", "3"}, one("str", cond(types.ComparisonOperatorIn, s("apple"), s("cherry"), s("kiwi"))))
			require.Equal(t, []string{"1", "2"}, one("str", cond(types.ComparisonOperatorBetween, s("a"), s("c"))))
			require.Equal(t, []string{"1", "2", "3", "4"}, one("set", cond(types.ComparisonOperatorNe, ss("x"))))
			require.Equal(t, []string{"2"}, one("set", cond(types.ComparisonOperatorEq, ss("green"))))
			both := map[string]types.Condition{"n": cond(types.ComparisonOperatorEq, n("1")), "str": cond(types.ComparisonOperatorEq, s("cherry"))}
			require.Empty(t, b.scanFilter(t, both, types.ConditionalOperatorAnd))
			require.Equal(t, []string{"1", "3"}, b.scanFilter(t, both, types.ConditionalOperatorOr))
			out, err := b.client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(b.table), AttributesToGet: []string{"sk", "str"}, ConsistentRead: aws.Bool(true),
				ScanFilter: map[string]types.Condition{"sk": cond(types.ComparisonOperatorEq, s("3"))}})
			require.NoError(t, err)
			require.Equal(t, []item{{"sk": s("3"), "str": s("cherry")}}, out.Items)
		}},
		// Expected: Exists false, an implicit or explicit Exists true with
		// a Value, the ComparisonOperator form, and ConditionalOperator.
		{"LegacyExpected", docLegacyExpect, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			put := func(it item, exp map[string]types.ExpectedAttributeValue, op types.ConditionalOperator) error {
				_, err := b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: it, Expected: exp, ConditionalOperator: op})
				return err
			}
			notExists := map[string]types.ExpectedAttributeValue{"pk": {Exists: aws.Bool(false)}}
			require.NoError(t, put(item{"pk": s("a"), "sk": s("1"), "v": n("1")}, notExists, ""))
			requireAPIError(t, put(item{"pk": s("a"), "sk": s("1"), "v": n("9")}, notExists, ""), "ConditionalCheckFailedException", "The conditional request failed")
			require.NoError(t, put(item{"pk": s("a"), "sk": s("1"), "v": n("2")}, map[string]types.ExpectedAttributeValue{"v": {Value: n("1")}}, ""))
			require.NoError(t, put(item{"pk": s("a"), "sk": s("1"), "v": n("3")}, map[string]types.ExpectedAttributeValue{"v": {Value: n("2"), Exists: aws.Bool(true)}}, ""))
			requireAPIError(t, put(item{"pk": s("a"), "sk": s("1"), "v": n("4")}, map[string]types.ExpectedAttributeValue{"v": {Value: n("2")}}, ""), "ConditionalCheckFailedException", "")
			require.NoError(t, put(item{"pk": s("a"), "sk": s("1"), "v": n("4")}, map[string]types.ExpectedAttributeValue{
				"v": {ComparisonOperator: types.ComparisonOperatorGt, AttributeValueList: []types.AttributeValue{n("2")}}}, ""))
			require.NoError(t, put(item{"pk": s("a"), "sk": s("1"), "v": n("5")}, map[string]types.ExpectedAttributeValue{
				"v": {ComparisonOperator: types.ComparisonOperatorLt, Value: n("2")}, "missing": {ComparisonOperator: types.ComparisonOperatorNull}}, types.ConditionalOperatorOr))
			requireAPIError(t, put(item{"pk": s("a"), "sk": s("1"), "v": n("6")}, map[string]types.ExpectedAttributeValue{
				"v": {ComparisonOperator: types.ComparisonOperatorLt, Value: n("2")}, "missing": {ComparisonOperator: types.ComparisonOperatorNull}}, types.ConditionalOperatorAnd), "ConditionalCheckFailedException", "")
			require.Equal(t, n("5"), b.get(t, key("a", "1"))["v"])
			_, err := b.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(b.table), Key: key("a", "1"),
				Expected: map[string]types.ExpectedAttributeValue{"v": {Value: n("4")}}})
			requireAPIError(t, err, "ConditionalCheckFailedException", "")
			_, err = b.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(b.table), Key: key("a", "1"),
				Expected: map[string]types.ExpectedAttributeValue{"v": {Value: n("5")}}})
			require.NoError(t, err)
			require.Nil(t, b.get(t, key("a", "1")))
		}},
		// AttributeUpdates: PUT, ADD (number, set, list), DELETE (an
		// attribute, set members), with Expected and ReturnValues.
		{"LegacyAttributeUpdates", docLegacyUpdates, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			upd := func(ups map[string]types.AttributeValueUpdate, exp map[string]types.ExpectedAttributeValue, rv types.ReturnValue) (item, error) {
				out, err := b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.table), Key: key("a", "1"),
					AttributeUpdates: ups, Expected: exp, ReturnValues: rv})
				if err != nil {
					return nil, err
				}
				return out.Attributes, nil
			}
			got, err := upd(map[string]types.AttributeValueUpdate{
				"count": {Action: types.AttributeActionAdd, Value: n("5")},
				"tags":  {Action: types.AttributeActionAdd, Value: ss("a", "b")},
				"name":  {Value: s("ann")},
			}, map[string]types.ExpectedAttributeValue{"pk": {Exists: aws.Bool(false)}}, types.ReturnValueAllNew)
			require.NoError(t, err)
			require.Equal(t, item{"pk": s("a"), "sk": s("1"), "count": n("5"), "tags": ss("a", "b"), "name": s("ann")}, got, "ADD creates the item with its number and set")
			got, err = upd(map[string]types.AttributeValueUpdate{
				"count": {Action: types.AttributeActionAdd, Value: n("-2")},
				"tags":  {Action: types.AttributeActionDelete, Value: ss("a")},
				"name":  {Action: types.AttributeActionDelete},
				"list":  {Action: types.AttributeActionAdd, Value: &types.AttributeValueMemberL{Value: []types.AttributeValue{s("x")}}},
			}, map[string]types.ExpectedAttributeValue{"count": {Value: n("5")}}, types.ReturnValueUpdatedNew)
			require.NoError(t, err)
			require.Equal(t, item{"count": n("3"), "tags": ss("b"), "list": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("x")}}}, got)
			_, err = upd(map[string]types.AttributeValueUpdate{"list": {Action: types.AttributeActionAdd, Value: &types.AttributeValueMemberL{Value: []types.AttributeValue{s("y")}}}}, nil, "")
			require.NoError(t, err)
			require.Equal(t, item{"pk": s("a"), "sk": s("1"), "count": n("3"), "tags": ss("b"),
				"list": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("x"), s("y")}}}, b.get(t, key("a", "1")), "ADD appends to a list")
			_, err = upd(map[string]types.AttributeValueUpdate{"count": {Value: n("1")}}, map[string]types.ExpectedAttributeValue{"count": {Value: n("99")}}, "")
			requireAPIError(t, err, "ConditionalCheckFailedException", "")
			_, err = upd(map[string]types.AttributeValueUpdate{"tags": {Action: types.AttributeActionAdd, Value: n("1")}}, nil, "")
			requireAPIError(t, err, "ValidationException", "Type mismatch for attribute to update")
			_, err = upd(map[string]types.AttributeValueUpdate{"sk": {Value: s("2")}}, nil, "")
			requireAPIError(t, err, "ValidationException", "Cannot update attribute sk. This attribute is part of the key")
		}},
		// GetItem and BatchGetItem with AttributesToGet.
		{"LegacyAttributesToGet", docLegacy, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			b.put(t, item{"pk": s("a"), "sk": s("1"), "x": n("1"), "y": n("2")})
			out, err := b.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(b.table), Key: key("a", "1"), AttributesToGet: []string{"y", "nothing"}, ConsistentRead: aws.Bool(true)})
			require.NoError(t, err)
			require.Equal(t, item{"y": n("2")}, out.Item)
			bg, err := b.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
				b.table: {Keys: []item{key("a", "1")}, AttributesToGet: []string{"x"}, ConsistentRead: aws.Bool(true)}}})
			require.NoError(t, err)
			require.Equal(t, []item{{"x": n("1")}}, bg.Responses[b.table])
		}},
		// What DynamoDB refuses: mixing the forms, expression names or
		// values without expressions, operand counts and types, Exists and
		// Value rules, actions and types, key conditions no index serves.
		{"LegacyValidation", docLegacy, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			tn := aws.String(b.table)
			_, err := b.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: key("a", "1"), AttributesToGet: []string{"x"}, ProjectionExpression: aws.String("x")})
			requireAPIError(t, err, "ValidationException", "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {AttributesToGet} Expression parameters: {ProjectionExpression}")
			_, err = b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: key("a", "1"), ConditionExpression: aws.String("attribute_not_exists(pk)"),
				Expected: map[string]types.ExpectedAttributeValue{"pk": {Exists: aws.Bool(false)}}})
			requireAPIError(t, err, "ValidationException", "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {Expected} Expression parameters: {ConditionExpression}")
			_, err = b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tn, Key: key("a", "1"), UpdateExpression: aws.String("SET x = :x"),
				ExpressionAttributeValues: item{":x": n("1")}, AttributeUpdates: map[string]types.AttributeValueUpdate{"y": {Value: n("1")}}})
			requireAPIError(t, err, "ValidationException", "Non-expression parameters: {AttributeUpdates} Expression parameters: {UpdateExpression}")
			_, err = b.client.Query(ctx, &dynamodb.QueryInput{TableName: tn, KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: item{":p": s("a")},
				KeyConditions: map[string]types.Condition{"pk": cond(types.ComparisonOperatorEq, s("a"))}})
			requireAPIError(t, err, "ValidationException", "Non-expression parameters: {KeyConditions} Expression parameters: {KeyConditionExpression}")
			_, err = b.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: key("a", "1"), ExpressionAttributeNames: map[string]string{"#x": "x"}})
			requireAPIError(t, err, "ValidationException", "ExpressionAttributeNames can only be specified when using expressions")
			_, err = b.client.Scan(ctx, &dynamodb.ScanInput{TableName: tn, ExpressionAttributeValues: item{":x": n("1")}, ScanFilter: map[string]types.Condition{"x": cond(types.ComparisonOperatorNotNull)}})
			requireAPIError(t, err, "ValidationException", "ExpressionAttributeValues can only be specified when using expressions: FilterExpression is null")

			scan := func(c types.Condition) error {
				_, err := b.client.Scan(ctx, &dynamodb.ScanInput{TableName: tn, ScanFilter: map[string]types.Condition{"x": c}})
				return err
			}
			requireAPIError(t, scan(cond(types.ComparisonOperatorEq)), "ValidationException", "One or more parameter values were invalid: Invalid number of argument(s) for the EQ ComparisonOperator")
			requireAPIError(t, scan(cond(types.ComparisonOperatorNull, s("x"))), "ValidationException", "Invalid number of argument(s) for the NULL ComparisonOperator")
			requireAPIError(t, scan(cond(types.ComparisonOperatorBetween, n("1"))), "ValidationException", "Invalid number of argument(s) for the BETWEEN ComparisonOperator")
			requireAPIError(t, scan(cond(types.ComparisonOperatorBetween, n("1"), s("2"))), "ValidationException", "One or more parameter values were invalid: AttributeValues inside AttributeValueList must be of same type")
			requireAPIError(t, scan(cond(types.ComparisonOperatorBetween, n("5"), n("2"))), "ValidationException", "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound")
			requireAPIError(t, scan(cond(types.ComparisonOperatorGt, ss("a"))), "ValidationException", "One or more parameter values were invalid: ComparisonOperator GT is not valid for SS AttributeValue type")
			requireAPIError(t, scan(cond(types.ComparisonOperatorBeginsWith, n("1"))), "ValidationException", "ComparisonOperator BEGINS_WITH is not valid for N AttributeValue type")
			// ConditionalOperator needs an Expected or filter of two or more
			// conditions (texts: ExtendDB's suite, run against DynamoDB;
			// Alternator's test_update_expected_empty checks the refusal).
			const noFilter = "ConditionalOperator cannot be used without Filter or Expected"
			const oneCond = "ConditionalOperator can only be used when Filter or Expected has two or more elements"
			_, err = b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tn, Key: key("a", "1"), ConditionalOperator: types.ConditionalOperatorOr,
				AttributeUpdates: map[string]types.AttributeValueUpdate{"y": {Value: n("1")}}})
			requireAPIError(t, err, "ValidationException", noFilter)
			_, err = b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: key("a", "1"), ConditionalOperator: types.ConditionalOperatorAnd,
				Expected: map[string]types.ExpectedAttributeValue{}})
			requireAPIError(t, err, "ValidationException", noFilter)
			_, err = b.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tn, Key: key("a", "1"), ConditionalOperator: types.ConditionalOperatorAnd,
				Expected: map[string]types.ExpectedAttributeValue{"pk": {Exists: aws.Bool(false)}}})
			requireAPIError(t, err, "ValidationException", oneCond)
			_, err = b.client.Scan(ctx, &dynamodb.ScanInput{TableName: tn, ConditionalOperator: types.ConditionalOperatorOr})
			requireAPIError(t, err, "ValidationException", noFilter)
			_, err = b.client.Scan(ctx, &dynamodb.ScanInput{TableName: tn, ConditionalOperator: types.ConditionalOperatorOr, ScanFilter: map[string]types.Condition{"x": cond(types.ComparisonOperatorNotNull)}})
			requireAPIError(t, err, "ValidationException", oneCond)
			_, err = b.client.Query(ctx, &dynamodb.QueryInput{TableName: tn, ConditionalOperator: types.ConditionalOperatorAnd,
				KeyConditions: map[string]types.Condition{"pk": cond(types.ComparisonOperatorEq, s("a"))}})
			requireAPIError(t, err, "ValidationException", noFilter)
			_, err = b.client.Query(ctx, &dynamodb.QueryInput{TableName: tn, ConditionalOperator: types.ConditionalOperatorAnd,
				KeyConditions: map[string]types.Condition{"pk": cond(types.ComparisonOperatorEq, s("a"))}, QueryFilter: map[string]types.Condition{"x": cond(types.ComparisonOperatorNotNull)}})
			requireAPIError(t, err, "ValidationException", oneCond)

			put := func(exp types.ExpectedAttributeValue) error {
				_, err := b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: key("a", "1"), Expected: map[string]types.ExpectedAttributeValue{"x": exp}})
				return err
			}
			requireAPIError(t, put(types.ExpectedAttributeValue{Exists: aws.Bool(false), Value: n("1")}), "ValidationException", "One or more parameter values were invalid: Value cannot be used when Exists is false for Attribute: x")
			requireAPIError(t, put(types.ExpectedAttributeValue{Exists: aws.Bool(true)}), "ValidationException", "One or more parameter values were invalid: Value must be provided when Exists is true for Attribute: x")
			requireAPIError(t, put(types.ExpectedAttributeValue{}), "ValidationException", "One or more parameter values were invalid: Value must be provided when Exists is null for Attribute: x")
			requireAPIError(t, put(types.ExpectedAttributeValue{Exists: aws.Bool(true), ComparisonOperator: types.ComparisonOperatorEq, Value: n("1")}), "ValidationException",
				"One or more parameter values were invalid: Exists and ComparisonOperator cannot be used together for Attribute: x")

			update := func(u types.AttributeValueUpdate) error {
				_, err := b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tn, Key: key("a", "1"), AttributeUpdates: map[string]types.AttributeValueUpdate{"x": u}})
				return err
			}
			requireAPIError(t, update(types.AttributeValueUpdate{Action: types.AttributeActionPut}), "ValidationException", "One or more parameter values were invalid: Only DELETE action is allowed when no attribute value is specified")
			requireAPIError(t, update(types.AttributeValueUpdate{Action: types.AttributeActionDelete, Value: s("v")}), "ValidationException", "One or more parameter values were invalid: DELETE action with value is not supported for the type S")
			requireAPIError(t, update(types.AttributeValueUpdate{Action: types.AttributeActionAdd, Value: s("v")}), "ValidationException", "One or more parameter values were invalid: ADD action is not supported for the type S")

			query := func(kc map[string]types.Condition, filter map[string]types.Condition) error {
				_, err := b.client.Query(ctx, &dynamodb.QueryInput{TableName: tn, KeyConditions: kc, QueryFilter: filter})
				return err
			}
			eq := cond(types.ComparisonOperatorEq, s("a"))
			requireAPIError(t, query(map[string]types.Condition{"pk": eq, "sk": cond(types.ComparisonOperatorNotNull)}, nil), "ValidationException", "Attempted conditional constraint is not an indexable operation")
			requireAPIError(t, query(map[string]types.Condition{"pk": cond(types.ComparisonOperatorGt, s("a"))}, nil), "ValidationException", "Query key condition not supported")
			requireAPIError(t, query(map[string]types.Condition{"pk": eq, "other": eq}, nil), "ValidationException", "Query condition missed key schema element: sk")
			requireAPIError(t, query(map[string]types.Condition{"pk": eq}, map[string]types.Condition{"sk": eq}), "ValidationException", "QueryFilter can only contain non-key attributes: Primary key attribute: sk")
		}},
	}
}
