package expr

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stretchr/testify/require"
)

func TestProjectionApply(t *testing.T) {
	t.Parallel()
	src := item{
		"pk":  s("p"),
		"a":   s("A"),
		"doc": m(item{"x": n("1"), "y": m(item{"z": s("Z"), "w": s("W")}), "arr": l(s("0"), s("1"), s("2"), s("3"))}),
		"lst": l(m(item{"k": s("k0"), "j": s("j0")}), m(item{"k": s("k1")}), s("plain")),
	}
	names := map[string]string{"#d": "doc", "#s": "status"}
	cases := []struct {
		expr string
		want item
	}{
		{"pk", item{"pk": s("p")}},
		{"pk, a, absent", item{"pk": s("p"), "a": s("A")}},
		{"#d.x", item{"doc": m(item{"x": n("1")})}},
		{"doc.y.z, doc.x", item{"doc": m(item{"x": n("1"), "y": m(item{"z": s("Z")})})}},
		{"doc.arr[1], doc.arr[3]", item{"doc": m(item{"arr": l(s("1"), s("3"))})}},
		{"doc.arr[3], doc.arr[1]", item{"doc": m(item{"arr": l(s("1"), s("3"))})}},
		{"doc.arr[9]", item{}},
		{"lst[0].k, lst[1].k, lst[2].k", item{"lst": l(m(item{"k": s("k0")}), m(item{"k": s("k1")}))}},
		{"doc.nope, a", item{"a": s("A")}},
		{"a.b", item{}},
		{"#s", item{}},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			t.Parallel()
			pr, err := ParseProjection(tc.expr, NewUsage(names, nil))
			require.NoError(t, err)
			got := pr.Apply(src)
			require.True(t, itemsEqual(tc.want, got), "got %s\nwant %s", dump(got), dump(tc.want))
		})
	}
}

func TestProjectionCopies(t *testing.T) {
	t.Parallel()
	src := item{"doc": m(item{"x": l(n("1"))})}
	pr, err := ParseProjection("doc", nil)
	require.NoError(t, err)
	got := pr.Apply(src)
	got["doc"].(*types.AttributeValueMemberM).Value["x"] = s("changed")
	require.True(t, itemsEqual(item{"doc": m(item{"x": l(n("1"))})}, src))
	require.Equal(t, []string{"doc"}, pr.TopLevelAttributes())
}

func TestProjectionErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		expr string
		want string
	}{
		{"a, a.b", "Invalid ProjectionExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a], path two: [a, b]"},
		{"a, a", "Invalid ProjectionExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a], path two: [a]"},
		{"a.b, a[0]", "Invalid ProjectionExpression: Two document paths conflict with each other; must remove or rewrite one of these paths; path one: [a, b], path two: [a, [0]]"},
		{"a,", `Invalid ProjectionExpression: Syntax error; token: "<EOF>", near: ","`},
		{"name", "Invalid ProjectionExpression: Attribute name is a reserved keyword; reserved keyword: name"},
		{"#n", "Invalid ProjectionExpression: An expression attribute name used in the document path is not defined; attribute name: #n"},
		{"a = b", `Invalid ProjectionExpression: Syntax error; token: "=", near: "a = b"`},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			t.Parallel()
			_, err := ParseProjection(tc.expr, NewUsage(nil, nil))
			require.EqualError(t, err, tc.want)
		})
	}
}
