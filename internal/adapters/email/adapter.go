package email

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Kind is the name of the email kind.
const Kind = "email"

// Stop reasons the email adapter adds to outbox's.
const (
	// StopAllSuppressed: every recipient was dropped by the RecipientFilter
	// (unsubscribed, bounced, complained) before the send.
	StopAllSuppressed outbox.StopReason = "ALL_RECIPIENTS_SUPPRESSED"
	// StopSenderNotVerified: SES refused the sender (its identity or its MAIL
	// FROM domain is not verified).
	StopSenderNotVerified outbox.StopReason = "SENDER_NOT_VERIFIED"
	// StopAccountSuspended: SES suspended the account's ability to send.
	StopAccountSuspended outbox.StopReason = "ACCOUNT_SUSPENDED"
)

// Sender is the one SES v2 call the adapter makes. *sesv2.Client implements
// it, and so does MailDir, the local sink.
type Sender interface {
	SendEmail(ctx context.Context, in *sesv2.SendEmailInput, optFns ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error)
}

// RecipientFilter lets a deployment drop recipients who must not get mail
// any more (unsubscribed, suppressed). It is called before every attempt, so
// a retry never mails someone who left in the meantime.
type RecipientFilter interface {
	// KeepRecipients returns the subset of addrs (as given) that may still
	// be mailed. An error retries the attempt (nothing was sent).
	KeepRecipients(ctx context.Context, workspaceID string, addrs []string) ([]string, error)
}

// Options configure the adapter.
type Options struct {
	// Sender sends the message: an SES v2 client (NewSESClient) or a
	// MailDir. Required.
	Sender Sender
	// Filter drops recipients before every attempt; nil keeps everyone.
	Filter RecipientFilter
	// ThrottleWait is the Defer wait after SES throttled the send
	// (TooManyRequests: the per-second rate). Default 2 s.
	ThrottleWait time.Duration
	// QuotaWait is the Defer wait after SES refused for a sending limit
	// (LimitExceeded: usually the daily quota). Default 1 h.
	QuotaWait time.Duration
	// PausedWait is the Defer wait while sending is paused for the account
	// or configuration set. Default 15 min.
	PausedWait time.Duration
}

// WithDefaults returns the options with every zero field set to its default.
func (o Options) WithDefaults() Options {
	if o.ThrottleWait == 0 {
		o.ThrottleWait = 2 * time.Second
	}
	if o.QuotaWait == 0 {
		o.QuotaWait = time.Hour
	}
	if o.PausedWait == 0 {
		o.PausedWait = 15 * time.Minute
	}
	return o
}

// Adapter carries out email actions. It is safe for concurrent use.
type Adapter struct {
	opts Options
}

var (
	_ outbox.Adapter  = (*Adapter)(nil)
	_ outbox.Preparer = (*Adapter)(nil)
)

// New returns an email adapter.
func New(opts Options) (*Adapter, error) {
	opts = opts.WithDefaults()
	if opts.Sender == nil {
		return nil, errors.New("email: Sender is required")
	}
	if opts.ThrottleWait < 0 || opts.QuotaWait < 0 || opts.PausedWait < 0 {
		return nil, errors.New("email: waits cannot be negative")
	}
	return &Adapter{opts: opts}, nil
}

// NewSESClient returns an SES v2 client from the default AWS configuration
// (environment, shared files, role), which honours AWS_ENDPOINT_URL_SESV2
// and AWS_ENDPOINT_URL. Its retries are off: the adapter decides alone
// whether a send may be repeated.
func NewSESClient(ctx context.Context, optFns ...func(*config.LoadOptions) error) (*sesv2.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, optFns...)
	if err != nil {
		return nil, fmt.Errorf("email: loading AWS configuration: %w", err)
	}
	return sesv2.NewFromConfig(cfg, noRetries), nil
}

// noRetries turns the SDK's retries off. It is applied to the client and
// again to every call, so a client built elsewhere cannot send twice either.
func noRetries(o *sesv2.Options) {
	o.Retryer = aws.NopRetryer{}
	o.RetryMaxAttempts = 1
}

// Spec declares the email kind: one payload shape, at most once. SES's
// event publishing reports what became of each email (ParseSESEvent), kept
// as delivery evidence beside its action.
func (a *Adapter) Spec() outbox.KindSpec {
	return outbox.KindSpec{Name: Kind, Class: outbox.AtMostOnce, VariantMode: outbox.SingleShape, DeliveryEvidence: true}
}

// Validate checks a payload at enqueue time.
func (a *Adapter) Validate(_ string, payload json.RawMessage) error {
	_, err := decodePayload(payload)
	return err
}

