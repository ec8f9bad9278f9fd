package email_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/adapters/email"
	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/outbox"
)

var start = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// sesClient is the real SDK client pointed at a stand-in.
func sesClient(endpoint string, creds aws.CredentialsProvider) *sesv2.Client {
	if creds == nil {
		creds = credentials.NewStaticCredentialsProvider("AKIDSTANDIN", "standin-secret", "")
	}
	return sesv2.New(sesv2.Options{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  creds,
	})
}

func newAdapter(t *testing.T, sender email.Sender, filter email.RecipientFilter) *email.Adapter {
	t.Helper()
	a, err := email.New(email.Options{Sender: sender, Filter: filter})
	require.NoError(t, err)
	return a
}

const payload = `{
	"from": "Shop <shop@example.com>",
	"to": ["ann@example.org", "Bob Müller <bob@example.org>"],
	"cc": ["carol@example.org"],
	"bcc": ["audit@example.com"],
	"reply_to": ["support@example.com"],
	"subject": "Your order 42 shipped — thanks",
	"text": "Hello,\nyour order is on its way.",
	"html": "<p>Hello,<br>your order is on its way.</p>",
	"configuration_set": "transactional",
	"tags": {"campaign": "shipping", "order": "42"}
}`

func action(id, p string) outbox.Action {
	return outbox.Action{ID: id, Kind: email.Kind, WorkspaceID: "ws1", Payload: json.RawMessage(p)}
}

func attempt(ctx context.Context, a *email.Adapter, act outbox.Action) outbox.Result {
	att := &outbox.Attempt{Action: act, Number: 1}
	if res := a.Prepare(ctx, att); res.Outcome != outbox.OutcomeNone {
		return res
	}
	return a.Execute(ctx, att)
}

func TestSendThroughSESStandIn(t *testing.T) {
	t.Parallel()
	ses := newSESStandIn(t, accept)
	a := newAdapter(t, sesClient(ses.URL, nil), nil)
	res := attempt(context.Background(), a, action("3-000042", payload))
	require.Equal(t, outbox.OutcomeDone, res.Outcome, res.Err)
	require.Equal(t, "010001-standin-message", res.ReadbackRef)

	require.Equal(t, []string{"POST /v2/email/outbound-emails"}, ses.paths)
	got := ses.received()
	require.Len(t, got, 1)
	req := got[0]
	require.Equal(t, "Shop <shop@example.com>", req.FromEmailAddress)
	// SES takes 7-bit addresses only: a display name as encoded words.
	require.Equal(t, []string{"ann@example.org", "=?utf-8?q?Bob_M=C3=BCller?= <bob@example.org>"}, req.Destination.ToAddresses)
	require.Equal(t, []string{"carol@example.org"}, req.Destination.CcAddresses)
	require.Equal(t, []string{"audit@example.com"}, req.Destination.BccAddresses)
	require.Equal(t, []string{"support@example.com"}, req.ReplyToAddresses)
	require.Equal(t, "Your order 42 shipped — thanks", req.Content.Simple.Subject.Data)
	require.Equal(t, "UTF-8", req.Content.Simple.Subject.Charset)
	require.NotNil(t, req.Content.Simple.Body.Text)
	require.NotNil(t, req.Content.Simple.Body.Html)
	require.Equal(t, "transactional", req.ConfigurationSetName)
	require.Equal(t, []struct{ Name, Value string }{
		{"ferry_action_id", "3-000042"}, {"campaign", "shipping"}, {"order", "42"},
	}, req.EmailTags)
}

