package infra

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Tracing selects how the functions are traced.
type Tracing string

// The tracing modes.
const (
	// TracingXRay turns on Lambda active tracing with AWS X-Ray (default).
	TracingXRay Tracing = "xray"
	// TracingOpenTelemetry adds the OpenTelemetry collector layer named by
	// Props.OTelLayerARN, points the functions' OTLP exporter at it and keeps
	// active tracing on (the collector's default exporter is X-Ray).
	TracingOpenTelemetry Tracing = "otel"
	// TracingOff turns tracing off.
	TracingOff Tracing = "off"
)

// FunctionSize is one function's memory and timeout.
type FunctionSize struct {
	MemoryMB int
	Timeout  time.Duration
}

// FunctionSizes holds the functions' sizes.
type FunctionSizes struct {
	Enqueue   FunctionSize
	Drainer   FunctionSize
	Reaper    FunctionSize
	Retention FunctionSize
	// SESEvents records SES's delivery events of Ferry emails.
	SESEvents FunctionSize
}

// AlarmThresholds are the levels at which the stack's alarms fire. Counts are
// per five-minute period.
type AlarmThresholds struct {
	// OldestDueAge: the oldest due action has waited longer than this.
	OldestDueAge time.Duration
	// Uncertain: this many actions ended UNCERTAIN.
	Uncertain int
	// Failed: this many actions ended FAILED. (A count per period, not a
	// share: the ended counters carry the kind as a dimension, and only a
	// single Metrics Insights query can sum across kinds in an alarm.)
	Failed int
	// StuckLaneHeads: this many lane heads stuck, for three periods running.
	StuckLaneHeads int
	// FunctionErrors and FunctionThrottles: per function.
	FunctionErrors    int
	FunctionThrottles int
	// DynamoDBThrottles and DynamoDBSystemErrors: requests on the table.
	DynamoDBThrottles    int
	DynamoDBSystemErrors int
}

