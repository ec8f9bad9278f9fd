package expr

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stretchr/testify/require"
)

// Sizes follow the rules and examples of the Developer Guide page "DynamoDB
// item sizes and formats".
func TestAttributeSize(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		attr  string
		value types.AttributeValue
		want  int
	}{
		{"String", "name", s("hello"), 4 + 5},
		{"StringUTF8", "s", s("é𝄞"), 1 + 2 + 4},
		{"NumberOneDigit", "n", n("7"), 1 + 1 + 1},
		{"NumberTwoDigits", "n", n("27"), 1 + 1 + 1},
		{"NumberTrailingZerosTrimmed", "n", n("1200.00"), 1 + 1 + 1},
		{"NumberOddPairing", "n", n("120"), 1 + 2 + 1},
		{"NumberFraction", "n", n("1.5"), 1 + 2 + 1},
		{"NumberSmallFraction", "n", n("0.05"), 1 + 1 + 1},
		{"NumberNegative", "n", n("-7"), 1 + 1 + 1 + 1},
		{"NumberZero", "n", n("0"), 1 + 1},
		{"NumberSmallest", "n", n("-1E-130"), 1 + 1 + 1 + 1},
		{"NumberWidest", "n", n("-1.2345678901234567890123456789012345678"), 1 + 21},
		{"NumberLeadingZerosTrimmed", "n", n("0.000012"), 1 + 1 + 1},
		{"Number38Digits", "n", n("12345678901234567890123456789012345678"), 1 + 19 + 1},
		{"Binary", "b", b("abc"), 1 + 3},
		{"Bool", "flag", bl(true), 4 + 1},
		{"Null", "nothing", null(), 7 + 1},
		{"EmptyList", "l", l(), 1 + 3},
		{"EmptyMap", "m", m(item{}), 1 + 3},
		{"List", "l", l(s("ab"), n("1")), 1 + 3 + (1 + 2) + (1 + 2)},
		{"Map", "m", m(item{"k": s("ab")}), 1 + 3 + (1 + 1 + 2)},
		{"Nested", "m", m(item{"k": l(bl(true))}), 1 + 3 + (1 + 1 + (3 + 1 + 1))},
		{"StringSet", "ss", ss("a", "bc"), 2 + 3},
		{"NumberSet", "ns", ns("1", "22"), 2 + 2 + 2},
		{"BinarySet", "bs", bs("a", "bc"), 2 + 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, AttributeSize(tc.attr, tc.value))
		})
	}
}

func TestItemSize(t *testing.T) {
	t.Parallel()
	it := item{"pk": s("user#1"), "n": n("10"), "flag": bl(false)}
	require.Equal(t, (2+6)+(1+2)+(4+1), ItemSize(it))
	require.Equal(t, 0, ItemSize(nil))
}