func TestErrorClassesThroughSESStandIn(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		respond  func(*sesStandIn) http.HandlerFunc
		outcome  outbox.Outcome
		reason   outbox.StopReason
		wait     time.Duration
		requests int
	}{
		{"TooManyRequests", fixed(awsError(429, "TooManyRequestsException")), outbox.OutcomeDefer, "", 2 * time.Second, 1},
		{"Throttling", fixed(awsError(400, "ThrottlingException")), outbox.OutcomeDefer, "", 2 * time.Second, 1},
		{"MaximumSendingRate", fixed(awsErrorMessage(400, "ThrottlingException", "Maximum sending rate exceeded.")), outbox.OutcomeDefer, "", 2 * time.Second, 1},
		{"DailyQuota", fixed(awsErrorMessage(400, "ThrottlingException", "Daily message quota exceeded.")), outbox.OutcomeDefer, "", time.Hour, 1},
		{"LimitExceeded", fixed(awsError(400, "LimitExceededException")), outbox.OutcomeDefer, "", time.Hour, 1},
		{"SendingPaused", fixed(awsError(400, "SendingPausedException")), outbox.OutcomeDefer, "", 15 * time.Minute, 1},
		{"MessageRejected", fixed(awsError(400, "MessageRejected")), outbox.OutcomeFailed, outbox.StopRejected, 0, 1},
		{"MailFromNotVerified", fixed(awsError(400, "MailFromDomainNotVerifiedException")), outbox.OutcomeFailed, email.StopSenderNotVerified, 0, 1},
		{"InvalidAddress", fixed(awsError(400, "BadRequestException")), outbox.OutcomeFailed, outbox.StopRejected, 0, 1},
		{"ConfigurationSetNotFound", fixed(awsError(404, "NotFoundException")), outbox.OutcomeFailed, outbox.StopRejected, 0, 1},
		{"AccountSuspended", fixed(awsError(400, "AccountSuspendedException")), outbox.OutcomeFailed, email.StopAccountSuspended, 0, 1},
		{"UnknownClientError", fixed(awsError(400, "SomethingNewException")), outbox.OutcomeFailed, outbox.StopRejected, 0, 1},
		{"UnrecognizedClient", fixed(awsError(403, "UnrecognizedClientException")), outbox.OutcomeRetry, "", 0, 1},
		{"AccessDenied", fixed(awsError(403, "AccessDeniedException")), outbox.OutcomeRetry, "", 0, 1},
		{"InternalFailure", fixed(awsError(500, "InternalFailure")), outbox.OutcomeUncertain, "", 0, 1},
		{"ServiceUnavailable", fixed(awsError(503, "ServiceUnavailable")), outbox.OutcomeUncertain, "", 0, 1},
		{"UnreadableSuccess", fixed(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"MessageId":`)
		}), outbox.OutcomeUncertain, "", 0, 1},
		{"AcceptThenDrop", fixed(drop), outbox.OutcomeUncertain, "", 0, 1},
		{"AcceptThenStall", func(s *sesStandIn) http.HandlerFunc { return s.stall }, outbox.OutcomeUncertain, "", 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ses := newSESStandIn(t, nil)
			ses.setRespond(c.respond(ses))
			a := newAdapter(t, sesClient(ses.URL, nil), nil)
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			res := attempt(ctx, a, action("1-1", payload))
			require.Equal(t, c.outcome, res.Outcome, res.Err)
			require.Equal(t, c.reason, res.StopReason)
			require.Equal(t, c.wait, res.Wait)
			require.Error(t, res.Err)
			// The SDK's retries are off: whatever happened, SES saw the
			// message at most once.
			require.Len(t, ses.received(), c.requests)
		})
	}
}

func fixed(h http.HandlerFunc) func(*sesStandIn) http.HandlerFunc {
	return func(*sesStandIn) http.HandlerFunc { return h }
}

func TestFailuresBeforeSendingRetry(t *testing.T) {
	t.Parallel()
	t.Run("ConnectionRefused", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		a := newAdapter(t, sesClient("http://"+addr, nil), nil)
		res := attempt(context.Background(), a, action("1-2", payload))
		require.Equal(t, outbox.OutcomeRetry, res.Outcome, res.Err)
	})
	t.Run("CredentialsUnavailable", func(t *testing.T) {
		t.Parallel()
		ses := newSESStandIn(t, accept)
		noCreds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, errors.New("no credentials in this test")
		})
		a := newAdapter(t, sesClient(ses.URL, noCreds), nil)
		res := attempt(context.Background(), a, action("1-3", payload))
		require.Equal(t, outbox.OutcomeRetry, res.Outcome, res.Err)
		require.Empty(t, ses.received())
	})
	t.Run("ContextAlreadyEnded", func(t *testing.T) {
		t.Parallel()
		ses := newSESStandIn(t, accept)
		a := newAdapter(t, sesClient(ses.URL, nil), nil)
		ctx, cancel := context.WithCancel(context.Background())
		att := &outbox.Attempt{Action: action("1-4", payload), Number: 1}
		require.Equal(t, outbox.OutcomeNone, a.Prepare(ctx, att).Outcome)
		cancel()
		res := a.Execute(ctx, att)
		require.Equal(t, outbox.OutcomeRetry, res.Outcome, res.Err)
		require.Empty(t, ses.received())
	})
}

// TestNewSESClientHonoursEndpointVariable reaches the stand-in the way
// ferry dev and the drainer do: through AWS_ENDPOINT_URL_SESV2 and the
// default configuration chain. (It sets the environment, so it cannot run
// in parallel.)
func TestNewSESClientHonoursEndpointVariable(t *testing.T) {
	ses := newSESStandIn(t, awsError(500, "InternalFailure"))
	dir := t.TempDir()
	t.Setenv("AWS_ENDPOINT_URL_SESV2", ses.URL)
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDSTANDIN")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "standin-secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_MAX_ATTEMPTS", "5") // must not make the client send twice

	client, err := email.NewSESClient(context.Background())
	require.NoError(t, err)
	a := newAdapter(t, client, nil)
	res := attempt(context.Background(), a, action("1-5", payload))
	require.Equal(t, outbox.OutcomeUncertain, res.Outcome, res.Err)
	require.Len(t, ses.received(), 1)

	ses.setRespond(accept)
	res = attempt(context.Background(), a, action("1-6", payload))
	require.Equal(t, outbox.OutcomeDone, res.Outcome, res.Err)
	require.Len(t, ses.received(), 2)
}

// suppressions is a RecipientFilter dropping listed addresses.
type suppressions struct {
	dropped map[string]bool
	err     error
}

func (s suppressions) KeepRecipients(_ context.Context, _ string, addrs []string) ([]string, error) {
	if s.err != nil {
		return nil, s.err
	}
	var keep []string
	for _, a := range addrs {
		if !s.dropped[a] {
			keep = append(keep, a)
		}
	}
	return keep, nil
}

func TestPrepareDropsSuppressedRecipients(t *testing.T) {
	t.Parallel()
	ses := newSESStandIn(t, accept)
	filter := suppressions{dropped: map[string]bool{"Bob Müller <bob@example.org>": true, "carol@example.org": true}}
	a := newAdapter(t, sesClient(ses.URL, nil), filter)
	res := attempt(context.Background(), a, action("1-7", payload))
	require.Equal(t, outbox.OutcomeDone, res.Outcome, res.Err)
	req := ses.received()[0]
	require.Equal(t, []string{"ann@example.org"}, req.Destination.ToAddresses)
	require.Empty(t, req.Destination.CcAddresses)
	require.Equal(t, []string{"audit@example.com"}, req.Destination.BccAddresses)

	everyone := suppressions{dropped: map[string]bool{
		"ann@example.org": true, "Bob Müller <bob@example.org>": true, "carol@example.org": true, "audit@example.com": true,
	}}
	a = newAdapter(t, sesClient(ses.URL, nil), everyone)
	res = attempt(context.Background(), a, action("1-8", payload))
	require.Equal(t, outbox.OutcomeCancelled, res.Outcome)
	require.Equal(t, email.StopAllSuppressed, res.StopReason)

	a = newAdapter(t, sesClient(ses.URL, nil), suppressions{err: errors.New("suppression list unavailable")})
	res = attempt(context.Background(), a, action("1-9", payload))
	require.Equal(t, outbox.OutcomeRetry, res.Outcome)
	require.Len(t, ses.received(), 1)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	a := newAdapter(t, email.NewMailDirSenderMust(t), nil)
	require.NoError(t, a.Validate("", json.RawMessage(payload)))
	require.NoError(t, a.Validate("", json.RawMessage(`{"from":"a@example.com","bcc":["b@example.com"],"subject":"s","html":"<p>x</p>"}`)))
	bad := map[string]string{
		`{"to":["b@example.com"],"subject":"s","text":"t"}`:                                                       "from",
		`{"from":"nobody","to":["b@example.com"],"subject":"s","text":"t"}`:                                       "from",
		`{"from":"a@example.com","subject":"s","text":"t"}`:                                                       "to",
		`{"from":"a@example.com","to":["b@example.com","not an address"],"subject":"s","text":"t"}`:               "to[1]",
		`{"from":"a@example.com","to":["b@example.com"],"reply_to":["x"],"subject":"s","text":"t"}`:               "reply_to[0]",
		`{"from":"a@example.com","to":["b@example.com"],"text":"t"}`:                                              "subject",
		`{"from":"a@example.com","to":["b@example.com"],"subject":"a\nBcc: x@y.z","text":"t"}`:                    "subject",
		`{"from":"a@example.com","to":["b@example.com"],"subject":"s"}`:                                           "text",
		`{"from":"a@example.com","to":["b@example.com"],"subject":"s","text":"t","tags":{"ferry_action_id":"x"}}`: "tags.ferry_action_id",
		`{"from":"a@example.com","to":["b@example.com"],"subject":"s","text":"t","tags":{"bad name":"x"}}`:        "tags",
		`{"from":"a@example.com","to":["b@example.com"],"subject":"s","text":"t","tags":{"k":"a.b"}}`:             "tags.k",
		`{"from":"a@example.com","to":["b@example.com"],"subject":"s","text":"t","attachments":[]}`:               "attachments",
	}
	for p, field := range bad {
		var pe *outbox.PayloadError
		require.ErrorAs(t, a.Validate("", json.RawMessage(p)), &pe, p)
		require.Equal(t, field, pe.Field, p)
	}
	many := make([]string, email.MaxRecipients+1)
	for i := range many {
		many[i] = "r@example.com"
	}
	raw, err := json.Marshal(map[string]any{"from": "a@example.com", "to": many, "subject": "s", "text": "t"})
	require.NoError(t, err)
	require.Error(t, a.Validate("", raw))
}

func TestTagValue(t *testing.T) {
	t.Parallel()
	require.Equal(t, "3-000042", email.TagValue("3-000042"))
	v := email.TagValue("ws/1:order#42")
	require.True(t, strings.HasPrefix(v, "b64_"))
	require.Regexp(t, `^[A-Za-z0-9_-]{1,256}$`, v)
}

func TestMailDirSink(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "mail")
	sink, err := email.NewMailDirSender(dir, clock.NewManual(start))
	require.NoError(t, err)
	a := newAdapter(t, sink, nil)
	res := attempt(context.Background(), a, action("3-000042", payload))
	require.Equal(t, outbox.OutcomeDone, res.Outcome, res.Err)
	require.NotEmpty(t, res.ReadbackRef)
	require.Equal(t, 1, sink.Count())

	files, err := filepath.Glob(filepath.Join(dir, "*.eml"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	require.True(t, strings.HasPrefix(filepath.Base(files[0]), "3-000042-"))
	f, err := os.Open(files[0])
	require.NoError(t, err)
	defer f.Close()
	msg, err := mail.ReadMessage(f)
	require.NoError(t, err)
	require.Equal(t, "3-000042", msg.Header.Get(email.ActionIDHeader))
	dec := new(mime.WordDecoder)
	subject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
	require.NoError(t, err)
	require.Equal(t, "Your order 42 shipped — thanks", subject)
	to, err := msg.Header.AddressList("To")
	require.NoError(t, err)
	require.Len(t, to, 2)
	require.Equal(t, "Bob Müller", to[1].Name)
	date, err := msg.Header.Date()
	require.NoError(t, err)
	require.True(t, date.Equal(start))
	require.Contains(t, msg.Header.Get("X-Ferry-Bcc"), "audit@example.com")

	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	require.NoError(t, err)
	require.Equal(t, "multipart/alternative", mediaType)
	mr := multipart.NewReader(msg.Body, params["boundary"])
	var types []string
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		body, err := io.ReadAll(part) // NextPart decodes quoted-printable
		require.NoError(t, err)
		types = append(types, part.Header.Get("Content-Type"))
		require.Contains(t, string(body), "your order is on its way")
	}
	require.Equal(t, []string{"text/plain; charset=utf-8", "text/html; charset=utf-8"}, types)

	// No temporary files are left behind.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
}

// TestMailDirSinkFoldsAndEncodes is issue 28 item 14: a 998-byte
// non-ASCII subject was written as one Subject line of 3,653 characters
// (RFC 5322 caps a line at 998), and josé@exámple.com went into To: as
// raw 8-bit. Now every header line of the .eml is 7-bit and at most 76
// characters unless one address alone is longer, the subject decodes back
// to itself, a non-ASCII domain goes out as punycode (to SES too), and a
// non-ASCII local part is refused at enqueue, naming the field.
func TestMailDirSinkFoldsAndEncodes(t *testing.T) {
	t.Parallel()
	subject := strings.Repeat("é", 499) // 998 bytes, the most a subject may be
	long := strings.Repeat("w", 120)    // one word longer than a line
	for name, c := range map[string]struct {
		subject, to string
		wantTo      string // the To address as parsed back
	}{
		"NonASCIISubject": {subject, `"Zoë Ünder" <zoe@xn--exmple-qta.com>`, "zoe@xn--exmple-qta.com"},
		"LongASCIIWord":   {"Order " + long + " shipped", "ann@exámple.com", "ann@xn--exmple-qta.com"},
		"ManyWords":       {strings.Repeat("word ", 199) + "end", "ann@example.org", "ann@example.org"},
		"LooksEncoded":    {"=?utf-8?q?not_encoded?=", "ann@example.org", "ann@example.org"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			sink, err := email.NewMailDirSender(dir, clock.NewManual(start))
			require.NoError(t, err)
			a := newAdapter(t, sink, nil)
			raw := withField(t, "subject", c.subject)
			raw = withFieldIn(t, raw, "to", []string{c.to, "Bob Müller <bob@example.org>"})
			res := attempt(context.Background(), a, action("3-000043", string(raw)))
			require.Equal(t, outbox.OutcomeDone, res.Outcome, res.Err)
			files, err := filepath.Glob(filepath.Join(dir, "*.eml"))
			require.NoError(t, err)
			require.Len(t, files, 1)
			data, err := os.ReadFile(files[0])
			require.NoError(t, err)
			head, _, ok := strings.Cut(string(data), "\r\n\r\n")
			require.True(t, ok)
			for _, line := range strings.Split(head, "\r\n") {
				for i := 0; i < len(line); i++ {
					require.Less(t, line[i], byte(0x80), "8-bit byte in header line %q", line)
				}
				require.LessOrEqual(t, len(line), 998, "RFC 5322 line limit")
				if !strings.Contains(line, long) {
					require.LessOrEqual(t, len(line), 76, "folded: %q", line)
				}
			}
			msg, err := mail.ReadMessage(strings.NewReader(string(data)))
			require.NoError(t, err)
			got, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
			require.NoError(t, err)
			require.Equal(t, c.subject, got, "the subject decodes back to itself")
			to, err := msg.Header.AddressList("To")
			require.NoError(t, err)
			require.Len(t, to, 2)
			require.Equal(t, c.wantTo, to[0].Address)
			require.Equal(t, "Bob Müller", to[1].Name)
		})
	}

	a := newAdapter(t, email.NewMailDirSenderMust(t), nil)
	err := a.Validate("", withField(t, "to", []string{"josé@exámple.com"}))
	var pe *outbox.PayloadError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "to[0]", pe.Field)
	require.Contains(t, pe.Message, "the part before the @ must be ASCII")
	err = a.Validate("", withField(t, "from", "shop@ex ample.com"))
	require.ErrorAs(t, err, &pe)
	require.NoError(t, a.Validate("", withField(t, "to", []string{"jose@exámple.com"})), "a non-ASCII domain is sent as punycode")
}

// withFieldIn returns raw, a JSON payload, with one field replaced.
func withFieldIn(t *testing.T, raw []byte, field string, v any) []byte {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	m[field] = v
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}