// Props configures the Ferry stack. Zero fields take the defaults of
// WithDefaults; Validate refuses inconsistent values with messages naming
// the props.
type Props struct {
	// StackProps are passed to the CDK stack (env, description, tags...).
	StackProps awscdk.StackProps

	// AssetDir holds <function>/bootstrap as built by `make build`. Default
	// "../bin" (relative to the working directory, infra/ under make).
	AssetDir string
	// Version is the Ferry version the stack and every taggable resource
	// are tagged with (VersionTagKey). Default: the version `make build`
	// stamped into the bootstraps, read from AssetDir/VERSION; "unknown"
	// when that file is missing.
	Version string

	// TableName is the DynamoDB table's name. Default "ferry".
	TableName string
	// DisableDeletionProtection turns the table's deletion protection off
	// and lets a stack deletion delete the table. Default false (protected,
	// retained).
	DisableDeletionProtection bool
	// KMSKeyARN names a customer-managed KMS key for the table. Default:
	// none (AWS-owned key).
	KMSKeyARN string

	// Partitions, Lease and WriteMargin are the engine's settings (see
	// API.md, "The functions' environment"). Defaults 16, 5m, 60s.
	Partitions  int
	Lease       time.Duration
	WriteMargin time.Duration
	// ProviderTimeout bounds one provider call (the adapters' own timeout).
	// Default 30s. It is not passed to the functions: it is the bound the
	// timing rules below are checked against.
	ProviderTimeout time.Duration
	// ClockSkew is the documented bound on clock skew between function
	// instances (FERRY_CLOCK_SKEW). Default 5s.
	ClockSkew time.Duration
	// MaxDeferrals and MaxDeferTime bound a run of deferrals of one action
	// (FERRY_MAX_DEFERRALS, FERRY_MAX_DEFER_TIME); then it ends FAILED,
	// DEFERRALS_EXHAUSTED. Default 50 and 24h.
	MaxDeferrals int
	MaxDeferTime time.Duration
	// Retention is how long ended actions are kept (TTL). Default 30 days.
	Retention time.Duration
	// RowCap is the most ended actions kept. Default 500000.
	RowCap int
	// LogLevel: debug, info, warn or error. Default info.
	LogLevel string
	// LogRetentionDays is the functions' and the API's log retention; one of
	// CloudWatch Logs' allowed values. Default 30.
	LogRetentionDays int

	// Functions are the functions' memory and timeouts.
	Functions FunctionSizes

	// JWTIssuer and JWTAudience select a JWT authorizer (both or neither).
	// Default: IAM authorization.
	JWTIssuer   string
	JWTAudience []string
	// WorkspaceClaim is the JWT claim listing a principal's workspaces.
	// Default "ferry_workspaces". JWT only.
	WorkspaceClaim string
	// IAMWorkspaces maps principal ARNs to the workspaces they may use.
	// IAM only.
	IAMWorkspaces map[string][]string
	// APIThrottleRate (requests per second) and APIThrottleBurst limit the
	// HTTP API's default stage. Defaults 50 and 100.
	APIThrottleRate  float64
	APIThrottleBurst int

	// SESIdentityARNs are the SES identities the drainer may send from.
	SESIdentityARNs []string
	// SESConfigurationSet is the SES configuration set the drainer uses.
	SESConfigurationSet string
	// EventBusARNs are the EventBridge buses the drainer may put events on.
	EventBusARNs []string
	// WebhookSecretsARN names the Secrets Manager secret holding the webhook
	// signing secrets: a full ARN, a name, or a name format whose %s is the
	// workspace (one secret per workspace). The drainer may only read it (or
	// the secrets the format names). Default: the webhook adapter's own
	// format, DefaultWebhookSecretNameFormat.
	WebhookSecretsARN string

	// StreamBatchSize and StreamBatchingWindow shape the drainer's stream
	// wake-ups. Defaults 100 and 1s.
	StreamBatchSize      int
	StreamBatchingWindow time.Duration

	// Tracing selects X-Ray (default), OpenTelemetry or none.
	Tracing Tracing
	// OTelLayerARN is the OpenTelemetry collector layer (Tracing "otel").
	OTelLayerARN string

	// LocalEndpoints declares the AWS SDK's endpoint variables
	// (LocalEndpointVariables) empty in every function, so that `sam local
	// invoke --env-vars` can set them: SAM only overrides variables the
	// template declares. For a template synthesized for local testing only;
	// never deploy it.
	LocalEndpoints bool

	// AlarmTopicARN (an existing SNS topic) or AlarmEmail (a new topic with
	// this subscriber) receives the alarms; neither: alarms only show in
	// the console.
	AlarmTopicARN string
	AlarmEmail    string
	// Alarms are the alarm thresholds.
	Alarms AlarmThresholds
}

// The defaults of WithDefaults.
const (
	// The engine's settings default to the engine's own defaults.
	DefaultTableName        = outbox.DefaultTable
	DefaultPartitions       = outbox.DefaultPartitions
	DefaultLease            = outbox.DefaultLease
	DefaultWriteMargin      = outbox.DefaultWriteMargin
	DefaultClockSkew        = outbox.DefaultClockSkew
	DefaultMaxDeferrals     = outbox.DefaultMaxDeferrals
	DefaultMaxDeferTime     = outbox.DefaultMaxDeferTime
	DefaultRetention        = outbox.DefaultRetention
	DefaultRowCap           = outbox.DefaultRowCap
	DefaultProviderTimeout  = 30 * time.Second
	DefaultLogLevel         = "info"
	DefaultLogRetentionDays = 30
	DefaultWorkspaceClaim   = "ferry_workspaces"
	DefaultAPIThrottleRate  = 50
	DefaultAPIThrottleBurst = 100
	DefaultStreamBatchSize  = 100
	DefaultStreamWindow     = time.Second
	// MaxPartitions is the engine's bound on a table's partition count
	// (the functions' FERRY_PARTITIONS, ferry partitions --set).
	MaxPartitions = outbox.MaxPartitionCount
	// maxLambdaTimeout is Lambda's limit.
	maxLambdaTimeout = 15 * time.Minute
	// apiIntegrationTimeout is API Gateway HTTP API's integration limit.
	apiIntegrationTimeout = 30 * time.Second
)

