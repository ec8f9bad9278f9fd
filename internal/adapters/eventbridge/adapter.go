package eventbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/smithy-go"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

	"github.com/ferryhq/ferry/internal/adapters/payloadcheck"
	"github.com/ferryhq/ferry/internal/outbox"
)

// Kind is the name of the eventbridge kind.
const Kind = "eventbridge"

// ActionIDField is the property of the event's detail that carries the
// action id; consumers deduplicate by it.
const ActionIDField = "ferry_action_id"

// Limits of a PutEvents entry.
const (
	maxSource     = 256
	maxDetailType = 128
	maxEventBus   = 1600
	// MaxEntrySize is EventBridge's limit on one entry (source, detail type,
	// detail and bus name together).
	MaxEntrySize = 256 << 10
)

// Payload is the eventbridge kind's payload (API.md, "Built-in kinds").
type Payload struct {
	EventBus   string          `json:"event_bus,omitempty"`
	Source     string          `json:"source"`
	DetailType string          `json:"detail_type"`
	Detail     json.RawMessage `json:"detail"`
}

// Putter is the one EventBridge call the adapter makes;
// *eventbridge.Client implements it.
type Putter interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// Options configure the adapter.
type Options struct {
	// Client puts the events. Required.
	Client Putter
	// ThrottleWait is the Defer wait after a throttled put. Default 5 s.
	ThrottleWait time.Duration
}

// Adapter carries out eventbridge actions. It is safe for concurrent use.
type Adapter struct {
	opts Options
}

var _ outbox.Adapter = (*Adapter)(nil)

// New returns an eventbridge adapter.
func New(opts Options) (*Adapter, error) {
	if opts.Client == nil {
		return nil, errors.New("eventbridge: Client is required")
	}
	if opts.ThrottleWait < 0 {
		return nil, errors.New("eventbridge: ThrottleWait cannot be negative")
	}
	if opts.ThrottleWait == 0 {
		opts.ThrottleWait = 5 * time.Second
	}
	return &Adapter{opts: opts}, nil
}

// NewClient returns an EventBridge client from the default AWS configuration
// (honouring AWS_ENDPOINT_URL_EVENTBRIDGE), with the SDK's retries off so
// every outcome is decided by the adapter (a throttle becomes a Defer the
// engine schedules, not a sleep inside the write margin).
func NewClient(ctx context.Context, optFns ...func(*config.LoadOptions) error) (*eventbridge.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, optFns...)
	if err != nil {
		return nil, fmt.Errorf("eventbridge: loading AWS configuration: %w", err)
	}
	return eventbridge.NewFromConfig(cfg, noRetries), nil
}

func noRetries(o *eventbridge.Options) {
	o.Retryer = aws.NopRetryer{}
	o.RetryMaxAttempts = 1
}

// Spec declares the eventbridge kind: one payload shape, idempotent
// receiver (consumers deduplicate by detail.ferry_action_id).
func (a *Adapter) Spec() outbox.KindSpec {
	return outbox.KindSpec{Name: Kind, Class: outbox.IdempotentReceiver, VariantMode: outbox.SingleShape}
}

// Validate checks a payload at enqueue time.
func (a *Adapter) Validate(_ string, payload json.RawMessage) error {
	_, _, err := decodePayload(payload)
	return err
}

// eventBusName is EventBridge's pattern of an event bus name or ARN
// (PutEventsRequestEntry.EventBusName).
var eventBusName = regexp.MustCompile(`^(arn:aws[\w-]*:events:[a-z0-9-]+:[0-9]{12}:event-bus/)?[/.\-_A-Za-z0-9]+$`)

// decodePayload decodes and checks a payload and returns it with its detail
// as an object; errors are *outbox.PayloadError. source, detail_type and
// event_bus travel as request fields beside the event: they are checked
// for control characters and length like a header (issue 13).
func decodePayload(raw json.RawMessage) (*Payload, map[string]json.RawMessage, error) {
	var p Payload
	if problem := payloadcheck.Decode(raw, &p, Kind); problem != nil {
		return nil, nil, &outbox.PayloadError{Field: problem.Field, Message: problem.Message}
	}
	if err := checkFields(&p); err != nil {
		return nil, nil, err
	}
	var detail map[string]json.RawMessage
	if len(p.Detail) == 0 || bytes.Equal(bytes.TrimSpace(p.Detail), []byte("null")) || json.Unmarshal(p.Detail, &detail) != nil {
		return nil, nil, &outbox.PayloadError{Field: "detail", Message: "required, and must be a JSON object"}
	}
	if _, ok := detail[ActionIDField]; ok {
		return nil, nil, &outbox.PayloadError{Field: "detail." + ActionIDField, Message: "reserved for the action id"}
	}
	// Leave room for the action id field Ferry adds.
	if size := len(p.Source) + len(p.DetailType) + len(p.EventBus) + len(p.Detail) + 64; size > MaxEntrySize {
		return nil, nil, &outbox.PayloadError{Field: "detail", Message: fmt.Sprintf("the event would be about %d bytes; EventBridge allows %d", size, MaxEntrySize)}
	}
	return &p, detail, nil
}

