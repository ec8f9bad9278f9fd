package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ferryhq/ferry/internal/adapters/ssrfguard"
	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/outbox"
)

// Kind is the name of the webhook kind.
const Kind = "webhook"

// Stop reasons the webhook adapter adds to outbox's.
const (
	// StopRedirect: the receiver answered with a redirect, which is never
	// followed (it could lead anywhere, and the signature names the URL's
	// receiver only).
	StopRedirect outbox.StopReason = "REDIRECT_REFUSED"
	// StopSecretMissing: the workspace has no signing secret, so nothing can
	// be sent (an unsigned webhook is never sent).
	StopSecretMissing outbox.StopReason = "SIGNING_SECRET_MISSING"
)

// Options configure the adapter. Zero durations and sizes take the defaults
// documented on each field; they end well inside a 60 s write margin.
type Options struct {
	// Secrets gives each workspace's signing secrets. Required.
	Secrets SecretSource
	// Clock stamps webhook-timestamp and reads Retry-After dates. Default
	// clock.System.
	Clock clock.Clock
	// Policy says which destinations are allowed (private ones only for
	// local development).
	Policy ssrfguard.Policy
	// Methods a payload may use. Default DefaultMethods.
	Methods []string

	// DialTimeout bounds the TCP connect. Default 5 s.
	DialTimeout time.Duration
	// TLSHandshakeTimeout bounds the TLS handshake. Default 5 s.
	TLSHandshakeTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for the response headers once
	// the request is written. Default 20 s.
	ResponseHeaderTimeout time.Duration
	// Timeout bounds the whole exchange, body read included. Default 30 s.
	// The context's deadline (set by the engine) bounds it too.
	Timeout time.Duration
	// MaxResponseBody caps how much of the response body is read (it is
	// read only so the connection can be reused). Default 64 KiB.
	MaxResponseBody int64
	// MaxRetryAfter caps the wait a receiver may ask for. Default 1 h.
	MaxRetryAfter time.Duration
	// UserAgent is sent with every request. Default "Ferry-Webhooks/1".
	UserAgent string
	// TLSConfig, when set, replaces the default TLS client configuration
	// (e.g. RootCAs for receivers behind a private CA). Certificates are
	// always verified unless it says otherwise.
	TLSConfig *tls.Config

	// Resolver and Dialer replace DNS resolution and the connect (tests:
	// a resolver without DNS traffic, a dialer that records). The policy is
	// checked before either dials.
	Resolver ssrfguard.Resolver
	Dialer   ssrfguard.ContextDialer
}

