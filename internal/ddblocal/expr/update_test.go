package expr

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func updateValues() item {
	return item{
		":v": s("new"), ":one": n("1"), ":two": n("2"), ":neg": n("-3"), ":p1": n("0.1"), ":p2": n("0.2"),
		":l": l(s("z")), ":empty": l(), ":tags": ss("blue", "red"), ":nums": ns("3", "1.0"),
		":blobs": bs("c"), ":m": m(item{"k": s("v")}), ":big": n("99999999999999999999999999999999999999"),
		":huge": n("9.9999999999999999999999999999999999999E+125"), ":s": s("x"),
	}
}

func updateItem() item {
	return item{
		"pk":    s("p"),
		"cnt":   n("5"),
		"lst":   l(s("a"), s("b"), s("c"), s("d")),
		"doc":   m(item{"sb": m(item{"leaf": n("1")}), "arr": l(n("1"), n("2"))}),
		"tags":  ss("red", "green"),
		"nums":  ns("1", "2"),
		"blobs": bs("a", "b"),
		"str":   s("text"),
	}
}

func TestUpdateApply(t *testing.T) {
	t.Parallel()
	names := map[string]string{"#s": "status", "#dot": "a.b"}
	cases := []struct {
		name string
		expr string
		in   item
		want item // attributes expected to differ from in (nil value: removed)
	}{
		{"SetNew", "SET a = :v", updateItem(), item{"a": s("new")}},
		{"SetOverwrite", "SET str = :v", updateItem(), item{"str": s("new")}},
		{"SetReservedViaName", "SET #s = :v, #dot = :one", updateItem(), item{"status": s("new"), "a.b": n("1")}},
		{"SetPlus", "SET cnt = cnt + :one", updateItem(), item{"cnt": n("6")}},
		{"SetMinus", "SET cnt = cnt - :two", updateItem(), item{"cnt": n("3")}},
		{"SetMinusNegative", "SET cnt = cnt - :neg", updateItem(), item{"cnt": n("8")}},
		{"SetPlusExact", "SET x = :p1 + :p2", updateItem(), item{"x": n("0.3")}},
		{"SetFromOtherAttribute", "SET x = str", updateItem(), item{"x": s("text")}},
		{"IfNotExistsMissing", "SET x = if_not_exists(x, :one)", updateItem(), item{"x": n("1")}},
		{"IfNotExistsPresent", "SET cnt = if_not_exists(cnt, :one)", updateItem(), item{"cnt": n("5")}},
		{"IfNotExistsCounter", "SET c = if_not_exists(c, :one) + :two", updateItem(), item{"c": n("3")}},
		{"ListAppendEnd", "SET lst = list_append(lst, :l)", updateItem(), item{"lst": l(s("a"), s("b"), s("c"), s("d"), s("z"))}},
		{"ListAppendStart", "SET lst = list_append(:l, lst)", updateItem(), item{"lst": l(s("z"), s("a"), s("b"), s("c"), s("d"))}},
		{"ListAppendIfNotExists", "SET nl = list_append(if_not_exists(nl, :empty), :l)", updateItem(), item{"nl": l(s("z"))}},
		{"SetNested", "SET doc.sb.leaf = :two, doc.newkey = :v", updateItem(),
			item{"doc": m(item{"sb": m(item{"leaf": n("2")}), "arr": l(n("1"), n("2")), "newkey": s("new")})}},
		{"SetListIndex", "SET lst[1] = :v", updateItem(), item{"lst": l(s("a"), s("new"), s("c"), s("d"))}},
		{"SetListIndexBeyondEndAppends", "SET lst[10] = :v", updateItem(), item{"lst": l(s("a"), s("b"), s("c"), s("d"), s("new"))}},
		{"SetSeveralAppendsInIndexOrder", "SET lst[20] = :s, lst[10] = :v", updateItem(), item{"lst": l(s("a"), s("b"), s("c"), s("d"), s("new"), s("x"))}},
		{"SetNestedListIndex", "SET doc.arr[0] = :two", updateItem(), item{"doc": m(item{"sb": m(item{"leaf": n("1")}), "arr": l(n("2"), n("2"))})}},
		{"ActionsReadOriginalItem", "SET a = cnt, cnt = :one", updateItem(), item{"a": n("5"), "cnt": n("1")}},
		{"RemoveTop", "REMOVE str, absent", updateItem(), item{"str": nil}},
		{"RemoveNested", "REMOVE doc.sb.leaf", updateItem(), item{"doc": m(item{"sb": m(item{}), "arr": l(n("1"), n("2"))})}},
		{"RemoveListIndexShifts", "REMOVE lst[1]", updateItem(), item{"lst": l(s("a"), s("c"), s("d"))}},
		{"RemoveListIndexesUseOriginalPositions", "REMOVE lst[0], lst[2]", updateItem(), item{"lst": l(s("b"), s("d"))}},
		{"RemoveListIndexesAnyOrder", "REMOVE lst[3], lst[1], lst[0]", updateItem(), item{"lst": l(s("c"))}},
		{"RemoveListIndexBeyondEnd", "REMOVE lst[9]", updateItem(), item{}},
		{"RemoveMissingKeyOfExistingMap", "REMOVE doc.nope", updateItem(), item{}},
		{"SetAndRemoveSameList", "SET lst[1] = :v REMOVE lst[0]", updateItem(), item{"lst": l(s("new"), s("c"), s("d"))}},
		{"AppendAndRemoveSameList", "SET lst[8] = :v REMOVE lst[4]", updateItem(), item{"lst": l(s("a"), s("b"), s("c"), s("d"), s("new"))}},
		{"AddNumber", "ADD cnt :two", updateItem(), item{"cnt": n("7")}},
		{"AddNumberMissingIsZero", "ADD c :neg", updateItem(), item{"c": n("-3")}},
		{"AddStringSet", "ADD tags :tags", updateItem(), item{"tags": ss("red", "green", "blue")}},
		{"AddNumberSetNumericDedup", "ADD nums :nums", updateItem(), item{"nums": ns("1", "2", "3")}},
		{"AddBinarySet", "ADD blobs :blobs", updateItem(), item{"blobs": bs("a", "b", "c")}},
		{"AddSetMissing", "ADD t2 :tags", updateItem(), item{"t2": ss("blue", "red")}},
		{"AddNested", "ADD doc.sb.leaf :one", updateItem(), item{"doc": m(item{"sb": m(item{"leaf": n("2")}), "arr": l(n("1"), n("2"))})}},
		{"DeleteFromSet", "DELETE tags :tags", updateItem(), item{"tags": ss("green")}},
		{"DeleteNumbersNumerically", "DELETE nums :nums", updateItem(), item{"nums": ns("2")}},
		{"DeleteLastElementRemoves", "DELETE blobs :blobs, tags :tags", item{"blobs": bs("c"), "tags": ss("red", "blue")}, item{"blobs": nil, "tags": nil}},
		{"DeleteMissing", "DELETE t2 :tags", updateItem(), item{}},
		{"AllClauses", "REMOVE str ADD cnt :one DELETE tags :tags SET a = :v", updateItem(),
			item{"str": nil, "cnt": n("6"), "tags": ss("green"), "a": s("new")}},
		{"LowerCaseKeywords", "set a = :v remove str", updateItem(), item{"a": s("new"), "str": nil}},
		{"NilItem", "SET a = :v ADD c :one", nil, item{"a": s("new"), "c": n("1")}},
		{"Max38Digits", "ADD c :big", nil, item{"c": n("99999999999999999999999999999999999999")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up, err := ParseUpdate(tc.expr, NewUsage(names, updateValues()))
			require.NoError(t, err)
			before := CopyItem(tc.in)
			got, err := up.Apply(tc.in)
			require.NoError(t, err)
			require.True(t, itemsEqual(before, tc.in), "input item was modified")
			want := CopyItem(tc.in)
			if want == nil {
				want = item{}
			}
			for k, v := range tc.want {
				if v == nil {
					delete(want, k)
				} else {
					want[k] = v
				}
			}
			require.True(t, itemsEqual(want, got), "got %s\nwant %s", dump(got), dump(want))
		})
	}
}

