package coldstart

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awseventbridge "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/ferryhq/ferry/internal/adapters/email"
	"github.com/ferryhq/ferry/internal/adapters/eventbridge"
	"github.com/ferryhq/ferry/internal/adapters/ssrfguard"
	"github.com/ferryhq/ferry/internal/adapters/webhook"
	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/handlers"
	"github.com/ferryhq/ferry/internal/outbox"
	"github.com/ferryhq/ferry/internal/telemetry"
)

// The variables only some functions read (docs/deploy.md names what the
// CDK stack sets).
const (
	// EnvWebhookSecretsARN names the Secrets Manager secret holding the
	// webhook signing secrets ("whsec_…", newest first, white-space
	// separated): one ARN or name for every workspace, or a name format
	// whose %s is the workspace. Default webhook.DefaultSecretNameFormat
	// ("ferry/webhook/%s"). Drainer.
	EnvWebhookSecretsARN = "FERRY_WEBHOOK_SECRETS_ARN"
	// EnvRetention is how long ended actions are kept (a Go duration such
	// as 720h); default the engine's 30 days. Retention (all functions
	// accept it).
	EnvRetention = "FERRY_RETENTION"
	// EnvSESConfigurationSet is the SES configuration set of emails whose
	// payload names none (drainer), and the one whose events are recorded
	// (sesevents: an event of another set is dropped).
	EnvSESConfigurationSet = "FERRY_SES_CONFIGURATION_SET"
	// EnvRowCap is how many ended actions are kept at most; default the
	// engine's 500000. Retention (all functions accept it).
	EnvRowCap = "FERRY_ROW_CAP"
	// EnvStack is the deployment's stack name: every metric a function
	// writes carries it as the Stack dimension (none when unset). All.
	EnvStack = "FERRY_STACK"
	// EnvProviderTimeout bounds one provider call of the built-in
	// adapters (a webhook exchange, an SES or EventBridge request), a Go
	// duration; default DefaultProviderTimeout. All (the registry reads it).
	EnvProviderTimeout = "FERRY_PROVIDER_TIMEOUT"
	// EnvAllowPrivateWebhooks ("true") lets webhooks reach loopback and
	// private addresses. Only `ferry local` sets it, so the deployed
	// bootstraps can deliver to a receiver on the developer's machine; the
	// stack never does. Every function reads it (the registry builds the
	// webhook adapter: enqueue checks a URL with it, the drainer dials).
	EnvAllowPrivateWebhooks = "FERRY_ALLOW_PRIVATE_WEBHOOKS"
)

// DefaultProviderTimeout is the provider call bound when
// FERRY_PROVIDER_TIMEOUT is unset (the CDK stack's default too).
const DefaultProviderTimeout = 30 * time.Second

// Metrics returns the function's metrics writer: each line names the
// function (and the Lambda function's name) as plain properties and carries
// the stack's name (FERRY_STACK) as the Stack dimension of every metric.
func Metrics(out io.Writer, clk clock.Clock, function string, getenv func(string) string) *telemetry.Metrics {
	props := map[string]string{"function": function}
	if name := getenv("AWS_LAMBDA_FUNCTION_NAME"); name != "" {
		props["function_name"] = name
	}
	return telemetry.NewMetrics(out, clk, props).WithBase(telemetry.Dim{Name: telemetry.DimStack, Value: strings.TrimSpace(getenv(EnvStack))})
}

// ProviderTimeout reads FERRY_PROVIDER_TIMEOUT (default
// DefaultProviderTimeout).
func ProviderTimeout(getenv func(string) string) (time.Duration, error) {
	v := strings.TrimSpace(getenv(EnvProviderTimeout))
	if v == "" {
		return DefaultProviderTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, &EnvError{Var: EnvProviderTimeout, Value: v, Reason: "must be a positive duration (e.g. 30s)"}
	}
	return d, nil
}

