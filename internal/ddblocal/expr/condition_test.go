package expr

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// conditionItem is the item most condition cases are evaluated against.
func conditionItem() item {
	return item{
		"pk":      s("p1"),
		"str":     s("hello world"),
		"num":     n("10"),
		"frac":    n("0.30"),
		"bin":     b("\x01\x02\x03"),
		"flag":    bl(true),
		"nothing": null(),
		"tags":    ss("red", "green"),
		"nums":    ns("1", "2.5"),
		"blobs":   bs("a", "b"),
		"lst":     l(s("x"), n("2"), m(item{"deep": s("y")})),
		"mp":      m(item{"in2": m(item{"leaf": n("7")}), "name": s("n")}),
		"Status":  s("active"),
		"emoji":   s("é𝄞"),
	}
}

func TestConditionEval(t *testing.T) {
	t.Parallel()
	values := item{
		":p": s("p1"), ":hello": s("hello"), ":world": s("world"), ":10": n("10"), ":10x": n("10.000"),
		":5": n("5"), ":20": n("20"), ":3": n("3"), ":red": s("red"), ":blue": s("blue"),
		":one": n("1.0"), ":x": s("x"), ":two": n("2"), ":S": s("S"), ":N": n("3"), ":SS": s("SS"),
		":L": s("L"), ":M": s("M"), ":NULL": s("NULL"), ":BOOL": s("BOOL"), ":B": s("B"), ":NS": s("NS"),
		":BS": s("BS"), ":b12": b("\x01\x02"), ":b2": b("\x02"), ":true": bl(true), ":a": s("a"),
		":zero": n("0"), ":03": n("0.3"), ":y": s("y"), ":lst": l(s("x"), n("2"), m(item{"deep": s("y")})),
		":tags": ss("green", "red"), ":n7": n("7"), ":ab": b("a"), ":11": n("11"),
	}
	names := map[string]string{"#s": "Status", "#m": "mp", "#dot": "a.b"}
	cases := []struct {
		expr string
		want bool
	}{
		{"pk = :p", true},
		{"pk <> :p", false},
		{"num = :10x", true},
		{"frac = :03", true},
		{"num < :20", true},
		{"num <= :10", true},
		{"num > :5", true},
		{"num >= :11", false},
		{"str > :hello", true},
		{"bin > :b12", true},
		{"bin < :b2", true},
		{"num BETWEEN :5 AND :20", true},
		{"num BETWEEN :10 AND :10", true},
		{"num BETWEEN :11 AND :20", false},
		{"num IN (:5, :10x)", true},
		{"num IN (:5, :20)", false},
		{"absent = :5", false},
		{"absent <> :5", true},
		{"absent < :5", false},
		{"str < :5", false},
		{"str = :5", false},
		{"str <> :5", true},
		{"lst = :lst", true},
		{"tags = :tags", true},
		{"lst[0] = :x", true},
		{"lst[2].deep = :y", true},
		{"lst[9] = :x", false},
		{"#m.in2.leaf = :n7", true},
		{"mp.in2.leaf = :n7", true},
		{"#s = :p", false},
		{"attribute_exists(pk)", true},
		{"attribute_exists(absent)", false},
		{"attribute_not_exists(absent)", true},
		{"attribute_not_exists(mp.in2.leaf)", false},
		{"attribute_exists(#dot)", false},
		{"attribute_type(str, :S)", true},
		{"attribute_type(num, :S)", false},
		{"attribute_type(tags, :SS)", true},
		{"attribute_type(lst, :L)", true},
		{"attribute_type(mp, :M)", true},
		{"attribute_type(nothing, :NULL)", true},
		{"attribute_type(flag, :BOOL)", true},
		{"attribute_type(bin, :B)", true},
		{"attribute_type(nums, :NS)", true},
		{"attribute_type(blobs, :BS)", true},
		{"attribute_type(absent, :S)", false},
		{"begins_with(str, :hello)", true},
		{"begins_with(str, :world)", false},
		{"begins_with(bin, :b12)", true},
		{"begins_with(num, :hello)", false},
		{"contains(str, :world)", true},
		{"contains(str, :blue)", false},
		{"contains(tags, :red)", true},
		{"contains(tags, :blue)", false},
		{"contains(nums, :one)", true},
		{"contains(blobs, :ab)", true},
		{"contains(lst, :x)", true},
		{"contains(lst, :two)", true},
		{"contains(lst, :y)", false},
		{"contains(num, :one)", false},
		{"size(str) = :11", true},
		{"size(emoji) = :3", true},
		{"size(bin) = :3", true},
		{"size(tags) = :two", true},
		{"size(lst) = :3", true},
		{"size(mp) = :two", true},
		{"size(num) = :two", false},
		{"size(absent) < :5", false},
		{":5 < size(str)", true},
		{"size(str) BETWEEN :10 AND :11", true},
		{"size(str) IN (:11)", true},
		{"NOT pk = :p", false},
		{"NOT NOT pk = :p", true},
		{"pk = :p AND num = :10", true},
		{"pk = :p AND num = :5", false},
		{"pk = :a OR num = :10", true},
		{"pk = :a OR num = :5", false},
		// NOT binds tighter than AND, AND tighter than OR.
		{"pk = :a AND num = :5 OR num = :10", true},
		{"pk = :a AND (num = :5 OR num = :10)", false},
		{"pk = :p OR num = :5 AND num = :20", true},
		{"(pk = :p OR num = :5) AND num = :20", false},
		{"NOT pk = :a AND num = :10", true},
		{"NOT (pk = :p AND num = :5)", true},
		{"((pk = :p))", true},
		{"pk = :p and num = :10 or absent = :5", true},
		{"flag = :true", true},
		{"attribute_exists(nothing)", true},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			t.Parallel()
			u := NewUsage(names, values)
			c, err := ParseCondition(tc.expr, u)
			require.NoError(t, err)
			got, err := c.Eval(conditionItem())
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestConditionNilItem(t *testing.T) {
	t.Parallel()
	u := NewUsage(nil, item{":v": s("x")})
	c, err := ParseCondition("attribute_not_exists(pk) AND NOT contains(a, :v)", u)
	require.NoError(t, err)
	got, err := c.Eval(nil)
	require.NoError(t, err)
	require.True(t, got)
}

func TestConditionErrors(t *testing.T) {
	t.Parallel()
	values := item{":v": s("x"), ":n": n("1"), ":n2": n("2"), ":bad": s("Q")}
	names := map[string]string{"#n": "name"}
	cases := []struct {
		expr string
		want string
	}{
		{"", "Invalid ConditionExpression: The expression can not be empty;"},
		{"a = ", `Invalid ConditionExpression: Syntax error; token: "<EOF>", near: "= "`},
		{"a == :v", `Invalid ConditionExpression: Syntax error; token: "=", near: "== :v"`},
		{"a = 1", `Invalid ConditionExpression: Syntax error; token: "1", near: "= 1"`},
		{"a = :v b", `Invalid ConditionExpression: Syntax error; token: "b", near: ":v b"`},
		{"a ! :v", `Invalid ConditionExpression: Syntax error; token: "!", near: "a ! :v"`},
		{"status = :v", "Invalid ConditionExpression: Attribute name is a reserved keyword; reserved keyword: status"},
		{"a.Size = :v", "Invalid ConditionExpression: Attribute name is a reserved keyword; reserved keyword: Size"},
		{"#x = :v", "Invalid ConditionExpression: An expression attribute name used in the document path is not defined; attribute name: #x"},
		{"a = :w", "Invalid ConditionExpression: An expression attribute value used in expression is not defined; attribute value: :w"},
		{"a = a", "Invalid ConditionExpression: The first operand must be distinct from the remaining operands for this operator or function; operator: =, first operand: [a]"},
		{"a BETWEEN :n2 AND :n", "Invalid ConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: {N:2}, upper bound operand: AttributeValue: {N:1}"},
		{"a BETWEEN :n AND :v", "Invalid ConditionExpression: The BETWEEN operator requires same data type for lower and upper bounds; lower bound operand: AttributeValue: {N:1}, upper bound operand: AttributeValue: {S:x}"},
		{"attribute_type(a, :bad)", "Invalid ConditionExpression: Invalid attribute type name found; type: Q, valid types: { B,NULL,SS,BOOL,L,BS,N,NS,S,M }"},
		{"begins_with(a, :n)", "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N"},
		{"BEGINS_WITH(a, :v)", "Invalid ConditionExpression: Invalid function name; function: BEGINS_WITH"},
		{"attribute_exists(a, :v)", "Invalid ConditionExpression: Incorrect number of operands for operator or function; operator or function: attribute_exists, number of operands: 2"},
		{"attribute_exists(:v)", "Invalid ConditionExpression: Operator or function requires a document path; operator or function: attribute_exists"},
		{"size(a)", "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; function: size"},
		{"if_not_exists(a, :v)", "Invalid ConditionExpression: The function is not allowed in a condition expression; function: if_not_exists"},
		{"a = attribute_exists(b)", "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; function: attribute_exists"},
		{"a = foo(b)", "Invalid ConditionExpression: Invalid function name; function: foo"},
		{"foo(b)", "Invalid ConditionExpression: Invalid function name; function: foo"},
		{"a = if_not_exists(b)", "Invalid ConditionExpression: The function is not allowed in a condition expression; function: if_not_exists"},
		{"size(:v) = :n", "Invalid ConditionExpression: Operator or function requires a document path; operator or function: size"},
		{"contains(a, size(b))", "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; function: size"},
		{"attribute_type(a, b)", "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: attribute_type, operand type: path"},
		{"attribute_type(a, :n)", "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: attribute_type, operand type: N"},
		{"a[x] = :v", `Invalid ConditionExpression: Syntax error; token: "x", near: "[x]"`},
		{"(a = :v", `Invalid ConditionExpression: Syntax error; token: "<EOF>", near: ":v"`},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			t.Parallel()
			_, err := ParseCondition(tc.expr, NewUsage(names, values))
			require.Error(t, err)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tc.want, e.Message)
		})
	}
}

