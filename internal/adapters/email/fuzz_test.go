package email_test

import (
	"context"
	"testing"

	"github.com/ferryhq/ferry/internal/adapters/email"
	"github.com/ferryhq/ferry/internal/outbox"
)

// FuzzValidate feeds arbitrary payloads to Validate: it never panics, every
// refusal is a *outbox.PayloadError, and every accepted payload prepares.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(payload))
	for _, s := range []string{
		`{"from":"a@example.com","to":["b@example.com"],"subject":"s","text":"t"}`,
		`{"from":"a@example.com","to":["b@example.com"],"subject":"s","text":"t","tags":{"k":"v"}}`,
		`{"from":"","to":[]}`, `[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	a, err := email.New(email.Options{Sender: email.NewMailDirSenderMust(f)})
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
		att := &outbox.Attempt{Action: outbox.Action{ID: "1-1", Kind: email.Kind, WorkspaceID: "ws", Payload: raw}, Number: 1}
		if res := a.Prepare(context.Background(), att); res.Outcome != outbox.OutcomeNone {
			t.Fatalf("accepted payload does not prepare: %v", res.Err)
		}
	})
}
