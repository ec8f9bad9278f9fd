package email_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/adapters/email"
	"github.com/ferryhq/ferry/internal/outbox"
)

// withField returns the test payload with one field replaced.
func withField(t *testing.T, field string, v any) []byte {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(payload), &m))
	m[field] = v
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

// TestHeaderFieldsRefuseInjection: every payload field that reaches a
// message header or an SES request field refuses CR, LF, NUL and overlong
// values at enqueue, naming the field. The first case is the reproduction
// of issue 13: it was accepted and wrote a real Bcc: header into the mail
// sink's .eml.
func TestHeaderFieldsRefuseInjection(t *testing.T) {
	t.Parallel()
	a := newAdapter(t, email.NewMailDirSenderMust(t), nil)
	for _, tc := range []struct {
		name  string
		field string
		value any
		want  string // the PayloadError's field
	}{
		{"ConfigurationSetCRLF", "configuration_set", "cs\r\nBcc: victim@example.net", "configuration_set"},
		{"ConfigurationSetNUL", "configuration_set", "cs\x00", "configuration_set"},
		{"ConfigurationSetTooLong", "configuration_set", strings.Repeat("c", 65), "configuration_set"},
		{"ConfigurationSetSpace", "configuration_set", "my set", "configuration_set"},
		{"SubjectCR", "subject", "hello\rBcc: victim@example.net", "subject"},
		{"SubjectNUL", "subject", "hello\x00", "subject"},
		{"SubjectTooLong", "subject", strings.Repeat("s", 999), "subject"},
		{"FromLF", "from", "shop@example.com\nBcc: victim@example.net", "from"},
		{"FromEncodedCRLFName", "from", "=?utf-8?q?Shop=0D=0ABcc:_victim@example.net?= <shop@example.com>", "from"},
		{"FromTooLong", "from", strings.Repeat("a", 321) + "@example.com", "from"},
		{"ToCRLF", "to", []string{"ann@example.org\r\nBcc: victim@example.net"}, "to[0]"},
		{"CcNUL", "cc", []string{"ok@example.org", "carol\x00@example.org"}, "cc[1]"},
		{"BccEncodedLF", "bcc", []string{"=?utf-8?b?QQpC?= <audit@example.com>"}, "bcc[0]"},
		{"ReplyToCR", "reply_to", []string{"support@example.com\r"}, "reply_to[0]"},
		{"TagValueCRLF", "tags", map[string]string{"campaign": "a\r\nBcc: victim@example.net"}, "tags.campaign"},
		{"TagNameCRLF", "tags", map[string]string{"a\r\nBcc: victim@example.net": "v"}, "tags"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := a.Validate("", withField(t, tc.field, tc.value))
			var pe *outbox.PayloadError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tc.want, pe.Field, "%v", err)
		})
	}
}
