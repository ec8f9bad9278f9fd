package eventbridge_test

import (
	"testing"

	"github.com/ferryhq/ferry/internal/outbox"
)

// FuzzValidate feeds arbitrary payloads to Validate: it never panics and
// every refusal is a *outbox.PayloadError.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(payload))
	for _, s := range []string{`{"source":"s","detail_type":"t","detail":{}}`, `{"detail":[]}`, `[]`, `null`} {
		f.Add([]byte(s))
	}
	a := newAdapter(f, "http://127.0.0.1:1")
	f.Fuzz(func(t *testing.T, raw []byte) {
		if err := a.Validate("", raw); err != nil {
			if _, ok := err.(*outbox.PayloadError); !ok {
				t.Fatalf("Validate returned %T, not *outbox.PayloadError", err)
			}
		}
	})
}
