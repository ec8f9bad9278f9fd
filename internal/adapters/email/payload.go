package email

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"strings"

	"github.com/ferryhq/ferry/internal/adapters/payloadcheck"
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

// Limits of the header-bound fields (API.md, "email"): an address is at
// most MaxAddress bytes (RFC 5321: 64 for the local part, 255 for the
// domain), an address with its display name and the subject at most
// MaxHeaderLine bytes (RFC 5322's line limit), a configuration set name 1
// to MaxConfigurationSet ASCII letters, digits, '_' and '-' (SES's rule).
const (
	MaxAddress          = 320
	MaxHeaderLine       = 998
	MaxConfigurationSet = 64
)

// ActionIDTag names the SES message tag that carries the action id.
const ActionIDTag = "ferry_action_id"

// decodePayload decodes and checks a payload; errors are *outbox.PayloadError.
// Every field that reaches a message header or an SES request field is
// checked for control characters and length, so no payload can add or
// split a header (issue 13).
func decodePayload(raw json.RawMessage) (*Payload, error) {
	var p Payload
	if problem := payloadcheck.Decode(raw, &p, Kind); problem != nil {
		return nil, &outbox.PayloadError{Field: problem.Field, Message: problem.Message}
	}
	if p.From == "" {
		return nil, &outbox.PayloadError{Field: "from", Message: "required"}
	}
	if err := checkAddress(p.From); err != nil {
		return nil, &outbox.PayloadError{Field: "from", Message: err.Error()}
	}
	if err := checkRecipients(&p); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.Subject) == "" {
		return nil, &outbox.PayloadError{Field: "subject", Message: "required"}
	}
	if problem := payloadcheck.HeaderText(p.Subject, MaxHeaderLine); problem != "" {
		return nil, &outbox.PayloadError{Field: "subject", Message: problem}
	}
	if p.Text == "" && p.HTML == "" {
		return nil, &outbox.PayloadError{Field: "text", Message: "text or html is required"}
	}
	if p.ConfigurationSet != "" && (len(p.ConfigurationSet) > MaxConfigurationSet || !validTag(p.ConfigurationSet)) {
		return nil, &outbox.PayloadError{Field: "configuration_set",
			Message: fmt.Sprintf("must be 1 to %d ASCII letters, digits, _ and - (an SES configuration set name)", MaxConfigurationSet)}
	}
	return &p, checkTags(p.Tags)
}

// checkRecipients checks every address of to, cc, bcc and reply_to, and
// SES's limits on their number.
func checkRecipients(p *Payload) error {
	lists := []struct {
		field string
		addrs []string
	}{{"to", p.To}, {"cc", p.Cc}, {"bcc", p.Bcc}, {"reply_to", p.ReplyTo}}
	recipients := 0
	for _, l := range lists {
		for i, a := range l.addrs {
			if err := checkAddress(a); err != nil {
				return &outbox.PayloadError{Field: fmt.Sprintf("%s[%d]", l.field, i), Message: err.Error()}
			}
		}
		if l.field != "reply_to" {
			recipients += len(l.addrs)
		}
	}
	if recipients == 0 {
		return &outbox.PayloadError{Field: "to", Message: "at least one recipient (to, cc or bcc) is required"}
	}
	if recipients > MaxRecipients {
		return &outbox.PayloadError{Field: "to", Message: fmt.Sprintf("%d recipients; SES allows at most %d per message", recipients, MaxRecipients)}
	}
	return nil
}

// checkTags checks the message tags against SES's rule; names and values
// are header-bound (the mail sink writes them as headers).
func checkTags(tags map[string]string) error {
	for name, value := range tags {
		if !validTag(name) {
			return &outbox.PayloadError{Field: "tags",
				Message: fmt.Sprintf("tag name %q: tag names may hold only ASCII letters, digits, _ and - (1 to 256)", name)}
		}
		if name == ActionIDTag {
			return &outbox.PayloadError{Field: "tags." + name, Message: "reserved for the action id"}
		}
		if !validTag(value) {
			return &outbox.PayloadError{Field: "tags." + name, Message: "tag values may hold only ASCII letters, digits, _ and - (1 to 256)"}
		}
	}
	return nil
}

// checkAddress accepts one RFC 5322 address, with or without a display
// name. The text as given and the display name as decoded (RFC 2047
// encoded words decode to any bytes) must both be free of control
// characters.
func checkAddress(s string) error {
	if problem := payloadcheck.HeaderText(s, MaxHeaderLine); problem != "" {
		return errors.New(problem)
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return fmt.Errorf("not an email address: %s", strings.TrimPrefix(err.Error(), "mail: "))
	}
	if !strings.Contains(a.Address, "@") {
		return fmt.Errorf("not an email address: %q", s)
	}
	if len(a.Address) > MaxAddress {
		return fmt.Errorf("the address is %d bytes; at most %d are allowed", len(a.Address), MaxAddress)
	}
	if payloadcheck.ContainsControl(a.Name) || payloadcheck.ContainsControl(a.Address) {
		return errors.New("must not contain control characters (CR, LF, NUL and the like), encoded or not")
	}
	ascii, err := asciiAddress(s)
	if err != nil {
		return err
	}
	if len(ascii) > MaxHeaderLine {
		return fmt.Errorf("the address with its encoded display name is %d bytes; at most %d are allowed", len(ascii), MaxHeaderLine)
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
