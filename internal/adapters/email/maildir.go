package email

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/ferryhq/ferry/internal/clock"
)

// ActionIDHeader carries the action id in messages written by MailDir.
const ActionIDHeader = "X-Ferry-Action-Id"

// MailDir is the local mail sink of ferry dev: a Sender that writes each
// message as an RFC 5322 .eml file in a directory instead of sending it, and
// counts them. It goes through the same adapter, so the same at-most-once
// rules apply. Bcc recipients, which a real message would not show, are
// listed in an X-Ferry-Bcc header so a developer can see them.
type MailDir struct {
	dir   string
	clock clock.Clock

	mu    sync.Mutex
	count int
}

var _ Sender = (*MailDir)(nil)

// NewMailDirSender creates dir if needed and returns a sink writing into it.
func NewMailDirSender(dir string, clk clock.Clock) (*MailDir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("email: mail sink directory: %w", err)
	}
	return &MailDir{dir: dir, clock: clk}, nil
}

// Count returns how many messages this sink has written.
func (m *MailDir) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count
}

// Dir returns the directory the sink writes to.
func (m *MailDir) Dir() string { return m.dir }

// SendEmail writes the message. The file appears complete or not at all
// (written to a temporary name, then renamed), so a failure delivered
// nothing. Only Simple content is supported (the email adapter sends no
// other).
func (m *MailDir) SendEmail(ctx context.Context, in *sesv2.SendEmailInput, _ ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if in.Content == nil || in.Content.Simple == nil {
		return nil, errors.New("mail sink: only simple content is supported")
	}
	var nonce [8]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("mail sink: %w", err)
	}
	now := m.clock.Now().UTC()
	actionID := ""
	for _, t := range in.EmailTags {
		if aws.ToString(t.Name) == ActionIDTag {
			actionID = aws.ToString(t.Value)
		}
	}
	messageID := fmt.Sprintf("%s-%s", now.Format("20060102T150405Z"), hex.EncodeToString(nonce[:]))
	raw, err := renderMessage(in, now.Format("Mon, 02 Jan 2006 15:04:05 -0700"), messageID, actionID)
	if err != nil {
		return nil, fmt.Errorf("mail sink: %w", err)
	}

	name := messageID
	if actionID != "" {
		name = actionID + "-" + messageID
	}
	tmp, err := os.CreateTemp(m.dir, ".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("mail sink: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("mail sink: writing: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("mail sink: writing: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(m.dir, name+".eml")); err != nil {
		return nil, fmt.Errorf("mail sink: %w", err)
	}
	m.mu.Lock()
	m.count++
	m.mu.Unlock()
	return &sesv2.SendEmailOutput{MessageId: aws.String(messageID)}, nil
}

// renderMessage writes an RFC 5322 message with a text part, an HTML part
// or both (multipart/alternative), quoted-printable encoded.
func renderMessage(in *sesv2.SendEmailInput, date, messageID, actionID string) ([]byte, error) {
	var buf bytes.Buffer
	var bad string
	header := func(name, value string) {
		// The adapter refuses such values at enqueue; a Sender called
		// directly must not write them either.
		if strings.ContainsAny(value, "\r\n\x00") {
			bad = name
			return
		}
		if value != "" {
			buf.WriteString(foldHeader(name, value))
		}
	}
	msg := in.Content.Simple
	addresses := func(name string, list []string) {
		ascii, err := asciiAddresses(list)
		if err != nil && bad == "" {
			bad = name
		}
		header(name, strings.Join(ascii, ", "))
	}
	addresses("From", []string{aws.ToString(in.FromEmailAddress)})
	if d := in.Destination; d != nil {
		addresses("To", d.ToAddresses)
		addresses("Cc", d.CcAddresses)
		addresses("X-Ferry-Bcc", d.BccAddresses)
	}
	addresses("Reply-To", in.ReplyToAddresses)
	if msg.Subject != nil {
		header("Subject", subjectValue(aws.ToString(msg.Subject.Data)))
	}
	header("Date", date)
	header("Message-ID", "<"+messageID+"@ferry.local>")
	header(ActionIDHeader, actionID)
	for _, t := range in.EmailTags {
		if name := aws.ToString(t.Name); name != ActionIDTag {
			header("X-Ferry-Tag", name+"="+aws.ToString(t.Value))
		}
	}
	header("X-Ferry-Configuration-Set", aws.ToString(in.ConfigurationSetName))
	header("MIME-Version", "1.0")
	if bad != "" {
		return nil, fmt.Errorf("the %s header would hold CR, LF or NUL, or an address SES could not take", bad)
	}

	var text, html string
	if msg.Body != nil {
		if msg.Body.Text != nil {
			text = aws.ToString(msg.Body.Text.Data)
		}
		if msg.Body.Html != nil {
			html = aws.ToString(msg.Body.Html.Data)
		}
	}
	switch {
	case text != "" && html != "":
		mw := multipart.NewWriter(&buf)
		header("Content-Type", mime.FormatMediaType("multipart/alternative", map[string]string{"boundary": mw.Boundary()}))
		buf.WriteString("\r\n")
		for _, part := range []struct{ ctype, body string }{{"text/plain", text}, {"text/html", html}} {
			w, err := mw.CreatePart(textproto.MIMEHeader{
				"Content-Type":              {part.ctype + "; charset=utf-8"},
				"Content-Transfer-Encoding": {"quoted-printable"},
			})
			if err != nil {
				return nil, err
			}
			if err := writeQP(w, part.body); err != nil {
				return nil, err
			}
		}
		if err := mw.Close(); err != nil {
			return nil, err
		}
	default:
		ctype, body := "text/plain", text
		if html != "" {
			ctype, body = "text/html", html
		}
		header("Content-Type", ctype+"; charset=utf-8")
		header("Content-Transfer-Encoding", "quoted-printable")
		buf.WriteString("\r\n")
		if err := writeQP(&buf, body); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

func writeQP(w interface{ Write([]byte) (int, error) }, s string) error {
	qp := quotedprintable.NewWriter(w)
	if _, err := qp.Write([]byte(s)); err != nil {
		return err
	}
	return qp.Close()
}
