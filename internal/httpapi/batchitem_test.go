package httpapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBatchErrorsNameTheItem: every refusal of a batch names the item at
// fault, also those found after decoding (by the engine or the kind's
// adapter). Before issue 13 an unknown kind in actions[2] said field
// "kind", and a payload the adapter refused "payload.url".
func TestBatchErrorsNameTheItem(t *testing.T) {
	t.Parallel()
	good := `{"kind":"webhook","payload":{"url":"https://example.com/h"}}`
	for _, tc := range []struct {
		name  string
		item  string // the batch's third action; the first two are good
		code  string
		field string
	}{
		{"UnknownKind", `{"kind":"sms","payload":{"to":"x"}}`, CodeUnknownKind, "actions[2].kind"},
		{"PayloadRefused", `{"kind":"webhook","payload":{"url":"http://example.com/h"}}`, CodeInvalidPayload, "actions[2].payload.url"},
		{"KeyTwice", `{"kind":"webhook","idempotency_key":"k","payload":{"url":"https://example.com/h"}}`, CodeInvalidField, "actions[2].idempotency_key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setupEngine(t)
			second := good
			if tc.name == "KeyTwice" {
				second = tc.item
			}
			ans := b.do(t, http.MethodPost, "/v1/actions:batch", tokA, `{"actions":[`+good+`,`+second+`,`+tc.item+`]}`)
			require.GreaterOrEqual(t, ans.Status, 400, "%s", ans.Body)
			code, field := ans.errorCode(t)
			require.Equal(t, tc.code, code, "%s", ans.Body)
			require.Equal(t, tc.field, field, "%s", ans.Body)
			msg := ans.json(t)["error"].(map[string]any)["message"].(string)
			require.Contains(t, msg, tc.field, "the message names the item too")
			require.Zero(t, b.items(), "a refused batch writes nothing")
		})
	}
	t.Run("SingleEnqueueNamesNoItem", func(t *testing.T) {
		b := setupEngine(t)
		ans := b.do(t, http.MethodPost, "/v1/actions", tokA, `{"kind":"sms","payload":{}}`)
		code, field := ans.errorCode(t)
		require.Equal(t, CodeUnknownKind, code)
		require.Equal(t, "kind", field)
	})
}