// Prepare builds the SendEmailInput again, after dropping the recipients the
// RecipientFilter refuses. No recipient left → Cancelled
// (ALL_RECIPIENTS_SUPPRESSED); a filter error → Retry.
func (a *Adapter) Prepare(ctx context.Context, att *outbox.Attempt) outbox.Result {
	p, err := decodePayload(att.Action.Payload)
	if err != nil {
		return outbox.Failed(outbox.StopRejected, err)
	}
	if a.opts.Filter != nil {
		all := slices.Concat(p.To, p.Cc, p.Bcc)
		kept, err := a.opts.Filter.KeepRecipients(ctx, att.Action.WorkspaceID, all)
		if err != nil {
			return outbox.Retry(fmt.Errorf("email: recipient filter: %w", err))
		}
		keep := make(map[string]bool, len(kept))
		for _, k := range kept {
			keep[k] = true
		}
		drop := func(l []string) []string {
			return slices.DeleteFunc(slices.Clone(l), func(s string) bool { return !keep[s] })
		}
		p.To, p.Cc, p.Bcc = drop(p.To), drop(p.Cc), drop(p.Bcc)
		if len(p.To)+len(p.Cc)+len(p.Bcc) == 0 {
			return outbox.Cancelled(StopAllSuppressed, errors.New("email: every recipient was suppressed"))
		}
	}
	in, err := buildInput(p, att.Action.ID)
	if err != nil {
		return outbox.Failed(outbox.StopRejected, err)
	}
	att.Prepared = in
	return outbox.Result{}
}

// Execute sends the prepared message once and maps the answer (see
// classify).
func (a *Adapter) Execute(ctx context.Context, att *outbox.Attempt) outbox.Result {
	in, ok := att.Prepared.(*sesv2.SendEmailInput)
	if !ok {
		if res := a.Prepare(ctx, att); res.Outcome != outbox.OutcomeNone {
			return res
		}
		in = att.Prepared.(*sesv2.SendEmailInput)
	}
	if err := ctx.Err(); err != nil {
		// Nothing has been sent yet.
		return outbox.Retry(fmt.Errorf("email: %w", err))
	}
	out, err := a.opts.Sender.SendEmail(ctx, in, noRetries)
	if err != nil {
		return a.classify(err)
	}
	return outbox.Done(aws.ToString(out.MessageId))
}

// buildInput turns a payload into the SendEmail request, its addresses in
// 7-bit ASCII (asciiAddress: SES takes no other).
func buildInput(p *Payload, actionID string) (*sesv2.SendEmailInput, error) {
	utf8 := aws.String("UTF-8")
	body := &types.Body{}
	if p.Text != "" {
		body.Text = &types.Content{Data: aws.String(p.Text), Charset: utf8}
	}
	if p.HTML != "" {
		body.Html = &types.Content{Data: aws.String(p.HTML), Charset: utf8}
	}
	tags := []types.MessageTag{{Name: aws.String(ActionIDTag), Value: aws.String(TagValue(actionID))}}
	for _, name := range slices.Sorted(maps.Keys(p.Tags)) {
		tags = append(tags, types.MessageTag{Name: aws.String(name), Value: aws.String(p.Tags[name])})
	}
	var lists [5][]string
	for i, l := range [][]string{{p.From}, p.To, p.Cc, p.Bcc, p.ReplyTo} {
		var err error
		if lists[i], err = asciiAddresses(l); err != nil {
			return nil, fmt.Errorf("email: %w", err)
		}
	}
	in := &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(lists[0][0]),
		Destination: &types.Destination{
			ToAddresses:  lists[1],
			CcAddresses:  lists[2],
			BccAddresses: lists[3],
		},
		ReplyToAddresses: lists[4],
		Content: &types.EmailContent{Simple: &types.Message{
			Subject: &types.Content{Data: aws.String(p.Subject), Charset: utf8},
			Body:    body,
		}},
		EmailTags: tags,
	}
	if p.ConfigurationSet != "" {
		in.ConfigurationSetName = aws.String(p.ConfigurationSet)
	}
	return in, nil
}

// TagValue spells an action id as an SES tag value. Ids made of letters,
// digits, '_' and '-' (Ferry's own are "<partition>-<seq>") go as they are;
// any other id goes as "b64_" and its unpadded base64url form, whose
// alphabet is exactly the allowed one.
func TagValue(actionID string) string {
	if validTag(actionID) {
		return actionID
	}
	v := "b64_" + base64.RawURLEncoding.EncodeToString([]byte(actionID))
	if len(v) > 256 {
		v = v[:256]
	}
	return v
}