// checkFields checks the fields of the entry besides its detail.
func checkFields(p *Payload) error {
	switch {
	case p.Source == "":
		return &outbox.PayloadError{Field: "source", Message: "required"}
	case strings.HasPrefix(p.Source, "aws."):
		return &outbox.PayloadError{Field: "source", Message: `must not start with "aws." (reserved for AWS services)`}
	case p.DetailType == "":
		return &outbox.PayloadError{Field: "detail_type", Message: "required"}
	}
	if problem := payloadcheck.HeaderText(p.Source, maxSource); problem != "" {
		return &outbox.PayloadError{Field: "source", Message: problem}
	}
	if problem := payloadcheck.HeaderText(p.DetailType, maxDetailType); problem != "" {
		return &outbox.PayloadError{Field: "detail_type", Message: problem}
	}
	if p.EventBus != "" {
		if len(p.EventBus) > maxEventBus || !eventBusName.MatchString(p.EventBus) {
			return &outbox.PayloadError{Field: "event_bus",
				Message: fmt.Sprintf("must be an event bus name (ASCII letters, digits, /, ., _ and -) or ARN, at most %d bytes", maxEventBus)}
		}
	}
	return nil
}

// Execute puts the event, its detail extended with ferry_action_id, and
// maps the answer: the entry accepted → Done (the event id as reference); a
// failed entry with ThrottlingException → Defer; with InternalFailure →
// Retry; with any other code → Failed (REJECTED). A throttled call →
// Defer; a refused call (4xx) → Failed; authentication refusals, 5xx and
// transport errors → Retry.
func (a *Adapter) Execute(ctx context.Context, att *outbox.Attempt) outbox.Result {
	p, detail, err := decodePayload(att.Action.Payload)
	if err != nil {
		return outbox.Failed(outbox.StopRejected, err)
	}
	entry, err := buildEntry(p, detail, att.Action.ID)
	if err != nil {
		return outbox.Failed(outbox.StopRejected, err)
	}
	out, err := a.opts.Client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{entry}}, noRetries)
	if err != nil {
		return a.classifyCall(err)
	}
	if len(out.Entries) != 1 {
		return outbox.Retry(fmt.Errorf("eventbridge: PutEvents answered %d entries for 1", len(out.Entries)))
	}
	e := out.Entries[0]
	if code := aws.ToString(e.ErrorCode); code != "" {
		err := &EntryError{Code: code, Message: aws.ToString(e.ErrorMessage)}
		switch code {
		case "ThrottlingException":
			return outbox.Defer(a.opts.ThrottleWait, err)
		case "InternalFailure", "InternalException", "ServiceUnavailable":
			return outbox.Retry(err)
		}
		return outbox.Failed(outbox.StopRejected, err)
	}
	if e.EventId == nil {
		return outbox.Retry(errors.New("eventbridge: PutEvents answered neither an event id nor an error"))
	}
	return outbox.Done(aws.ToString(e.EventId))
}

// buildEntry makes the PutEvents entry: the payload's fields, its detail
// extended with the action id.
func buildEntry(p *Payload, detail map[string]json.RawMessage, actionID string) (types.PutEventsRequestEntry, error) {
	id, err := json.Marshal(actionID)
	if err != nil {
		return types.PutEventsRequestEntry{}, fmt.Errorf("eventbridge: encoding action id: %w", err)
	}
	detail[ActionIDField] = id
	body, err := json.Marshal(detail)
	if err != nil {
		return types.PutEventsRequestEntry{}, fmt.Errorf("eventbridge: encoding detail: %w", err)
	}
	entry := types.PutEventsRequestEntry{
		Source:     aws.String(p.Source),
		DetailType: aws.String(p.DetailType),
		Detail:     aws.String(string(body)),
	}
	if p.EventBus != "" {
		entry.EventBusName = aws.String(p.EventBus)
	}
	return entry, nil
}

// EntryError is a failed PutEvents entry.
type EntryError struct {
	Code    string
	Message string
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("eventbridge: entry failed: %s: %s", e.Code, e.Message)
}

// authErrorCodes are refusals that new credentials or a policy fix can
// cure.
var authErrorCodes = map[string]bool{
	"UnrecognizedClientException": true, "InvalidSignatureException": true, "ExpiredTokenException": true,
	"IncompleteSignature": true, "MissingAuthenticationToken": true, "InvalidClientTokenId": true,
	"AccessDeniedException": true, "RequestExpired": true,
}

// classifyCall maps an error of the whole PutEvents call. Retrying is safe
// for this kind, so anything that is not a definite refusal is a Retry.
func (a *Adapter) classifyCall(err error) outbox.Result {
	err = fmt.Errorf("eventbridge: %w", err)
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return outbox.Retry(err)
	}
	status := 0
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		status = respErr.HTTPStatusCode()
	}
	code := apiErr.ErrorCode()
	switch {
	case code == "ThrottlingException" || code == "Throttling" || status == 429:
		return outbox.Defer(a.opts.ThrottleWait, err)
	case authErrorCodes[code]:
		return outbox.Retry(err)
	case status >= 400 && status <= 499:
		return outbox.Failed(outbox.StopRejected, err)
	}
	return outbox.Retry(err)
}
