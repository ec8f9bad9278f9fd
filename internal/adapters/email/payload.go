package email

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/mail"
	"strings"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Payload is the email kind's payload (API.md, "Built-in kinds").
type Payload struct {
	From             string            `json:"from"`
	To               []string          `json:"to,omitempty"`
	Cc               []string          `json:"cc,omitempty"`
	Bcc              []string          `json:"bcc,omitempty"`
	ReplyTo          []string          `json:"reply_to,omitempty"`
	Subject          string            `json:"subject"`
	Text             string            `json:"text,omitempty"`
	HTML             string            `json:"html,omitempty"`
	ConfigurationSet string            `json:"configuration_set,omitempty"`
	Tags             map[string]string `json:"tags,omitempty"`
}

// MaxRecipients is SES's limit of recipients (to, cc and bcc together) of
// one message.
const MaxRecipients = 50

// ActionIDTag names the SES message tag that carries the action id.
const ActionIDTag = "ferry_action_id"

// decodePayload decodes and checks a payload; errors are *outbox.PayloadError.
func decodePayload(raw json.RawMessage) (*Payload, error) {
	var p Payload
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, &outbox.PayloadError{Message: fmt.Sprintf("not an email payload: %v", err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &outbox.PayloadError{Message: "trailing data after the payload object"}
	}
	if p.From == "" {
		return nil, &outbox.PayloadError{Field: "from", Message: "required"}
	}
	if err := checkAddress(p.From); err != nil {
		return nil, &outbox.PayloadError{Field: "from", Message: err.Error()}
	}
	lists := []struct {
		field string
		addrs []string
	}{{"to", p.To}, {"cc", p.Cc}, {"bcc", p.Bcc}, {"reply_to", p.ReplyTo}}
	recipients := 0
	for _, l := range lists {
		for i, a := range l.addrs {
			if err := checkAddress(a); err != nil {
				return nil, &outbox.PayloadError{Field: fmt.Sprintf("%s.%d", l.field, i), Message: err.Error()}
			}
		}
		if l.field != "reply_to" {
			recipients += len(l.addrs)
		}
	}
	if recipients == 0 {
		return nil, &outbox.PayloadError{Field: "to", Message: "at least one recipient (to, cc or bcc) is required"}
	}
	if recipients > MaxRecipients {
		return nil, &outbox.PayloadError{Field: "to", Message: fmt.Sprintf("%d recipients; SES allows at most %d per message", recipients, MaxRecipients)}
	}
	if strings.TrimSpace(p.Subject) == "" {
		return nil, &outbox.PayloadError{Field: "subject", Message: "required"}
	}
	if strings.ContainsAny(p.Subject, "\r\n") {
		return nil, &outbox.PayloadError{Field: "subject", Message: "must be one line"}
	}
	if p.Text == "" && p.HTML == "" {
		return nil, &outbox.PayloadError{Field: "text", Message: "text or html is required"}
	}
	for name, value := range p.Tags {
		if name == ActionIDTag {
			return nil, &outbox.PayloadError{Field: "tags." + name, Message: "reserved for the action id"}
		}
		if !validTag(name) {
			return nil, &outbox.PayloadError{Field: "tags." + name, Message: "tag names may hold only ASCII letters, digits, _ and - (1 to 256)"}
		}
		if !validTag(value) {
			return nil, &outbox.PayloadError{Field: "tags." + name, Message: "tag values may hold only ASCII letters, digits, _ and - (1 to 256)"}
		}
	}
	return &p, nil
}

// checkAddress accepts one RFC 5322 address, with or without a display name.
func checkAddress(s string) error {
	a, err := mail.ParseAddress(s)
	if err != nil {
		return fmt.Errorf("not an email address: %v", err)
	}
	if !strings.Contains(a.Address, "@") {
		return fmt.Errorf("not an email address: %q", s)
	}
	return nil
}

// validTag reports whether s meets SES's rule for message tag names and
// values: ASCII letters, digits, underscores and dashes, 1 to 256 of them.
func validTag(s string) bool {
	if len(s) == 0 || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tagByte(s[i]) {
			return false
		}
	}
	return true
}

func tagByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// parseAddress renders one address in RFC 5322 form (display names
// encoded as needed).
func parseAddress(s string) (string, error) {
	a, err := mail.ParseAddress(s)
	if err != nil {
		return "", err
	}
	return a.String(), nil
}
