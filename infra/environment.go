package infra

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The environment variables the functions read (API.md, "The functions'
// environment"). This file is the only place the stack names them; the
// table in docs/deploy.md lists the same.
const (
	EnvTable               = "FERRY_TABLE"
	EnvPartitions          = "FERRY_PARTITIONS"
	EnvLease               = "FERRY_LEASE"
	EnvWriteMargin         = "FERRY_WRITE_MARGIN"
	EnvLogLevel            = "LOG_LEVEL"
	EnvWorkspaceClaim      = "FERRY_WORKSPACE_CLAIM"
	EnvIAMWorkspaces       = "FERRY_IAM_WORKSPACES"
	EnvRetention           = "FERRY_RETENTION"
	EnvRowCap              = "FERRY_ROW_CAP"
	EnvWebhookSecretsARN   = "FERRY_WEBHOOK_SECRETS_ARN"
	EnvSESConfigurationSet = "FERRY_SES_CONFIGURATION_SET"
	// EnvStack is the stack's name: the value of the Stack dimension every
	// Ferry metric carries, so two stacks in one account and region keep
	// their metrics apart.
	EnvStack = "FERRY_STACK"
	// EnvClockSkew and EnvProviderTimeout carry ClockSkew and
	// ProviderTimeout, the bounds the timing rules of Props.Validate are
	// checked against, to the functions that must honour them.
	EnvClockSkew       = "FERRY_CLOCK_SKEW"
	EnvProviderTimeout = "FERRY_PROVIDER_TIMEOUT"
	// EnvMaxDeferrals and EnvMaxDeferTime bound a run of deferrals
	// (MaxDeferrals, MaxDeferTime).
	EnvMaxDeferrals = "FERRY_MAX_DEFERRALS"
	EnvMaxDeferTime = "FERRY_MAX_DEFER_TIME"
	// OpenTelemetry's own variables, set with Tracing "otel" only.
	EnvOTelServiceName = "OTEL_SERVICE_NAME"
	EnvOTelEndpoint    = "OTEL_EXPORTER_OTLP_ENDPOINT"
)

// LocalEndpointVariables are the AWS SDK's per-service endpoint variables
// declared (empty) with Props.LocalEndpoints.
var LocalEndpointVariables = []string{"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SESV2", "AWS_ENDPOINT_URL_EVENTBRIDGE"}

// otelCollectorEndpoint is where the collector layer listens (OTLP/HTTP).
const otelCollectorEndpoint = "http://localhost:4318"

// FunctionEnvironment returns the environment of function fn: the shared
// variables, then fn's own. table is the table's name as the template should
// hold it (a token in the stack, a plain name in tests of this function);
// stack is the stack's name, the Stack dimension of the metrics.
func FunctionEnvironment(fn FunctionName, p *Props, table, stack string) (map[string]string, error) {
	env := map[string]string{
		EnvTable:       table,
		EnvStack:       stack,
		EnvPartitions:  strconv.Itoa(p.Partitions),
		EnvLease:       fmtDur(p.Lease),
		EnvWriteMargin: fmtDur(p.WriteMargin),
		// Every lease computation allows for the skew, and the adapters
		// bound each provider call by the timeout: the values the timing
		// rules were checked with are the values the functions run with.
		EnvClockSkew:       fmtDur(p.ClockSkew),
		EnvProviderTimeout: fmtDur(p.ProviderTimeout),
		// The drainer ends an action DEFERRALS_EXHAUSTED when a run of
		// deferrals reaches a bound; every function shares one
		// configuration.
		EnvMaxDeferrals: strconv.Itoa(p.MaxDeferrals),
		EnvMaxDeferTime: fmtDur(p.MaxDeferTime),
		EnvLogLevel:     strings.ToLower(p.LogLevel),
		// Every function ends actions (cancel, outcomes, the reaper) and
		// stamps their TTL and journal expiry from the retention, so all
		// of them read it, not only the retention function.
		EnvRetention: fmtDur(p.Retention),
		EnvRowCap:    strconv.Itoa(p.RowCap),
	}
	switch fn {
	case FunctionEnqueue:
		if p.UsesJWT() {
			env[EnvWorkspaceClaim] = p.WorkspaceClaim
		} else {
			// Always set under IAM, "{}" when no principal is mapped yet, so
			// the function's configuration says what the stack decided.
			m := p.IAMWorkspaces
			if m == nil {
				m = map[string][]string{}
			}
			b, err := json.Marshal(m) // map keys are sorted: a stable template
			if err != nil {
				return nil, fmt.Errorf("error encoding IAMWorkspaces: %w", err)
			}
			env[EnvIAMWorkspaces] = string(b)
		}
	case FunctionDrainer:
		if p.WebhookSecretsARN != "" {
			env[EnvWebhookSecretsARN] = p.WebhookSecretsARN
		}
		if p.SESConfigurationSet != "" {
			env[EnvSESConfigurationSet] = p.SESConfigurationSet
		}
	case FunctionSESEvents:
		// The set its rule routes: an event of another is dropped.
		if p.SESConfigurationSet != "" {
			env[EnvSESConfigurationSet] = p.SESConfigurationSet
		}
	case FunctionReaper, FunctionRetention:
	default:
		return nil, fmt.Errorf("unknown function %q", fn)
	}
	if p.LocalEndpoints {
		for _, v := range LocalEndpointVariables {
			env[v] = ""
		}
	}
	if p.Tracing == TracingOpenTelemetry {
		env[EnvOTelServiceName] = "ferry-" + string(fn)
		env[EnvOTelEndpoint] = otelCollectorEndpoint
	}
	return env, nil
}