func TestFilterErrorsNameTheFilter(t *testing.T) {
	t.Parallel()
	_, err := ParseFilter("status = :v", NewUsage(nil, item{":v": s("x")}))
	require.EqualError(t, err, "Invalid FilterExpression: Attribute name is a reserved keyword; reserved keyword: status")
}

func TestConditionInLimit(t *testing.T) {
	t.Parallel()
	values := item{}
	expr := "a IN ("
	for i := 0; i < 101; i++ {
		k := ":v" + string(rune('a'+i/26)) + string(rune('a'+i%26))
		values[k] = n("1")
		if i > 0 {
			expr += ","
		}
		expr += k
	}
	expr += ")"
	_, err := ParseCondition(expr, NewUsage(nil, values))
	require.EqualError(t, err, "Invalid ConditionExpression: The IN operator is provided with too many operands; number of operands: 101")
}

func TestUsage(t *testing.T) {
	t.Parallel()
	u := NewUsage(map[string]string{"#a": "a", "#b": "b", "#c": "c"}, map[string]types.AttributeValue{":v": s("1"), ":w": s("2")})
	_, err := ParseCondition("#a = :v", u)
	require.NoError(t, err)
	require.EqualError(t, u.CheckAllUsed(), "Value provided in ExpressionAttributeNames unused in expressions: keys: {#b, #c}")
	_, err = ParseProjection("#b, #c", u)
	require.NoError(t, err)
	require.EqualError(t, u.CheckAllUsed(), "Value provided in ExpressionAttributeValues unused in expressions: keys: {:w}")
	_, err = ParseUpdate("SET x = :w", u)
	require.NoError(t, err)
	require.NoError(t, u.CheckAllUsed())
	require.NoError(t, NewUsage(nil, nil).CheckAllUsed())
}

func TestUsageValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		names  map[string]string
		values map[string]types.AttributeValue
		want   string
	}{
		{"Valid", map[string]string{"#a": "a", "#_1": "b"}, map[string]types.AttributeValue{":v": s("x"), ":V_2": n("1")}, ""},
		{"Nil", nil, nil, ""},
		{"EmptyNames", map[string]string{}, nil, "ExpressionAttributeNames must not be empty"},
		{"EmptyValues", nil, map[string]types.AttributeValue{}, "ExpressionAttributeValues must not be empty"},
		{"NameWithoutHash", map[string]string{"a": "a"}, nil, `ExpressionAttributeNames contains invalid key: Syntax error; key: "a"`},
		{"NameWithDash", map[string]string{"#a-b": "a"}, nil, `ExpressionAttributeNames contains invalid key: Syntax error; key: "#a-b"`},
		{"EmptyName", map[string]string{"#a": ""}, nil, "ExpressionAttributeNames contains invalid value: Empty attribute name for key #a"},
		{"ValueWithoutColon", nil, map[string]types.AttributeValue{"v": s("x")}, `ExpressionAttributeValues contains invalid key: Syntax error; key: "v"`},
		{"InvalidValue", nil, map[string]types.AttributeValue{":v": ss()}, "ExpressionAttributeValues contains invalid value: One or more parameter values were invalid: An string set  may not be empty for key :v"},
		{"InvalidNumber", nil, map[string]types.AttributeValue{":v": n("x")}, "ExpressionAttributeValues contains invalid value: The parameter cannot be converted to a numeric value: x for key :v"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := NewUsage(tc.names, tc.values).Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
		})
	}
}
