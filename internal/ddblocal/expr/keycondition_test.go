package expr

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

func TestParseKeyCondition(t *testing.T) {
	t.Parallel()
	values := item{":h": s("h"), ":a": n("1"), ":b": n("2"), ":p": s("pre")}
	names := map[string]string{"#pk": "pk", "#sk": "sk"}
	cases := []struct {
		expr string
		want KeyCondition
	}{
		{"pk = :h", KeyCondition{HashName: "pk", HashValue: s("h")}},
		{"#pk = :h", KeyCondition{HashName: "pk", HashValue: s("h")}},
		{"pk = :h AND sk = :a", KeyCondition{HashName: "pk", HashValue: s("h"), RangeName: "sk", RangeOp: "=", RangeValues: []types.AttributeValue{n("1")}}},
		{"pk = :h AND sk < :a", KeyCondition{HashName: "pk", HashValue: s("h"), RangeName: "sk", RangeOp: "<", RangeValues: []types.AttributeValue{n("1")}}},
		{"pk = :h AND sk <= :a", KeyCondition{HashName: "pk", HashValue: s("h"), RangeName: "sk", RangeOp: "<=", RangeValues: []types.AttributeValue{n("1")}}},
		{"sk > :a AND pk = :h", KeyCondition{HashName: "pk", HashValue: s("h"), RangeName: "sk", RangeOp: ">", RangeValues: []types.AttributeValue{n("1")}}},
		{"pk = :h AND sk >= :a", KeyCondition{HashName: "pk", HashValue: s("h"), RangeName: "sk", RangeOp: ">=", RangeValues: []types.AttributeValue{n("1")}}},
		{"pk = :h AND #sk BETWEEN :a AND :b", KeyCondition{HashName: "pk", HashValue: s("h"), RangeName: "sk", RangeOp: "BETWEEN", RangeValues: []types.AttributeValue{n("1"), n("2")}}},
		{"(pk = :h) AND (begins_with(sk, :p))", KeyCondition{HashName: "pk", HashValue: s("h"), RangeName: "sk", RangeOp: "begins_with", RangeValues: []types.AttributeValue{s("pre")}}},
		{":a <= sk AND :h = pk", KeyCondition{HashName: "pk", HashValue: s("h"), RangeName: "sk", RangeOp: ">=", RangeValues: []types.AttributeValue{n("1")}}},
		{":a >= sk AND :h = pk", KeyCondition{HashName: "pk", HashValue: s("h"), RangeName: "sk", RangeOp: "<=", RangeValues: []types.AttributeValue{n("1")}}},
		{":a < sk AND :h = pk", KeyCondition{HashName: "pk", HashValue: s("h"), RangeName: "sk", RangeOp: ">", RangeValues: []types.AttributeValue{n("1")}}},
		{":a > sk AND :h = pk", KeyCondition{HashName: "pk", HashValue: s("h"), RangeName: "sk", RangeOp: "<", RangeValues: []types.AttributeValue{n("1")}}},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			t.Parallel()
			u := NewUsage(names, values)
			got, err := ParseKeyCondition(tc.expr, u)
			require.NoError(t, err)
			require.Equal(t, tc.want.HashName, got.HashName)
			require.True(t, Equal(tc.want.HashValue, got.HashValue))
			require.Equal(t, tc.want.RangeName, got.RangeName)
			require.Equal(t, tc.want.RangeOp, got.RangeOp)
			require.Len(t, got.RangeValues, len(tc.want.RangeValues))
			for i := range got.RangeValues {
				require.True(t, Equal(tc.want.RangeValues[i], got.RangeValues[i]))
			}
		})
	}
}

