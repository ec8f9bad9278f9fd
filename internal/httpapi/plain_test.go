package httpapi

import (
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// goInternals matches what a message must not show: Go's type names,
// encoding/json's wording, struct and package names.
var goInternals = regexp.MustCompile(`json:|unmarshal|Go (struct|value)|\[\]|map\[|\bstruct\b|RawMessage|\bint\b|\bfloat64\b|\*string|time\.Time|outbox\.|httpapi\.`)

// TestMessagesArePlainEnglish: every 4xx message says what the field must
// be in plain words. Before issue 13, "max_attempts": 1.5 answered "must
// be an integer, not number 1.5" and an array of actions holding a number
// "must be a []json.RawMessage …"-style text; payload errors quoted Go
// (see the devstack test with the real adapters).
func TestMessagesArePlainEnglish(t *testing.T) {
	t.Parallel()
	b := setupEngine(t)
	for _, tc := range []struct {
		path, body, field, message string
	}{
		{"/v1/actions", `{"kind":1,"payload":{}}`, "kind", "kind: must be a string, not a number"},
		{"/v1/actions", `{"kind":"webhook","max_attempts":1.5,"payload":{}}`, "max_attempts", "max_attempts: must be an integer, not 1.5"},
		{"/v1/actions", `{"kind":"webhook","propose":"yes","payload":{}}`, "propose", "propose: must be a boolean (true or false), not a string"},
		{"/v1/actions", `{"kind":"webhook","lane_key":["a"],"payload":{}}`, "lane_key", "lane_key: must be a string, not an array"},
		{"/v1/actions", `[1]`, "", "body: must be a JSON object, not an array"},
		{"/v1/actions:batch", `{"actions":{}}`, "actions", "actions: must be an array, not an object"},
		{"/v1/actions:batch", `{"actions":[1]}`, "actions[0]", "actions[0]: must be a JSON object, not a number"},
	} {
		ans := b.do(t, http.MethodPost, tc.path, tokA, tc.body)
		require.Equal(t, http.StatusBadRequest, ans.Status, "%s", tc.body)
		e := ans.json(t)["error"].(map[string]any)
		require.Equal(t, tc.message, e["message"], "%s", tc.body)
		if tc.field != "" {
			require.Equal(t, tc.field, e["field"], "%s", tc.body)
		}
		require.NotRegexp(t, goInternals, e["message"], "%s", tc.body)
	}
}

// TestByteOrderMarkAndStrayBytesAreNamed is issue 28 item 13: a body
// starting with a UTF-8 byte order mark answered "unexpected character
// 'ï'" (the mark's first byte read as Latin-1). The answer names the mark,
// a character by its code point, and a byte that is not UTF-8 as a byte.
func TestByteOrderMarkAndStrayBytesAreNamed(t *testing.T) {
	t.Parallel()
	b := setupEngine(t)
	for body, want := range map[string]string{
		"\xef\xbb\xbf{\"kind\":\"webhook\",\"payload\":{}}": "invalid JSON at byte 0: the body starts with a UTF-8 byte order mark (bytes EF BB BF); send the JSON without it",
		"{\"kind\":\xc3\xa9}":                               `invalid JSON in kind at byte 8: unexpected character 'é' (U+00E9) where a value should start`,
		"{\"kind\":\xef}":                                   "invalid JSON in kind at byte 8: unexpected byte 0xEF where a value should start (not UTF-8 text)",
	} {
		ans := b.do(t, http.MethodPost, "/v1/actions", tokA, body)
		require.Equal(t, http.StatusBadRequest, ans.Status, "%q", body)
		e := ans.json(t)["error"].(map[string]any)
		require.Equal(t, "malformed_json", e["code"])
		require.Equal(t, want, e["message"], "%q", body)
	}
}