func itemsEqual(a, b item) bool {
	return Equal(m(a), m(b))
}

func TestUpdateApplyErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		expr string
		want string
	}{
		{"PlusMissing", "SET a = absent + :one", msgMissingOperand},
		{"PlusString", "SET a = str + :one", msgIncorrectOperand},
		{"ListAppendMissing", "SET a = list_append(absent, :l)", msgMissingOperand},
		{"ListAppendNotList", "SET a = list_append(str, :l)", msgIncorrectOperand},
		{"SetMissingOperand", "SET a = absent", msgMissingOperand},
		{"NestedParentMissing", "SET nope.x = :v", msgInvalidPath},
		{"NestedParentNotMap", "SET str.x = :v", msgInvalidPath},
		{"IndexOnMap", "SET doc[0] = :v", msgInvalidPath},
		{"NameOnList", "SET lst.x = :v", msgInvalidPath},
		{"RemoveParentMissing", "REMOVE nope.x", msgInvalidPath},
		{"RemoveIndexOfString", "REMOVE str[0]", msgInvalidPath},
		{"SetBelowMissingListElement", "SET lst[10].x = :v", msgInvalidPath},
		{"AddWrongType", "ADD str :one", msgIncorrectOperand},
		{"AddSetMismatch", "ADD tags :nums", msgIncorrectOperand},
		{"DeleteWrongType", "DELETE cnt :tags", msgIncorrectOperand},
		{"Overflow", "SET a = :huge + :huge", "Number overflow. Attempting to store a number with magnitude larger than supported range"},
		{"TooManyDigits", "SET a = :big + :p1", "Attempting to store more than 38 significant digits in a Number"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up, err := ParseUpdate(tc.expr, NewUsage(nil, updateValues()))
			require.NoError(t, err)
			_, err = up.Apply(updateItem())
			require.EqualError(t, err, tc.want)
			var e *Error
			require.ErrorAs(t, err, &e)
		})
	}
}

func TestUpdateParseErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		expr string
		want string
	}{
		{"", "Invalid UpdateExpression: The expression can not be empty;"},
		{"SET", `Invalid UpdateExpression: Syntax error; token: "<EOF>", near: "SET"`},
		{"SET a = :v SET b = :v", `Invalid UpdateExpression: The "SET" section can only be used once in an update expression;`},
		{"SET a = :v, a = :s", "Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a], path two: [a]"},
		{"SET a = :v REMOVE a.b", "Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a], path two: [a, b]"},
		{"SET a.b = :v REMOVE a[0]", "Invalid UpdateExpression: Two document paths conflict with each other; must remove or rewrite one of these paths; path one: [a, b], path two: [a, [0]]"},
		{"SET a = :v + :one", "Invalid UpdateExpression: Incorrect operand type for operator or function; operator or function: +, operand type: STRING"},
		{"SET a = list_append(:v, a)", "Invalid UpdateExpression: Incorrect operand type for operator or function; operator or function: list_append, operand type: STRING"},
		{"SET a = :one + :one + :one", `Invalid UpdateExpression: Syntax error; token: "+", near: ":one + :one"`},
		{"ADD a :v", "Invalid UpdateExpression: Incorrect operand type for operator or function; operator: ADD, operand type: STRING"},
		{"DELETE a :one", "Invalid UpdateExpression: Incorrect operand type for operator or function; operator: DELETE, operand type: NUMBER"},
		{"ADD a b", `Invalid UpdateExpression: Syntax error; token: "b", near: "a b"`},
		{"SET status = :v", "Invalid UpdateExpression: Attribute name is a reserved keyword; reserved keyword: status"},
		{"SET #x = :v", "Invalid UpdateExpression: An expression attribute name used in the document path is not defined; attribute name: #x"},
		{"SET a = :nope", "Invalid UpdateExpression: An expression attribute value used in expression is not defined; attribute value: :nope"},
		{"SET a = size(b)", "Invalid UpdateExpression: The function is not allowed in an update expression; function: size"},
		{"SET a = foo(b)", "Invalid UpdateExpression: Invalid function name; function: foo"},
		{"UPSERT a = :v", `Invalid UpdateExpression: Syntax error; token: "UPSERT", near: "UPSERT a"`},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			t.Parallel()
			_, err := ParseUpdate(tc.expr, NewUsage(nil, updateValues()))
			require.EqualError(t, err, tc.want)
		})
	}
}

func TestUpdateTopLevelAttributes(t *testing.T) {
	t.Parallel()
	up, err := ParseUpdate("SET a.b = :v, c = :v REMOVE d[1] ADD e :one, a.x :one DELETE f :tags", NewUsage(nil, updateValues()))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "c", "d", "e", "f"}, up.TopLevelAttributes())
}

func TestUpdateUpdatedAttributes(t *testing.T) {
	t.Parallel()
	up, err := ParseUpdate("SET doc.sb.leaf = :two, a = :v REMOVE str, lst[1] ADD cnt :one", NewUsage(nil, item{":two": n("2"), ":v": s("new"), ":one": n("1")}))
	require.NoError(t, err)
	old := updateItem()
	require.True(t, itemsEqual(item{
		"doc": m(item{"sb": m(item{"leaf": n("1")})}),
		"str": s("text"),
		"lst": l(s("b")),
		"cnt": n("5"),
	}, up.UpdatedAttributes(old)), dump(up.UpdatedAttributes(old)))
	updated, err := up.Apply(old)
	require.NoError(t, err)
	require.True(t, itemsEqual(item{
		"doc": m(item{"sb": m(item{"leaf": n("2")})}),
		"a":   s("new"),
		"lst": l(s("c")),
		"cnt": n("6"),
	}, up.UpdatedAttributes(updated)), dump(up.UpdatedAttributes(updated)))
}
