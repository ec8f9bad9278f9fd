package webhook_test

import (
	"encoding/json"
	"testing"

	"github.com/ferryhq/ferry/internal/adapters/ssrfguard"
	"github.com/ferryhq/ferry/internal/adapters/webhook"
	"github.com/ferryhq/ferry/internal/outbox"
)

// FuzzValidate feeds arbitrary payloads to Validate: it never panics, every
// refusal is a *outbox.PayloadError, and every accepted payload has a URL the
// policy accepts.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{
		`{"url":"https://example.com/hook","body":{"a":1}}`,
		`{"url":"http://127.0.0.1/","method":"PUT"}`,
		`{"url":"https://example.com/","headers":{"X-A":"b","webhook-id":"x"}}`,
		`{"url":"https://a@b/"}`, `[]`, `null`, `{"url":1}`,
	} {
		f.Add([]byte(s))
	}
	secrets, err := webhook.NewStaticSecrets(nil, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		f.Fatal(err)
	}
	a, err := webhook.New(webhook.Options{Secrets: secrets})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		err := a.Validate("", raw)
		if err != nil {
			if _, ok := err.(*outbox.PayloadError); !ok {
				t.Fatalf("Validate returned %T, not *outbox.PayloadError", err)
			}
			return
		}
		var p webhook.Payload
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatalf("accepted a payload that does not decode: %v", err)
		}
		if _, err := (ssrfguard.Policy{}).CheckURL(p.URL); err != nil {
			t.Fatalf("accepted URL %q the policy refuses: %v", p.URL, err)
		}
	})
}
