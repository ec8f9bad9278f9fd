package devstack

import (
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHeaderInjectionNeverReachesTheMailSink is issue 13's reproduction: a
// configuration_set holding "\r\nBcc: …" was accepted (201) and wrote a
// real Bcc: header into the mail sink's .eml. It now answers 422 naming
// the field, and nothing is written: no action, no message.
func TestHeaderInjectionNeverReachesTheMailSink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startStack(t, Config{MailDir: dir})
	status, body := b.do(t, http.MethodPost, "/v1/actions",
		`{"kind":"email","payload":{"from":"shop@example.com","to":["ann@example.com"],"subject":"Your order","text":"t",`+
			`"configuration_set":"cs\r\nBcc: victim@example.net"}}`)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", body)
	e := body["error"].(map[string]any)
	require.Equal(t, "invalid_payload", e["code"])
	require.Equal(t, "payload.configuration_set", e["field"])

	status, list := b.do(t, http.MethodGet, "/v1/actions", "")
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, list["actions"])
	b.stop(t)
	files, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, files)
}