func TestParseKeyConditionErrors(t *testing.T) {
	t.Parallel()
	values := item{":h": s("h"), ":a": n("1"), ":b": n("2")}
	cases := []struct {
		expr string
		want string
	}{
		{"pk = :h OR sk = :a", "Invalid operator used in KeyConditionExpression: OR"},
		{"NOT pk = :h", "Invalid operator used in KeyConditionExpression: NOT"},
		{"pk IN (:h)", "Invalid operator used in KeyConditionExpression: IN"},
		{"pk <> :h", "Invalid operator used in KeyConditionExpression: <>"},
		{"pk = :h AND contains(sk, :a)", "Invalid operator used in KeyConditionExpression: contains"},
		{"pk = :h AND pk = :a", "KeyConditionExpressions must only contain one condition per key"},
		{"pk.x = :h", "KeyConditionExpressions cannot have conditions on nested attributes"},
		{"pk = sk", "Invalid condition in KeyConditionExpression: Multiple attribute names used in one condition"},
		{"pk < :h", "Query key condition not supported"},
		{"pk = :h AND begins_with(sk, :a)", "Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N"},
		{"pk = :h AND sk BETWEEN :b AND :a", "Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: {N:2}, upper bound operand: AttributeValue: {N:1}"},
		{"pk = :h AND sk BETWEEN :a AND :h", "Invalid KeyConditionExpression: The BETWEEN operator requires same data type for lower and upper bounds; lower bound operand: AttributeValue: {N:1}, upper bound operand: AttributeValue: {S:h}"},
		{"pk = :zz", "Invalid KeyConditionExpression: An expression attribute value used in expression is not defined; attribute value: :zz"},
		{"pk = ", `Invalid KeyConditionExpression: Syntax error; token: "<EOF>", near: "= "`},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			t.Parallel()
			_, err := ParseKeyCondition(tc.expr, NewUsage(nil, values))
			require.EqualError(t, err, tc.want)
		})
	}
}

func TestKeyConditionForSchema(t *testing.T) {
	t.Parallel()
	values := item{":h": s("h"), ":a": n("1")}
	kc, err := ParseKeyCondition("sk = :a AND pk = :h", NewUsage(nil, values))
	require.NoError(t, err)
	got, err := kc.ForSchema("pk", "sk")
	require.NoError(t, err)
	require.Equal(t, "pk", got.HashName)
	require.True(t, Equal(s("h"), got.HashValue))
	require.Equal(t, "sk", got.RangeName)
	require.Equal(t, "=", got.RangeOp)
	require.True(t, Equal(n("1"), got.RangeValues[0]))

	_, err = kc.ForSchema("other", "sk")
	require.EqualError(t, err, "Query key condition not supported")
	kc2, err := ParseKeyCondition("pk = :h AND x > :a", NewUsage(nil, values))
	require.NoError(t, err)
	_, err = kc2.ForSchema("pk", "sk")
	require.EqualError(t, err, "Query condition missed key schema element: sk")
	_, err = kc2.ForSchema("zz", "")
	require.EqualError(t, err, "Query condition missed key schema element: zz")
}

// More than two conditions parse (an index with multi-attribute keys takes
// up to eight) but a one- or two-attribute key schema refuses them.
func TestKeyConditionMoreThanTwo(t *testing.T) {
	t.Parallel()
	values := item{":h": s("h"), ":a": n("1"), ":b": n("2")}
	kc, err := ParseKeyCondition("pk = :h AND sk = :a AND x = :b", NewUsage(nil, values))
	require.NoError(t, err)
	_, err = kc.ForSchema("pk", "sk")
	require.EqualError(t, err, "Conditions can be of length 1 or 2 only")
	m, err := kc.ForMultiKey([]string{"pk", "x"}, []string{"sk"})
	require.NoError(t, err)
	require.Equal(t, []types.AttributeValue{s("h"), n("2")}, m.HashValues)
	require.Equal(t, "=", m.LastOp)
	_, err = kc.ForMultiKey([]string{"pk"}, []string{"sk", "y", "x"})
	require.ErrorContains(t, err, "RANGE key attributes need equality conditions")
}
