package devstack

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/httpapi"
	"github.com/ferryhq/ferry/internal/outbox"
)

// Token is a bearer token and the workspaces it may use.
type Token struct {
	Token      string
	Workspaces []string
}

// ParseToken reads a --token value, TOKEN=WS1,WS2.
func ParseToken(s string) (Token, error) {
	tok, wss, ok := strings.Cut(s, "=")
	tok = strings.TrimSpace(tok)
	if !ok || tok == "" {
		return Token{}, fmt.Errorf("token %q: want TOKEN=WORKSPACE[,WORKSPACE…]", s)
	}
	var out []string
	for _, ws := range strings.Split(wss, ",") {
		if ws = strings.TrimSpace(ws); ws != "" {
			out = append(out, ws)
		}
	}
	if len(out) == 0 {
		return Token{}, fmt.Errorf("token %q: names no workspace", tok)
	}
	return Token{Token: tok, Workspaces: out}, nil
}

// ParseTokens reads every --token value. A token given twice is refused,
// naming both values: one token has one entry with all its workspaces
// (`ferry dev` would otherwise merge them and `ferry local` keep the first,
// neither of which the user asked for).
func ParseTokens(values []string) ([]Token, error) {
	out := make([]Token, 0, len(values))
	seen := make(map[string]string, len(values))
	for _, v := range values {
		tok, err := ParseToken(v)
		if err != nil {
			return nil, fmt.Errorf("--token: %w", err)
		}
		if first, dup := seen[tok.Token]; dup {
			return nil, fmt.Errorf("--token: token %q is given twice (%q and %q); give it once with all its workspaces, e.g. --token %s=%s",
				tok.Token, first, v, tok.Token, strings.Join(append(tokenWorkspaces(out, tok.Token), tok.Workspaces...), ","))
		}
		seen[tok.Token] = v
		out = append(out, tok)
	}
	return out, nil
}

// tokenWorkspaces returns the workspaces of token in tokens.
func tokenWorkspaces(tokens []Token, token string) []string {
	for _, t := range tokens {
		if t.Token == token {
			return append([]string(nil), t.Workspaces...)
		}
	}
	return nil
}

// Config is what `ferry dev` runs with. Its defaults are the flags' defaults
// (API.md).
type Config struct {
	Addr   string  // API listen address; default 127.0.0.1:8080
	Tokens []Token // default: token "dev" for workspace "default"
	// OperatorTokens sign in to the console (/console) seeing every
	// workspace and the instance's pages; the API does not take them.
	OperatorTokens []string
	// ConsoleRefresh is how often the console's pages update themselves;
	// default 2s.
	ConsoleRefresh time.Duration
	Partitions     int           // default 4
	Lease          time.Duration // default 5m
	WriteMargin    time.Duration // default 60s
	RetryBase      time.Duration // default 1s
	// ClockSkew is the bound on clock disagreement the engine allows for;
	// default 0: one process reads one clock (--clock-skew).
	ClockSkew        time.Duration
	MaxDeferrals     int           // deferrals in a row before an action fails; default the engine's 50
	MaxDeferTime     time.Duration // how long a run of deferrals may last; default the engine's 24h
	Poll             time.Duration // drainer poll interval; default 250ms
	DynamoDBEndpoint string        // empty: the embedded DynamoDB
	// DataDir keeps the embedded DynamoDB's data on disk (tables, items,
	// streams), so the stack survives a restart; empty: in memory.
	DataDir              string
	Table                string // default "ferry"
	MailDir              string // default ./.ferry/mail
	AllowPrivateWebhooks bool
	WebhookSecret        string // whsec_…; generated when empty
	// SESEndpoint, when set (AWS_ENDPOINT_URL_SESV2), sends email through
	// Amazon SES v2 at that endpoint instead of the mail sink.
	SESEndpoint string
	// UseSES (--ses) sends email through Amazon SES v2 with the default AWS
	// configuration (real credentials and region) instead of the mail sink.
	UseSES      bool
	ReapEvery   time.Duration // default 30s
	RetainEvery time.Duration // default 5m
	// ReadHeaderTimeout bounds how long a client may take to send a
	// request's headers, ReadTimeout the whole request, body included; a
	// client that stops halfway is cut off (a late body answers 408).
	// Defaults 10s and 30s.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	// HealthEvery is how often the stack checks that DynamoDB can be used
	// (and re-creates a table that went missing); HealthTTL how long
	// /healthz reuses a check. Defaults 2s and 2s.
	HealthEvery time.Duration
	HealthTTL   time.Duration

	Clock  clock.Clock  // default the system clock
	Logger *slog.Logger // default JSON logs to Stderr
	Stdout io.Writer    // the startup banner; default io.Discard
	// MetricsOut receives the EMF metric lines; default io.Discard (they
	// are for CloudWatch, not for a terminal).
	MetricsOut io.Writer
}

// The defaults of Config.
const (
	DefaultAddr        = "127.0.0.1:8080"
	DefaultPartitions  = 4
	DefaultLease       = outbox.DefaultLease
	DefaultWriteMargin = outbox.DefaultWriteMargin
	DefaultRetryBase   = outbox.DefaultRetryBase
	// DefaultClockSkew is 0: `ferry dev` is one process with one clock.
	DefaultClockSkew    = 0
	DefaultMaxDeferrals = outbox.DefaultMaxDeferrals
	DefaultMaxDeferTime = outbox.DefaultMaxDeferTime
	DefaultPoll         = 250 * time.Millisecond
	DefaultTable        = outbox.DefaultTable
	DefaultMailDir      = "./.ferry/mail"
	DefaultToken        = "dev"
	DefaultWorkspace    = "default"
	// DefaultReadHeaderTimeout and DefaultReadTimeout bound a request's
	// headers and the whole request: generous for a 256 KiB body on this
	// machine, short enough that half-sent requests do not pile up.
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	// DefaultConsoleRefresh is how often the console's pages update.
	DefaultConsoleRefresh = 2 * time.Second
)