// SweepPartitions is how many partitions a scheduled sweep drains at once.
// Each partition costs at least three sequential DynamoDB round trips (claim
// fence, claim query, release) even when nothing is due there; one after
// another, the 16 default partitions make a sweep, and so the drainer's
// first invocation, dozens of round trips long. Four at once keeps the
// provider calls in flight at most 4 partitions x 4 lane groups.
const SweepPartitions = 4

// Runtime is what a function's handler is built from.
type Runtime struct {
	Config Config
	Clock  clock.Clock
	Log    *slog.Logger
	Obs    *telemetry.Observer
	Engine *outbox.Engine
	// Ports adapts Engine to the handlers (internal/handlers).
	Ports handlers.EnginePorts
}

// New reads the environment through getenv and builds the runtime of the
// named function. Errors name the variable at fault; main prints them and
// exits, so a misconfigured function refuses to start.
func New(ctx context.Context, function string, getenv func(string) string) (*Runtime, error) {
	cfg, err := Load(getenv)
	if err != nil {
		return nil, err
	}
	clk := clock.System{}
	out := telemetry.NewLockedWriter(os.Stdout)
	log := telemetry.NewLogger(out, cfg.LogLevel).With(slog.String("function", function))
	telemetry.LogColdStart(log)
	obs := telemetry.NewObserver(Metrics(out, clk, function, getenv), log)

	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("error loading the AWS configuration: %w", err)
	}
	reg, err := Registry(awsCfg, clk, getenv)
	if err != nil {
		return nil, err
	}
	ocfg := cfg.Outbox()
	if err := RetentionConfig(getenv, &ocfg); err != nil {
		return nil, err
	}
	engine, err := outbox.New(dynamodb.NewFromConfig(awsCfg), clk, reg, ocfg, outbox.WithObserver(obs))
	if err != nil {
		return nil, fmt.Errorf("error building the engine: %w", err)
	}
	owner := getenv("AWS_LAMBDA_LOG_STREAM_NAME")
	return &Runtime{
		Config: cfg, Clock: clk, Log: log, Obs: obs, Engine: engine,
		Ports: handlers.EnginePorts{Engine: engine, Owner: owner, Partitions: SweepPartitions},
	}, nil
}

// CheckTable refuses, at cold start, a table this build must not write:
// no Ferry layout marker, or another layout version (outbox.LayoutError,
// design.md §3.10). A table that cannot be read now (DynamoDB unreachable)
// is not refused here: the engine checks it again before its first call.
func (rt *Runtime) CheckTable(ctx context.Context) error {
	return TableCheck(ctx, rt.Engine, rt.Log)
}

// TableCheck is CheckTable for an engine built elsewhere (the enqueue
// function's).
func TableCheck(ctx context.Context, e *outbox.Engine, log *slog.Logger) error {
	err := e.LayoutCheck(ctx)
	if errors.Is(err, outbox.ErrLayout) {
		return err
	}
	if err != nil {
		log.Warn("the table's layout could not be read at cold start; the first call checks it", slog.String("error", err.Error()))
	}
	return nil
}