// DefaultFunctionSizes are the functions' default memory and timeouts.
var DefaultFunctionSizes = FunctionSizes{
	Enqueue:   FunctionSize{MemoryMB: 256, Timeout: 10 * time.Second},
	Drainer:   FunctionSize{MemoryMB: 512, Timeout: 2 * time.Minute},
	Reaper:    FunctionSize{MemoryMB: 256, Timeout: 55 * time.Second},
	Retention: FunctionSize{MemoryMB: 256, Timeout: 5 * time.Minute},
	SESEvents: FunctionSize{MemoryMB: 128, Timeout: 30 * time.Second},
}

// DefaultAlarmThresholds are the alarms' default thresholds.
var DefaultAlarmThresholds = AlarmThresholds{
	OldestDueAge:         5 * time.Minute,
	Uncertain:            1,
	Failed:               5,
	StuckLaneHeads:       1,
	FunctionErrors:       1,
	FunctionThrottles:    1,
	DynamoDBThrottles:    1,
	DynamoDBSystemErrors: 1,
}

// WithDefaults returns p with every zero field set to its default.
func (p Props) WithDefaults() Props {
	setStr := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	setInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	setStr(&p.AssetDir, "../bin")
	setStr(&p.TableName, DefaultTableName)
	setInt(&p.Partitions, DefaultPartitions)
	setDur(&p.Lease, DefaultLease)
	setDur(&p.WriteMargin, DefaultWriteMargin)
	setDur(&p.ProviderTimeout, DefaultProviderTimeout)
	setDur(&p.ClockSkew, DefaultClockSkew)
	setInt(&p.MaxDeferrals, DefaultMaxDeferrals)
	setDur(&p.MaxDeferTime, DefaultMaxDeferTime)
	setDur(&p.Retention, DefaultRetention)
	setInt(&p.RowCap, DefaultRowCap)
	setStr(&p.LogLevel, DefaultLogLevel)
	setInt(&p.LogRetentionDays, DefaultLogRetentionDays)
	for _, f := range []struct {
		v *FunctionSize
		d FunctionSize
	}{
		{&p.Functions.Enqueue, DefaultFunctionSizes.Enqueue},
		{&p.Functions.Drainer, DefaultFunctionSizes.Drainer},
		{&p.Functions.Reaper, DefaultFunctionSizes.Reaper},
		{&p.Functions.Retention, DefaultFunctionSizes.Retention},
		{&p.Functions.SESEvents, DefaultFunctionSizes.SESEvents},
	} {
		setInt(&f.v.MemoryMB, f.d.MemoryMB)
		setDur(&f.v.Timeout, f.d.Timeout)
	}
	if p.JWTIssuer != "" || len(p.JWTAudience) > 0 {
		setStr(&p.WorkspaceClaim, DefaultWorkspaceClaim)
	}
	if p.APIThrottleRate == 0 {
		p.APIThrottleRate = DefaultAPIThrottleRate
	}
	setInt(&p.APIThrottleBurst, DefaultAPIThrottleBurst)
	setInt(&p.StreamBatchSize, DefaultStreamBatchSize)
	setDur(&p.StreamBatchingWindow, DefaultStreamWindow)
	if p.Tracing == "" {
		p.Tracing = TracingXRay
	}
	a, d := &p.Alarms, DefaultAlarmThresholds
	setDur(&a.OldestDueAge, d.OldestDueAge)
	setInt(&a.Uncertain, d.Uncertain)
	setInt(&a.Failed, d.Failed)
	setInt(&a.StuckLaneHeads, d.StuckLaneHeads)
	setInt(&a.FunctionErrors, d.FunctionErrors)
	setInt(&a.FunctionThrottles, d.FunctionThrottles)
	setInt(&a.DynamoDBThrottles, d.DynamoDBThrottles)
	setInt(&a.DynamoDBSystemErrors, d.DynamoDBSystemErrors)
	return p
}

// UsesJWT reports whether the API uses a JWT authorizer (else IAM).
func (p *Props) UsesJWT() bool { return p.JWTIssuer != "" }

