package webhook_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/adapters/ssrfguard"
	"github.com/ferryhq/ferry/internal/adapters/webhook"
	"github.com/ferryhq/ferry/internal/outbox"
)

// TestHeaderFieldsRefuseInjection: every payload field that reaches the
// request's header block (headers' names and values, method, url) refuses
// control characters and overlong values at enqueue, naming the field.
// Before issue 13, values with control characters other than CR, LF and
// NUL were accepted (and refused by net/http at every attempt), as were
// names differing only in case (one of them silently lost) and headers of
// any length or number.
func TestHeaderFieldsRefuseInjection(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *webhook.Options) { o.Policy = ssrfguard.Policy{} })
	many := map[string]string{}
	for i := range webhook.MaxHeaders + 1 {
		many[fmt.Sprintf("X-H%d", i)] = "v"
	}
	for _, tc := range []struct {
		name    string
		payload map[string]any
		field   string
	}{
		{"ValueCRLF", map[string]any{"headers": map[string]string{"X-A": "a\r\nX-B: b"}}, "headers.X-A"},
		{"ValueNUL", map[string]any{"headers": map[string]string{"X-A": "a\x00"}}, "headers.X-A"},
		{"ValueOtherControl", map[string]any{"headers": map[string]string{"X-A": "a\x01b"}}, "headers.X-A"},
		{"ValueDEL", map[string]any{"headers": map[string]string{"X-A": "a\x7f"}}, "headers.X-A"},
		{"ValueTooLong", map[string]any{"headers": map[string]string{"X-A": strings.Repeat("v", webhook.MaxHeaderValue+1)}}, "headers.X-A"},
		{"NameCRLF", map[string]any{"headers": map[string]string{"X-A\r\nX-B": "b"}}, "headers"},
		{"NameTooLong", map[string]any{"headers": map[string]string{strings.Repeat("X", webhook.MaxHeaderName+1): "b"}}, "headers"},
		{"NamesDifferOnlyInCase", map[string]any{"headers": map[string]string{"X-A": "1", "x-a": "2"}}, "headers.x-a"},
		{"TooMany", map[string]any{"headers": many}, "headers"},
		{"MethodCRLF", map[string]any{"method": "POST\r\nX-B: b"}, "method"},
		{"URLCRLF", map[string]any{"url": "https://example.com/a\r\nX-B: b"}, "url"},
		{"URLTooLong", map[string]any{"url": "https://example.com/" + strings.Repeat("a", webhook.MaxURL)}, "url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := map[string]any{"url": "https://example.com/hook"}
			for k, v := range tc.payload {
				p[k] = v
			}
			raw, err := json.Marshal(p)
			require.NoError(t, err)
			var pe *outbox.PayloadError
			require.ErrorAs(t, b.adapter.Validate("", raw), &pe)
			require.Equal(t, tc.field, pe.Field, "%v", pe)
		})
	}
}