// Registry registers the built-in adapters for AWS: webhooks signed with
// secrets from Secrets Manager (public destinations only), email through
// Amazon SES v2 (AWS_ENDPOINT_URL_SESV2 honoured) and events through
// Amazon EventBridge. The providers' SDK retries are off: each adapter alone
// decides whether a call may be repeated. Each provider call is bounded by
// FERRY_PROVIDER_TIMEOUT (the engine also ends it inside the write margin).
// Building it makes no request.
func Registry(awsCfg aws.Config, clk clock.Clock, getenv func(string) string) (*outbox.Registry, error) {
	timeout, err := ProviderTimeout(getenv)
	if err != nil {
		return nil, err
	}
	awsCfg.HTTPClient = awshttp.NewBuildableClient().WithTimeout(timeout)
	reg := outbox.NewRegistry()
	secrets := webhook.NewSecretsManagerSource(secretsmanager.NewFromConfig(awsCfg), secretNameFormat(getenv(EnvWebhookSecretsARN)), clk, 0)
	var policy ssrfguard.Policy
	switch v := strings.TrimSpace(getenv(EnvAllowPrivateWebhooks)); v {
	case "", "false":
	case "true":
		policy.AllowPrivate = true
	default:
		return nil, &EnvError{Var: EnvAllowPrivateWebhooks, Value: v, Reason: "must be true or false"}
	}
	wh, err := webhook.New(webhook.Options{Secrets: secrets, Clock: clk, Timeout: timeout, Policy: policy,
		ResponseHeaderTimeout: min(timeout, webhook.Options{}.WithDefaults().ResponseHeaderTimeout)})
	if err != nil {
		return nil, fmt.Errorf("error building the webhook adapter: %w", err)
	}
	if err := reg.Register(wh); err != nil {
		return nil, err
	}
	var sender email.Sender = sesv2.NewFromConfig(awsCfg, func(o *sesv2.Options) {
		o.Retryer = aws.NopRetryer{} // the adapter alone decides whether a send may be repeated
		o.RetryMaxAttempts = 1
	})
	if set := strings.TrimSpace(getenv(EnvSESConfigurationSet)); set != "" {
		sender = defaultConfigurationSet{next: sender, name: set}
	}
	em, err := email.New(email.Options{Sender: sender})
	if err != nil {
		return nil, fmt.Errorf("error building the email adapter: %w", err)
	}
	if err := reg.Register(em); err != nil {
		return nil, err
	}
	eb, err := eventbridge.New(eventbridge.Options{Client: awseventbridge.NewFromConfig(awsCfg, func(o *awseventbridge.Options) {
		o.Retryer = aws.NopRetryer{}
		o.RetryMaxAttempts = 1
	})})
	if err != nil {
		return nil, fmt.Errorf("error building the eventbridge adapter: %w", err)
	}
	if err := reg.Register(eb); err != nil {
		return nil, err
	}
	return reg, nil
}

// secretNameFormat turns FERRY_WEBHOOK_SECRETS_ARN into the source's name
// format: a value without %s names one secret for every workspace (the
// "%.0s" verb consumes the workspace and prints nothing).
func secretNameFormat(v string) string {
	v = strings.TrimSpace(v)
	if v == "" || strings.Contains(v, "%s") {
		return v
	}
	return strings.ReplaceAll(v, "%", "%%") + "%.0s"
}

// RetentionConfig reads FERRY_RETENTION and FERRY_ROW_CAP into c; every
// function applies it, since any of them may end an action (and so set its
// TTL).
func RetentionConfig(getenv func(string) string, c *outbox.Config) error {
	var errs []error
	if v := strings.TrimSpace(getenv(EnvRetention)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, &EnvError{Var: EnvRetention, Value: v, Reason: "must be a positive duration (e.g. 720h)"})
		} else {
			c.Retention = d
		}
	}
	if v := strings.TrimSpace(getenv(EnvRowCap)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, &EnvError{Var: EnvRowCap, Value: v, Reason: "must be a positive integer"})
		} else {
			c.RowCap = n
		}
	}
	return errors.Join(errs...)
}

// defaultConfigurationSet names the deployment's SES configuration set on
// every email whose payload names none.
type defaultConfigurationSet struct {
	next email.Sender
	name string
}

// SendEmail implements email.Sender.
func (d defaultConfigurationSet) SendEmail(ctx context.Context, in *sesv2.SendEmailInput, optFns ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error) {
	if in.ConfigurationSetName == nil || *in.ConfigurationSetName == "" {
		cp := *in
		cp.ConfigurationSetName = aws.String(d.name)
		in = &cp
	}
	return d.next.SendEmail(ctx, in, optFns...)
}
