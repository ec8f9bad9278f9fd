package lambdastack

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPatternMatch(t *testing.T) {
	t.Parallel()
	// The drainer's filter, as the stack declares it.
	drainer := `{"dynamodb":{"NewImage":{"due_pk":{"S":[{"exists":true}]},"st":{"S":["ADMITTED"]}}}}`
	admitted := `{"eventName":"INSERT","dynamodb":{"NewImage":{"due_pk":{"S":"D#1"},"st":{"S":"ADMITTED"}}}}`
	claimed := `{"eventName":"MODIFY","dynamodb":{"NewImage":{"st":{"S":"ADMITTED"}}}}`
	ended := `{"eventName":"MODIFY","dynamodb":{"NewImage":{"due_pk":{"S":"D#1"},"st":{"S":"DONE"}}}}`
	removed := `{"eventName":"REMOVE","dynamodb":{"OldImage":{"st":{"S":"DONE"}}}}`

	cases := []struct {
		name, pattern, doc string
		want               bool
	}{
		{"DrainerAdmitted", drainer, admitted, true},
		{"DrainerNoDueKey", drainer, claimed, false},
		{"DrainerEnded", drainer, ended, false},
		{"DrainerRemove", drainer, removed, false},
		{"ExistsFalse", `{"dynamodb":{"NewImage":{"due_pk":{"S":[{"exists":false}]}}}}`, claimed, true},
		{"ExistsFalseOnPresent", `{"dynamodb":{"NewImage":{"due_pk":{"S":[{"exists":false}]}}}}`, admitted, false},
		{"Prefix", `{"dynamodb":{"NewImage":{"due_pk":{"S":[{"prefix":"D#"}]}}}}`, admitted, true},
		{"Suffix", `{"eventName":[{"suffix":"ERT"}]}`, admitted, true},
		{"AnythingBut", `{"eventName":[{"anything-but":["REMOVE"]}]}`, removed, false},
		{"AnythingButOther", `{"eventName":[{"anything-but":"REMOVE"}]}`, admitted, true},
		{"AnythingButPrefix", `{"eventName":[{"anything-but":{"prefix":"MOD"}}]}`, claimed, false},
		{"IgnoreCase", `{"eventName":[{"equals-ignore-case":"insert"}]}`, admitted, true},
		{"Wildcard", `{"dynamodb":{"NewImage":{"due_pk":{"S":[{"wildcard":"D#*"}]}}}}`, admitted, true},
		{"Numeric", `{"size":[{"numeric":[">",0,"<=",5]}]}`, `{"size":5}`, true},
		{"NumericOut", `{"size":[{"numeric":[">",0,"<=",5]}]}`, `{"size":6}`, false},
		{"NumberLiteral", `{"size":[5]}`, `{"size":5.0}`, true},
		{"ListValue", `{"tags":["b"]}`, `{"tags":["a","b"]}`, true},
		{"MissingField", `{"eventName":["INSERT"]}`, `{}`, false},
		{"Or", `{"$or":[{"eventName":["REMOVE"]},{"eventName":["INSERT"]}]}`, admitted, true},
		{"OrNone", `{"$or":[{"eventName":["REMOVE"]},{"eventName":["MODIFY"]}]}`, admitted, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := ParsePattern(c.pattern)
			require.NoError(t, err)
			require.Equal(t, c.want, p.Match([]byte(c.doc)))
		})
	}
}

func TestParsePatternRefuses(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		`[]`,
		`{"a":"b"}`,
		`{"a":[{"prefix":1}]}`,
		`{"a":[{"numeric":[">"]}]}`,
		`{"a":[{"unknown":1}]}`,
		`{"$or":[{"a":["b"]}]}`,
	} {
		_, err := ParsePattern(bad)
		require.Error(t, err, bad)
	}
}

func TestWildcardMatch(t *testing.T) {
	t.Parallel()
	require.True(t, wildcardMatch("arn:aws:dynamodb:*:*:table/ferry/stream/*", "arn:aws:dynamodb:us-east-1:0:table/ferry/stream/2026-12-01T00:00:00.000"))
	require.False(t, wildcardMatch("arn:aws:dynamodb:*:*:table/ferry", "arn:aws:dynamodb:us-east-1:0:table/ferry/index/due"))
	require.True(t, wildcardMatch("*", ""))
	require.True(t, wildcardMatch("a*b*c", "a-b-b-c"))
	require.False(t, wildcardMatch("a*b*c", "a-c"))
}
