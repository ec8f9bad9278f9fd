package payloadcheck_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/adapters/payloadcheck"
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
	err := payloadcheck.Decode([]byte(`{"headers":{"a":1}}`), &v, "webhook")
	require.EqualError(t, err, "invalid payload: headers: every value must be a string, not a number")
	err = payloadcheck.Decode([]byte(`{"headers":{}} {}`), &v, "webhook")
	require.EqualError(t, err, "invalid payload: trailing data after the payload object")
	err = payloadcheck.Decode([]byte(`{"nope":1}`), &v, "email")
	require.EqualError(t, err, "invalid payload: nope: unknown field")
	err = payloadcheck.Decode([]byte(`{`), &v, "email")
	require.EqualError(t, err, "invalid payload: not an email payload: it is not valid JSON: it ends too early")
}
