package payloadcheck_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/adapters/payloadcheck"
	"github.com/ferryhq/ferry/internal/jsonerr"
)

func TestHeaderText(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", "plain", "tab\tinside", "Grüße — ✓"} {
		require.Empty(t, payloadcheck.HeaderText(ok, 64), "%q", ok)
	}
	for _, bad := range []string{"cs\r\nBcc: victim@example.net", "a\rb", "a\nb", "a\x00b", "a\x7fb", "a\u0085b", "a\u2028b", "\xff"} {
		require.NotEmpty(t, payloadcheck.HeaderText(bad, 64), "%q", bad)
	}
	require.Equal(t, "is 5 bytes; at most 4 are allowed", payloadcheck.HeaderText("abcde", 4))
}

func TestDecode(t *testing.T) {
	t.Parallel()
	type p struct {
		Headers map[string]string `json:"headers"`
	}
	var v p
	require.Nil(t, payloadcheck.Decode([]byte(`{"headers":{"a":"b"}}`), &v, "webhook"))
	require.Equal(t, &jsonerr.Problem{Field: "headers", Message: "every value must be a string, not a number"},
		payloadcheck.Decode([]byte(`{"headers":{"a":1}}`), &v, "webhook"))
	require.Equal(t, &jsonerr.Problem{Message: "trailing data after the payload object"},
		payloadcheck.Decode([]byte(`{"headers":{}} {}`), &v, "webhook"))
	require.Equal(t, &jsonerr.Problem{Field: "nope", Message: "unknown field"},
		payloadcheck.Decode([]byte(`{"nope":1}`), &v, "email"))
	require.Equal(t, &jsonerr.Problem{Message: "not an email payload: it is not valid JSON: it ends too early"},
		payloadcheck.Decode([]byte(`{`), &v, "email"))
}