// WithDefaults returns the options with every zero field set to its default.
func (o Options) WithDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.System{}
	}
	if len(o.Methods) == 0 {
		o.Methods = DefaultMethods
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.TLSHandshakeTimeout == 0 {
		o.TLSHandshakeTimeout = 5 * time.Second
	}
	if o.ResponseHeaderTimeout == 0 {
		o.ResponseHeaderTimeout = 20 * time.Second
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	if o.MaxResponseBody == 0 {
		o.MaxResponseBody = 64 << 10
	}
	if o.MaxRetryAfter == 0 {
		o.MaxRetryAfter = time.Hour
	}
	if o.UserAgent == "" {
		o.UserAgent = "Ferry-Webhooks/1"
	}
	return o
}

func (o Options) validate() error {
	if o.Secrets == nil {
		return errors.New("webhook: Secrets is required")
	}
	for name, d := range map[string]time.Duration{
		"DialTimeout": o.DialTimeout, "TLSHandshakeTimeout": o.TLSHandshakeTimeout,
		"ResponseHeaderTimeout": o.ResponseHeaderTimeout, "Timeout": o.Timeout,
		"MaxRetryAfter": o.MaxRetryAfter,
	} {
		if d < 0 {
			return fmt.Errorf("webhook: %s cannot be negative", name)
		}
	}
	if o.ResponseHeaderTimeout > o.Timeout {
		return fmt.Errorf("webhook: ResponseHeaderTimeout (%s) cannot be longer than Timeout (%s)", o.ResponseHeaderTimeout, o.Timeout)
	}
	if o.MaxResponseBody < 0 {
		return errors.New("webhook: MaxResponseBody cannot be negative")
	}
	return nil
}

// Adapter carries out webhook actions. It is safe for concurrent use.
type Adapter struct {
	opts   Options
	client *http.Client
}

var (
	_ outbox.Adapter  = (*Adapter)(nil)
	_ outbox.Preparer = (*Adapter)(nil)
)

// New returns a webhook adapter.
func New(opts Options) (*Adapter, error) {
	opts = opts.WithDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	dialer := &ssrfguard.Dialer{Policy: opts.Policy, Resolver: opts.Resolver, Next: opts.Dialer, Timeout: opts.DialTimeout}
	transport := &http.Transport{
		// No proxy, whatever the environment says: a proxy would make the
		// dial-time address check look at the proxy, not the receiver.
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   opts.TLSHandshakeTimeout,
		ResponseHeaderTimeout: opts.ResponseHeaderTimeout,
		ExpectContinueTimeout: time.Second,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       60 * time.Second,
		ForceAttemptHTTP2:     true,
		TLSClientConfig:       opts.TLSConfig.Clone(),
	}
	client := &http.Client{
		Transport: transport,
		Timeout:   opts.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return &Adapter{opts: opts, client: client}, nil
}

// Spec declares the webhook kind: one payload shape, idempotent receiver.
func (a *Adapter) Spec() outbox.KindSpec {
	return outbox.KindSpec{Name: Kind, Class: outbox.IdempotentReceiver, VariantMode: outbox.SingleShape}
}

// Validate checks a payload at enqueue time: url required, an absolute http(s)
// URL the policy allows; method among the allowed ones; headers a string map
// that overrides neither hop-by-hop nor webhook-* headers; body any JSON.
func (a *Adapter) Validate(_ string, payload json.RawMessage) error {
	_, err := a.decodePayload(payload)
	return err
}

// prepared is what Prepare hands to Execute.
type prepared struct {
	payload *Payload
	secrets []Secret
}

// Prepare decodes the payload and fetches the workspace's signing secrets
// before the fence, so a secret store outage costs a retry, not a send.
func (a *Adapter) Prepare(ctx context.Context, att *outbox.Attempt) outbox.Result {
	p, err := a.decodePayload(att.Action.Payload)
	if err != nil {
		// The policy may have changed since the enqueue (or the payload came
		// in through the library without Validate): a URL the policy now
		// refuses is a forbidden destination, not a malformed payload.
		var url struct {
			URL string `json:"url"`
		}
		if json.Unmarshal(att.Action.Payload, &url) == nil && url.URL != "" {
			if _, uerr := a.opts.Policy.CheckURL(url.URL); errors.Is(uerr, ssrfguard.ErrForbidden) {
				return outbox.Failed(outbox.StopDestinationForbidden, fmt.Errorf("webhook: %w", uerr))
			}
		}
		return outbox.Failed(outbox.StopRejected, err)
	}
	secrets, err := a.opts.Secrets.WebhookSecrets(ctx, att.Action.WorkspaceID)
	switch {
	case errors.Is(err, ErrNoSecret) || err == nil && len(secrets) == 0:
		return outbox.Failed(StopSecretMissing, fmt.Errorf("webhook: workspace %q: %w", att.Action.WorkspaceID, ErrNoSecret))
	case err != nil:
		return outbox.Retry(fmt.Errorf("webhook: reading signing secrets: %w", err))
	}
	att.Prepared = &prepared{payload: p, secrets: secrets}
	return outbox.Result{}
}

// Execute sends the signed request and maps the answer to an outcome
// (API.md): 2xx Done; 410 Failed (GONE); 429 and 503 with Retry-After Defer;
// 429 without a usable one Defer with no wait of its own (the engine backs
// off from the retry base); 503 without one Retry; other
// 4xx Failed; 3xx Failed (REDIRECT_REFUSED); 5xx, timeouts and resets Retry;
// a forbidden destination Failed (DESTINATION_FORBIDDEN).
func (a *Adapter) Execute(ctx context.Context, att *outbox.Attempt) outbox.Result {
	prep, ok := att.Prepared.(*prepared)
	if !ok {
		if res := a.Prepare(ctx, att); res.Outcome != outbox.OutcomeNone {
			return res
		}
		prep = att.Prepared.(*prepared)
	}
	p := prep.payload
	if _, err := a.opts.Policy.CheckURL(p.URL); err != nil {
		return outbox.Failed(outbox.StopDestinationForbidden, fmt.Errorf("webhook: %w", err))
	}
	req, err := a.newRequest(ctx, att.Action.ID, a.opts.Clock.Now().Unix(), p, prep.secrets)
	if err != nil {
		return outbox.Failed(outbox.StopRejected, fmt.Errorf("webhook: building request: %w", err))
	}

	resp, err := a.client.Do(req)
	if err != nil {
		err = withoutURLPath(err)
		if errors.Is(err, ssrfguard.ErrForbidden) {
			return outbox.Failed(outbox.StopDestinationForbidden, fmt.Errorf("webhook: %w", err))
		}
		// Timeouts, refused connections, resets, DNS failures: the receiver
		// deduplicates by webhook-id, so trying again is safe.
		return outbox.Retry(fmt.Errorf("webhook: %w", err))
	}
	drainCapped(resp, a.opts.MaxResponseBody)
	return a.outcome(resp)
}

// newRequest builds the signed request of one delivery: the payload's
// method, URL, headers and body, then Ferry's own headers (Content-Type
// when the payload sets none, User-Agent and the Standard Webhooks trio).
func (a *Adapter) newRequest(ctx context.Context, id string, ts int64, p *Payload, secrets []Secret) (*http.Request, error) {
	body := []byte(p.Body)
	req, err := http.NewRequestWithContext(ctx, p.Method, p.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for name, value := range p.Headers {
		req.Header.Set(name, value)
	}
	if len(body) > 0 && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", a.opts.UserAgent)
	// Set directly, not with Set: Standard Webhooks spells them lower case,
	// and HTTP/1.1 receivers that compare names exactly exist.
	req.Header["webhook-id"] = []string{id}
	req.Header["webhook-timestamp"] = []string{strconv.FormatInt(ts, 10)}
	req.Header["webhook-signature"] = []string{Sign(secrets, id, ts, body)}
	return req, nil
}

// withoutURLPath drops the path, query and user info from the URL that
// net/http puts in its errors: they are payload (and may hold tokens), and
// errors go to logs. The scheme and host stay, to tell receivers apart.
func withoutURLPath(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	short := "(unparsable URL)"
	if u, perr := url.Parse(ue.URL); perr == nil {
		short = u.Scheme + "://" + u.Host
	}
	return &url.Error{Op: ue.Op, URL: short, Err: ue.Err}
}