var (
	tableNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)
	// secretNameRE is Secrets Manager's name alphabet, plus %s.
	secretNameRE = regexp.MustCompile(`^([a-zA-Z0-9/_+=.@-]|%s)+$`)
	// allowedLogRetentionDays are CloudWatch Logs' retention values.
	allowedLogRetentionDays = []int{1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}
)

// engineConfig is the engine configuration the functions run with (what
// their environment sets; the rest keeps the engine's defaults).
func (p *Props) engineConfig() outbox.Config {
	return outbox.Config{
		Table: p.TableName, Partitions: p.Partitions, Lease: p.Lease, WriteMargin: p.WriteMargin,
		ClockSkew: p.ClockSkew, Retention: p.Retention, RowCap: p.RowCap,
		MaxDeferrals: p.MaxDeferrals, MaxDeferTime: p.MaxDeferTime,
	}.WithDefaults()
}

// Validate checks p (after WithDefaults) and returns every problem found,
// each naming the props involved. The timing rules:
//
//  1. The engine's own rules (outbox.Config.Validate) on the settings the
//     functions pass to it: WriteMargin < Lease (a claim must leave room
//     for the write fence), ClockSkew < WriteMargin, Retention, RowCap.
//  2. ProviderTimeout + ClockSkew < WriteMargin: a provider call started
//     behind the fence ends before the lease can run out (design.md §11, invariant 7).
//  3. Functions.Drainer.Timeout > WriteMargin + ProviderTimeout: a drainer
//     invocation can start at least one attempt with the margin the fence
//     demands and still write its outcome.
//  4. Lease > Functions.Drainer.Timeout + ClockSkew: a claim outlives the
//     invocation that took it, so no other drainer reclaims an action
//     while its holder may still be running.
//  5. Functions.Enqueue.Timeout < 30s: API Gateway's integration limit.
//  6. Every function timeout is positive and at most 15m; memory is
//     128..10240 MB.
func (p *Props) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if !tableNameRE.MatchString(p.TableName) {
		bad("TableName (%q) must be 3 to 255 letters, digits, '_', '.' or '-'", p.TableName)
	}
	if p.AssetDir == "" {
		bad("AssetDir must name the directory holding <function>/bootstrap")
	}
	if p.Partitions < 1 || p.Partitions > MaxPartitions {
		bad("Partitions (%d) must be between 1 and %d", p.Partitions, MaxPartitions)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Lease", p.Lease}, {"WriteMargin", p.WriteMargin}, {"ProviderTimeout", p.ProviderTimeout}, {"ClockSkew", p.ClockSkew}, {"Retention", p.Retention}, {"MaxDeferTime", p.MaxDeferTime}, {"StreamBatchingWindow", p.StreamBatchingWindow}} {
		if d.v < 0 {
			bad("%s (%s) must be positive", d.name, fmtDur(d.v))
		}
	}

	// The timing rules (see the doc comment).
	if err := p.engineConfig().Validate(); err != nil {
		var ve *outbox.ValidationError
		if errors.As(err, &ve) {
			// The engine's messages name its fields, which are these props
			// but for the table's name.
			bad("%s", ve.Named(map[string]string{"Table": "TableName"}))
		} else {
			bad("%s", err)
		}
	}
	if p.ProviderTimeout+p.ClockSkew >= p.WriteMargin {
		bad("ProviderTimeout (%s) + ClockSkew (%s) must be shorter than WriteMargin (%s): a provider call must end before the fence margin runs out",
			fmtDur(p.ProviderTimeout), fmtDur(p.ClockSkew), fmtDur(p.WriteMargin))
	}
	drainer := p.Functions.Drainer.Timeout
	if drainer <= p.WriteMargin+p.ProviderTimeout {
		bad("Functions.Drainer.Timeout (%s) must exceed WriteMargin (%s) + ProviderTimeout (%s)",
			fmtDur(drainer), fmtDur(p.WriteMargin), fmtDur(p.ProviderTimeout))
	}
	if p.Lease <= drainer+p.ClockSkew {
		bad("Lease (%s) must exceed Functions.Drainer.Timeout (%s) + ClockSkew (%s): a claim must outlive the invocation that took it",
			fmtDur(p.Lease), fmtDur(drainer), fmtDur(p.ClockSkew))
	}
	if p.Functions.Enqueue.Timeout >= apiIntegrationTimeout {
		bad("Functions.Enqueue.Timeout (%s) must be shorter than %s, API Gateway's integration timeout",
			fmtDur(p.Functions.Enqueue.Timeout), fmtDur(apiIntegrationTimeout))
	}
	for _, f := range []struct {
		name string
		size FunctionSize
	}{{"Enqueue", p.Functions.Enqueue}, {"Drainer", p.Functions.Drainer}, {"Reaper", p.Functions.Reaper}, {"Retention", p.Functions.Retention}, {"SESEvents", p.Functions.SESEvents}} {
		if f.size.Timeout <= 0 || f.size.Timeout > maxLambdaTimeout || f.size.Timeout%time.Second != 0 {
			bad("Functions.%s.Timeout (%s) must be whole seconds between 1s and %s", f.name, fmtDur(f.size.Timeout), fmtDur(maxLambdaTimeout))
		}
		if f.size.MemoryMB < 128 || f.size.MemoryMB > 10240 {
			bad("Functions.%s.MemoryMB (%d) must be between 128 and 10240", f.name, f.size.MemoryMB)
		}
	}

	if p.Retention < time.Hour {
		bad("Retention (%s) must be at least 1h", fmtDur(p.Retention))
	}
	if p.RowCap < 1 {
		bad("RowCap (%d) must be positive", p.RowCap)
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, strings.ToLower(p.LogLevel)) {
		bad("LogLevel (%q) must be debug, info, warn or error", p.LogLevel)
	}
	if !slices.Contains(allowedLogRetentionDays, p.LogRetentionDays) {
		bad("LogRetentionDays (%d) must be one of CloudWatch Logs' values %v", p.LogRetentionDays, allowedLogRetentionDays)
	}

	// Authorization.
	switch {
	case p.JWTIssuer != "" && len(p.JWTAudience) == 0:
		bad("JWTAudience must be set when JWTIssuer (%q) is", p.JWTIssuer)
	case p.JWTIssuer == "" && len(p.JWTAudience) > 0:
		bad("JWTIssuer must be set when JWTAudience is")
	}
	if p.JWTIssuer != "" {
		if u, err := url.Parse(p.JWTIssuer); err != nil || u.Scheme != "https" || u.Host == "" {
			bad("JWTIssuer (%q) must be an https URL", p.JWTIssuer)
		}
		if len(p.IAMWorkspaces) > 0 {
			bad("IAMWorkspaces only applies to IAM authorization, but JWTIssuer is set")
		}
	} else if p.WorkspaceClaim != "" {
		bad("WorkspaceClaim only applies to JWT authorization (set JWTIssuer and JWTAudience)")
	}
	principals := make([]string, 0, len(p.IAMWorkspaces))
	for principal := range p.IAMWorkspaces {
		principals = append(principals, principal)
	}
	slices.Sort(principals)
	for _, principal := range principals {
		if !strings.HasPrefix(principal, "arn:") {
			bad("IAMWorkspaces key %q must be a principal ARN", principal)
		}
		if len(p.IAMWorkspaces[principal]) == 0 {
			bad("IAMWorkspaces[%q] has no workspaces", principal)
		}
		for _, ws := range p.IAMWorkspaces[principal] {
			if ws == "" || strings.ContainsAny(ws, " \t\r\n") {
				bad("IAMWorkspaces[%q]: workspace %q is empty or has spaces", principal, ws)
			}
		}
	}
	if p.APIThrottleRate <= 0 || p.APIThrottleBurst <= 0 {
		bad("APIThrottleRate (%g) and APIThrottleBurst (%d) must be positive", p.APIThrottleRate, p.APIThrottleBurst)
	}

	// Named resources.
	checkARN := func(prop, arn, service, resource string) {
		parts := strings.SplitN(arn, ":", 6)
		if len(parts) != 6 || parts[0] != "arn" || parts[2] != service || !strings.HasPrefix(parts[5], resource) {
			bad("%s (%q) must be an ARN of the form arn:<partition>:%s:<region>:<account>:%s…", prop, arn, service, resource)
		}
	}
	if p.KMSKeyARN != "" {
		checkARN("KMSKeyARN", p.KMSKeyARN, "kms", "key/")
	}
	for i, arn := range p.SESIdentityARNs {
		checkARN(fmt.Sprintf("SESIdentityARNs[%d]", i), arn, "ses", "identity/")
	}
	if p.SESConfigurationSet != "" && len(p.SESIdentityARNs) == 0 {
		bad("SESConfigurationSet (%q) needs SESIdentityARNs to send from", p.SESConfigurationSet)
	}
	for i, arn := range p.EventBusARNs {
		checkARN(fmt.Sprintf("EventBusARNs[%d]", i), arn, "events", "event-bus/")
	}
	switch v := p.WebhookSecretsARN; {
	case strings.HasPrefix(v, "arn:"):
		checkARN("WebhookSecretsARN", v, "secretsmanager", "secret:")
	case v != "" && !secretNameRE.MatchString(v):
		bad("WebhookSecretsARN (%q) must be a secret ARN, a secret name, or a name format with %%s for the workspace", v)
	}
	if p.AlarmTopicARN != "" {
		checkARN("AlarmTopicARN", p.AlarmTopicARN, "sns", "")
		if p.AlarmEmail != "" {
			bad("AlarmTopicARN and AlarmEmail are exclusive: subscribe the address to the topic instead")
		}
	}
	if p.AlarmEmail != "" && !strings.Contains(p.AlarmEmail, "@") {
		bad("AlarmEmail (%q) must be an email address", p.AlarmEmail)
	}

	// Stream wake-ups.
	if p.StreamBatchSize < 1 || p.StreamBatchSize > 10000 {
		bad("StreamBatchSize (%d) must be between 1 and 10000", p.StreamBatchSize)
	}
	if p.StreamBatchingWindow > 5*time.Minute || p.StreamBatchingWindow%time.Second != 0 {
		bad("StreamBatchingWindow (%s) must be whole seconds up to 5m", fmtDur(p.StreamBatchingWindow))
	}

	// Tracing.
	switch p.Tracing {
	case TracingXRay, TracingOff:
		if p.OTelLayerARN != "" {
			bad("OTelLayerARN only applies to Tracing %q, but Tracing is %q", TracingOpenTelemetry, p.Tracing)
		}
	case TracingOpenTelemetry:
		if p.OTelLayerARN == "" {
			bad("OTelLayerARN must name the OpenTelemetry collector layer when Tracing is %q", TracingOpenTelemetry)
		} else {
			checkARN("OTelLayerARN", p.OTelLayerARN, "lambda", "layer:")
		}
	default:
		bad("Tracing (%q) must be %q, %q or %q", p.Tracing, TracingXRay, TracingOpenTelemetry, TracingOff)
	}

	// Alarms.
	a := p.Alarms
	if a.OldestDueAge < time.Minute {
		bad("Alarms.OldestDueAge (%s) must be at least 1m (the reaper measures it once a minute)", fmtDur(a.OldestDueAge))
	}
	for _, t := range []struct {
		name string
		v    int
	}{{"Uncertain", a.Uncertain}, {"Failed", a.Failed}, {"StuckLaneHeads", a.StuckLaneHeads}, {"FunctionErrors", a.FunctionErrors}, {"FunctionThrottles", a.FunctionThrottles}, {"DynamoDBThrottles", a.DynamoDBThrottles}, {"DynamoDBSystemErrors", a.DynamoDBSystemErrors}} {
		if t.v < 1 {
			bad("Alarms.%s (%d) must be at least 1", t.name, t.v)
		}
	}
	return errors.Join(errs...)
}

// fmtDur prints d the way the props are written: 60s, 90s, 5m, 1h30m.
// Up to two minutes, whole seconds read best in a timing rule's message.
func fmtDur(d time.Duration) string {
	if d > 0 && d <= 2*time.Minute && d%time.Second == 0 {
		return fmt.Sprintf("%ds", int64(d/time.Second))
	}
	s := d.String()
	s = strings.TrimSuffix(s, "m0s")
	if s != d.String() {
		s += "m"
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