// WithDefaults fills the zero fields.
func (c Config) WithDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if len(c.Tokens) == 0 {
		c.Tokens = []Token{{Token: DefaultToken, Workspaces: []string{DefaultWorkspace}}}
	}
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.ConsoleRefresh == 0 {
		c.ConsoleRefresh = DefaultConsoleRefresh
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.WriteMargin == 0 {
		c.WriteMargin = DefaultWriteMargin
	}
	if c.RetryBase == 0 {
		c.RetryBase = DefaultRetryBase
	}
	if c.MaxDeferrals == 0 {
		c.MaxDeferrals = DefaultMaxDeferrals
	}
	if c.MaxDeferTime == 0 {
		c.MaxDeferTime = DefaultMaxDeferTime
	}
	if c.Poll == 0 {
		c.Poll = DefaultPoll
	}
	if c.Table == "" {
		c.Table = DefaultTable
	}
	if c.MailDir == "" {
		c.MailDir = DefaultMailDir
	}
	if c.ReapEvery == 0 {
		c.ReapEvery = 30 * time.Second
	}
	if c.RetainEvery == 0 {
		c.RetainEvery = 5 * time.Minute
	}
	if c.ReadHeaderTimeout == 0 {
		c.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.HealthEvery == 0 {
		c.HealthEvery = 2 * time.Second
	}
	if c.HealthTTL == 0 {
		c.HealthTTL = httpapi.DefaultHealthTTL
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	return c
}

// Validate checks the configuration as given; messages name the flag.
// Start fills the defaults first (WithDefaults), so a program's zero means
// the default; `ferry dev` validates its flags before that, so a zero typed
// on the command line (--partitions 0, --retry-base 0) is refused rather
// than taken for the default. The engine's settings are checked by the
// engine's own rules (outbox.Config.Validate, design.md §13), the one home
// of the timing rules.
func (c Config) Validate() error {
	if err := c.validateTokens(); err != nil {
		return err
	}
	if err := c.engineConfig().Validate(); err != nil {
		var ve *outbox.ValidationError
		if errors.As(err, &ve) {
			// The engine names its fields; the user set flags.
			return fmt.Errorf("%s", ve.Named(engineFlags))
		}
		return err
	}
	switch {
	case c.Poll <= 0:
		return fmt.Errorf("--poll must be positive, got %s", c.Poll)
	case c.WebhookSecret != "" && !strings.HasPrefix(c.WebhookSecret, "whsec_"):
		return fmt.Errorf("--webhook-secret must start with whsec_")
	case c.DataDir != "" && c.DynamoDBEndpoint != "":
		return fmt.Errorf("--data-dir is for the embedded DynamoDB; it cannot go with --dynamodb-endpoint")
	}
	return nil
}

// validateTokens refuses a token given twice (see ParseTokens).
func (c Config) validateTokens() error {
	seen := make(map[string]bool, len(c.Tokens))
	for _, t := range c.Tokens {
		if seen[t.Token] {
			return fmt.Errorf("--token: token %q is given twice; give it once with all its workspaces", t.Token)
		}
		seen[t.Token] = true
	}
	return nil
}

// engineFlags names the flag of each engine setting `ferry dev` passes on.
var engineFlags = map[string]string{
	"Table": "--table", "Partitions": "--partitions", "Lease": "--lease",
	"WriteMargin": "--write-margin", "ClockSkew": "--clock-skew", "RetryBase": "--retry-base",
	"MaxDeferrals": "--max-deferrals", "MaxDeferTime": "--max-defer-time",
	// No flag: the message names what it is.
	"RetryCap": "the longest retry backoff",
}

// outbox is the engine configuration `ferry dev` runs; the settings it has
// no flag for keep the engine's defaults.
func (c Config) outbox() outbox.Config {
	return outbox.Config{
		Table: c.Table, Partitions: c.Partitions, Lease: c.Lease,
		WriteMargin: c.WriteMargin, RetryBase: c.RetryBase,
		// One process, one clock: a zero skew stays zero.
		ClockSkew: c.ClockSkew, SingleClock: true,
		MaxDeferrals: c.MaxDeferrals, MaxDeferTime: c.MaxDeferTime,
	}
}

// engineConfig is outbox() with the engine's defaults under the settings
// `ferry dev` has no flag for only: a zero a flag set reaches the engine's
// rules as a zero, not as its default.
func (c Config) engineConfig() outbox.Config {
	e := outbox.Config{SingleClock: true}.WithDefaults()
	e.Table, e.Partitions, e.Lease = c.Table, c.Partitions, c.Lease
	e.WriteMargin, e.RetryBase, e.ClockSkew = c.WriteMargin, c.RetryBase, c.ClockSkew
	e.MaxDeferrals, e.MaxDeferTime = c.MaxDeferrals, c.MaxDeferTime
	return e
}

// NewWebhookSecret returns a fresh Standard Webhooks signing secret.
func NewWebhookSecret() (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("error generating a webhook secret: %w", err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b[:]), nil
}
