package email

import (
	"bytes"
	"net/mail"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/ferryhq/ferry/internal/adapters/payloadcheck"
)

// renderedHeaders are the headers the mail sink writes; a payload can add
// none (X-Ferry-Tag once per tag).
var renderedHeaders = []string{
	"From", "To", "Cc", "X-Ferry-Bcc", "Reply-To", "Subject", "Date", "Message-ID", ActionIDHeader,
	"X-Ferry-Tag", "X-Ferry-Configuration-Set", "MIME-Version", "Content-Type", "Content-Transfer-Encoding",
}

// FuzzHeaders proves that no payload the adapter accepts can put CR, LF or
// NUL into a header: for every accepted payload, the SES request's
// header-bound fields hold no control character, and the message the mail
// sink renders has exactly the header lines it writes itself, each one line
// of a known header.
func FuzzHeaders(f *testing.F) {
	for _, s := range []string{
		`{"from":"a@example.com","to":["b@example.com"],"subject":"s","text":"t","configuration_set":"cs\r\nBcc: victim@example.net"}`,
		`{"from":"Shop <a@example.com>","to":["b@example.com"],"cc":["c@example.com"],"bcc":["d@example.com"],"reply_to":["e@example.com"],"subject":"Grüße","text":"t","html":"<p>h</p>","configuration_set":"cs","tags":{"k":"v","k2":"v2"}}`,
		`{"from":"=?utf-8?q?Shop=0D=0ABcc:_v@example.net?= <a@example.com>","to":["b@example.com"],"subject":"s","text":"t"}`,
		`{"from":"\"Shop\r\nBcc: v@example.net\" <a@example.com>","to":["b@example.com"],"subject":"s","text":"t"}`,
		`{"from":"a@example.com","to":["b@example.com"],"subject":"=?utf-8?q?a=0D=0AB?=","text":"t"}`,
		`{"from":"a@example.com","to":["(c\r\n) b@example.com"],"subject":"s\tt","text":"t"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := decodePayload(raw)
		if err != nil {
			return
		}
		in, err := buildInput(p, "1-1")
		if err != nil {
			t.Fatalf("accepted payload does not build an SES request: %v", err)
		}
		fields := []string{aws.ToString(in.FromEmailAddress), aws.ToString(in.ConfigurationSetName), aws.ToString(in.Content.Simple.Subject.Data)}
		fields = append(fields, slices.Concat(in.Destination.ToAddresses, in.Destination.CcAddresses, in.Destination.BccAddresses, in.ReplyToAddresses)...)
		for _, tag := range in.EmailTags {
			fields = append(fields, aws.ToString(tag.Name), aws.ToString(tag.Value))
		}
		for _, v := range fields {
			if payloadcheck.ContainsControl(v) {
				t.Fatalf("accepted payload puts %q into an SES request field", v)
			}
		}
		msg, err := renderMessage(in, "Mon, 30 Nov 2026 12:00:00 +0000", "m", "1-1")
		if err != nil {
			t.Fatalf("accepted payload does not render: %v", err)
		}
		head, _, ok := bytes.Cut(msg, []byte("\r\n\r\n"))
		if !ok {
			t.Fatal("no end of the header block")
		}
		tags := 0
		for _, line := range strings.Split(string(head), "\r\n") {
			if strings.ContainsAny(line, "\r\n\x00") {
				t.Fatalf("header line %q holds CR, LF or NUL", line)
			}
			if len(line) > MaxHeaderLine || !isASCII(line) {
				t.Fatalf("header line of %d bytes, or not 7-bit (RFC 5322: at most %d, ASCII): %q", len(line), MaxHeaderLine, line)
			}
			if strings.HasPrefix(line, " ") {
				continue // a folded header's next line
			}
			name, _, ok := strings.Cut(line, ":")
			if !ok || !slices.Contains(renderedHeaders, name) {
				t.Fatalf("header line %q is not one the sink writes", line)
			}
			if name == "X-Ferry-Tag" {
				tags++
			}
		}
		if tags != len(p.Tags) {
			t.Fatalf("%d X-Ferry-Tag lines for %d tags", tags, len(p.Tags))
		}
		parsed, err := mail.ReadMessage(bytes.NewReader(msg))
		if err != nil {
			t.Fatalf("the rendered message does not parse: %v", err)
		}
		for name, values := range parsed.Header {
			if name != "X-Ferry-Tag" && len(values) != 1 {
				t.Fatalf("header %s appears %d times", name, len(values))
			}
		}
		if from, err := mail.ParseAddress(parsed.Header.Get("From")); err != nil || from.Address != mustAddress(t, aws.ToString(in.FromEmailAddress)) {
			t.Fatalf("From header %q is not the payload's sender %q", parsed.Header.Get("From"), p.From)
		}
	})
}

func mustAddress(t *testing.T, s string) string {
	a, err := mail.ParseAddress(s)
	if err != nil {
		t.Fatalf("accepted sender %q does not parse: %v", s, err)
	}
	return a.Address
}
