package expr

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

func TestCanonicalNumber(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"1", "1"}, {"1.50", "1.5"}, {"1e3", "1000"}, {"1E+3", "1000"}, {"-0", "0"}, {"0.000", "0"},
		{"007", "7"}, {"+5", "5"}, {"-12.3400", "-12.34"}, {"0.0001", "0.0001"}, {".5", "0.5"},
		{"12345678901234567890123456789012345678", "12345678901234567890123456789012345678"},
		{"1.2345678901234567890123456789012345678", "1.2345678901234567890123456789012345678"},
		{"1000000000000000000000000000000000000000000", "1000000000000000000000000000000000000000000"},
		{"9.9999999999999999999999999999999999999E+125", "99999999999999999999999999999999999999" + strings.Repeat("0", 88)},
		{"1E-130", "0." + strings.Repeat("0", 129) + "1"},
		{"-1E-130", "-0." + strings.Repeat("0", 129) + "1"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := CanonicalNumber(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestCanonicalNumberErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"", "The parameter cannot be converted to a numeric value: "},
		{"abc", "The parameter cannot be converted to a numeric value: abc"},
		{"NaN", "The parameter cannot be converted to a numeric value: NaN"},
		{"Infinity", "The parameter cannot be converted to a numeric value: Infinity"},
		{"1.2.3", "The parameter cannot be converted to a numeric value: 1.2.3"},
		{" 1", "The parameter cannot be converted to a numeric value:  1"},
		{"123456789012345678901234567890123456789", "Attempting to store more than 38 significant digits in a Number"},
		{"1E+126", "Number overflow. Attempting to store a number with magnitude larger than supported range"},
		{"-1E+126", "Number overflow. Attempting to store a number with magnitude larger than supported range"},
		{"1E-131", "Number underflow. Attempting to store a number with magnitude smaller than supported range"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			_, err := CanonicalNumber(tc.in)
			require.EqualError(t, err, tc.want)
		})
	}
}

func TestNumberArithmeticIsExact(t *testing.T) {
	t.Parallel()
	got, err := addNumbers("0.1", "0.2", false)
	require.NoError(t, err)
	require.Equal(t, "0.3", got)
	got, err = addNumbers("12345678901234567890123456789012345678", "-12345678901234567890123456789012345677", false)
	require.NoError(t, err)
	require.Equal(t, "1", got)
	got, err = addNumbers("1E+125", "1E+125", false)
	require.NoError(t, err)
	require.Equal(t, "2"+strings.Repeat("0", 125), got)
	got, err = addNumbers("0.3", "0.1", true)
	require.NoError(t, err)
	require.Equal(t, "0.2", got)
}

func TestCompare(t *testing.T) {
	t.Parallel()
	cases := []struct {
		a, b types.AttributeValue
		want int
		ok   bool
	}{
		{n("10"), n("9"), 1, true},
		{n("-10"), n("9"), -1, true},
		{n("1.0"), n("1"), 0, true},
		{n("1E+2"), n("99.9"), 1, true},
		{s("a"), s("b"), -1, true},
		{s("Z"), s("a"), -1, true},
		{s("é"), s("z"), 1, true}, // UTF-8 bytes, not code points in another encoding
		{s("10"), s("9"), -1, true},
		{b("\x00"), b("\xff"), -1, true},
		{b("\xff"), b("\x7f"), 1, true}, // unsigned bytes
		{b("ab"), b("a"), 1, true},
		{n("1"), s("1"), 0, false},
		{bl(true), bl(true), 0, false},
		{ss("a"), ss("a"), 0, false},
	}
	for _, tc := range cases {
		got, ok := Compare(tc.a, tc.b)
		require.Equal(t, tc.ok, ok, "%s vs %s", dumpValue(tc.a), dumpValue(tc.b))
		if ok {
			require.Equal(t, tc.want, sign(got), "%s vs %s", dumpValue(tc.a), dumpValue(tc.b))
		}
	}
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

func TestEqual(t *testing.T) {
	t.Parallel()
	require.True(t, Equal(n("1.0"), n("1")))
	require.True(t, Equal(ss("a", "b"), ss("b", "a")))
	require.True(t, Equal(ns("1", "2.0"), ns("2", "1.00")))
	require.True(t, Equal(bs("x", "y"), bs("y", "x")))
	require.False(t, Equal(ss("a", "b"), ss("a", "c")))
	require.False(t, Equal(l(s("a"), s("b")), l(s("b"), s("a"))))
	require.True(t, Equal(m(item{"a": n("1"), "b": l(null())}), m(item{"b": l(null()), "a": n("1.0")})))
	require.False(t, Equal(m(item{"a": n("1")}), m(item{"a": n("1"), "b": n("1")})))
	require.False(t, Equal(s("1"), n("1")))
	require.True(t, Equal(null(), null()))
	require.False(t, Equal(bl(true), bl(false)))
	require.True(t, Equal(b("ab"), b("ab")))
}

func TestValidateValue(t *testing.T) {
	t.Parallel()
	require.NoError(t, ValidateValue(m(item{"a": l(ns("1", "2"), ss("x"), bs("q"), null(), bl(false), b(""))})))
	bad := []types.AttributeValue{
		nil,
		n("abc"),
		n("1E+126"),
		ss(),
		ss("a", "a"),
		ns("1", "1.0"),
		bs("a", "a"),
		bs(),
		&types.AttributeValueMemberNULL{Value: false},
		s("\xff"),
		l(n("x")),
		m(item{"k": ns()}),
	}
	for _, v := range bad {
		err := ValidateValue(v)
		require.Error(t, err, dumpValue(v))
		var e *Error
		require.ErrorAs(t, err, &e)
	}
	deep := types.AttributeValue(s("x"))
	for i := 0; i < 40; i++ {
		deep = l(deep)
	}
	require.EqualError(t, ValidateValue(deep), "Nesting Levels have exceeded supported limits")
}

func TestCopyValueIsDeep(t *testing.T) {
	t.Parallel()
	orig := m(item{"l": l(b("ab"), ss("x")), "bs": bs("q")})
	cp := CopyValue(orig).(*types.AttributeValueMemberM)
	cp.Value["l"].(*types.AttributeValueMemberL).Value[0].(*types.AttributeValueMemberB).Value[0] = 'z'
	cp.Value["bs"].(*types.AttributeValueMemberBS).Value[0][0] = 'z'
	require.True(t, Equal(orig, m(item{"l": l(b("ab"), ss("x")), "bs": bs("q")})))
}

func TestCanonicalValue(t *testing.T) {
	t.Parallel()
	got, err := CanonicalValue(m(item{"n": n("1.50"), "ns": ns("1e2", "-0.0"), "l": l(n("007"), s("1.50"))}))
	require.NoError(t, err)
	want := m(item{"n": n("1.5"), "ns": ns("100", "0"), "l": l(n("7"), s("1.50"))})
	require.Equal(t, dumpValue(want), dumpValue(got))
	_, err = CanonicalValue(l(n("x")))
	require.EqualError(t, err, "The parameter cannot be converted to a numeric value: x")
}
