package infra

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ContextKey is the CDK context key holding the stack's configuration (in
// cdk.json's "context", or `cdk synth -c ferry='{…}'`).
const ContextKey = "ferry"

// Config is Props as JSON, for the CDK context: durations are Go duration
// strings ("5m", "60s", "720h"). Every field is optional.
type Config struct {
	StackName                 string `json:"stackName"`
	AssetDir                  string `json:"assetDir"`
	TableName                 string `json:"tableName"`
	DisableDeletionProtection bool   `json:"disableDeletionProtection"`
	KMSKeyARN                 string `json:"kmsKeyArn"`
	Partitions                int    `json:"partitions"`
	Lease                     string `json:"lease"`
	WriteMargin               string `json:"writeMargin"`
	ProviderTimeout           string `json:"providerTimeout"`
	ClockSkew                 string `json:"clockSkew"`
	MaxDeferrals              int    `json:"maxDeferrals"`
	MaxDeferTime              string `json:"maxDeferTime"`
	Retention                 string `json:"retention"`
	RowCap                    int    `json:"rowCap"`
	LogLevel                  string `json:"logLevel"`
	LogRetentionDays          int    `json:"logRetentionDays"`
	Functions                 map[string]struct {
		MemoryMB int    `json:"memoryMB"`
		Timeout  string `json:"timeout"`
	} `json:"functions"`
	JWTIssuer            string              `json:"jwtIssuer"`
	JWTAudience          []string            `json:"jwtAudience"`
	WorkspaceClaim       string              `json:"workspaceClaim"`
	IAMWorkspaces        map[string][]string `json:"iamWorkspaces"`
	APIThrottleRate      float64             `json:"apiThrottleRate"`
	APIThrottleBurst     int                 `json:"apiThrottleBurst"`
	SESIdentityARNs      []string            `json:"sesIdentityArns"`
	SESConfigurationSet  string              `json:"sesConfigurationSet"`
	EventBusARNs         []string            `json:"eventBusArns"`
	WebhookSecretsARN    string              `json:"webhookSecretsArn"`
	StreamBatchSize      int                 `json:"streamBatchSize"`
	StreamBatchingWindow string              `json:"streamBatchingWindow"`
	Tracing              string              `json:"tracing"`
	OTelLayerARN         string              `json:"otelLayerArn"`
	LocalEndpoints       bool                `json:"localEndpoints"`
	AlarmTopicARN        string              `json:"alarmTopicArn"`
	AlarmEmail           string              `json:"alarmEmail"`
	Alarms               struct {
		OldestDueAge         string `json:"oldestDueAge"`
		Uncertain            int    `json:"uncertain"`
		Failed               int    `json:"failed"`
		StuckLaneHeads       int    `json:"stuckLaneHeads"`
		FunctionErrors       int    `json:"functionErrors"`
		FunctionThrottles    int    `json:"functionThrottles"`
		DynamoDBThrottles    int    `json:"dynamodbThrottles"`
		DynamoDBSystemErrors int    `json:"dynamodbSystemErrors"`
	} `json:"alarms"`
}

// ConfigFromContext decodes the context value v: nil (no configuration), a
// JSON object (from cdk.json), or a string holding one (from -c). Unknown
// keys are refused, so a misspelt setting is not silently ignored.
func ConfigFromContext(v any) (Config, error) {
	var c Config
	var raw []byte
	switch v := v.(type) {
	case nil:
		return c, nil
	case string:
		raw = []byte(v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return c, fmt.Errorf("context %q: %w", ContextKey, err)
		}
		raw = b
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("context %q: %w", ContextKey, err)
	}
	return c, nil
}

// Props converts c to Props (defaults are applied later, by NewStack).
func (c Config) Props() (Props, error) {
	p := Props{
		AssetDir: c.AssetDir, TableName: c.TableName, DisableDeletionProtection: c.DisableDeletionProtection,
		KMSKeyARN: c.KMSKeyARN, Partitions: c.Partitions, RowCap: c.RowCap, MaxDeferrals: c.MaxDeferrals, LogLevel: c.LogLevel,
		LogRetentionDays: c.LogRetentionDays, JWTIssuer: c.JWTIssuer, JWTAudience: c.JWTAudience,
		WorkspaceClaim: c.WorkspaceClaim, IAMWorkspaces: c.IAMWorkspaces, APIThrottleRate: c.APIThrottleRate,
		APIThrottleBurst: c.APIThrottleBurst, SESIdentityARNs: c.SESIdentityARNs,
		SESConfigurationSet: c.SESConfigurationSet, EventBusARNs: c.EventBusARNs,
		WebhookSecretsARN: c.WebhookSecretsARN, StreamBatchSize: c.StreamBatchSize,
		Tracing: Tracing(c.Tracing), OTelLayerARN: c.OTelLayerARN, AlarmTopicARN: c.AlarmTopicARN,
		AlarmEmail: c.AlarmEmail, LocalEndpoints: c.LocalEndpoints,
	}
	p.Alarms = AlarmThresholds{
		Uncertain: c.Alarms.Uncertain, Failed: c.Alarms.Failed, StuckLaneHeads: c.Alarms.StuckLaneHeads,
		FunctionErrors: c.Alarms.FunctionErrors, FunctionThrottles: c.Alarms.FunctionThrottles,
		DynamoDBThrottles: c.Alarms.DynamoDBThrottles, DynamoDBSystemErrors: c.Alarms.DynamoDBSystemErrors,
	}
	var errs []error
	dur := func(name, v string, dst *time.Duration) {
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (%q) is not a duration such as 60s, 5m or 720h", name, v))
			return
		}
		*dst = d
	}
	dur("lease", c.Lease, &p.Lease)
	dur("writeMargin", c.WriteMargin, &p.WriteMargin)
	dur("providerTimeout", c.ProviderTimeout, &p.ProviderTimeout)
	dur("clockSkew", c.ClockSkew, &p.ClockSkew)
	dur("maxDeferTime", c.MaxDeferTime, &p.MaxDeferTime)
	dur("retention", c.Retention, &p.Retention)
	dur("streamBatchingWindow", c.StreamBatchingWindow, &p.StreamBatchingWindow)
	dur("alarms.oldestDueAge", c.Alarms.OldestDueAge, &p.Alarms.OldestDueAge)
	for name, f := range c.Functions {
		var size *FunctionSize
		switch FunctionName(name) {
		case FunctionEnqueue:
			size = &p.Functions.Enqueue
		case FunctionDrainer:
			size = &p.Functions.Drainer
		case FunctionReaper:
			size = &p.Functions.Reaper
		case FunctionRetention:
			size = &p.Functions.Retention
		case FunctionSESEvents:
			size = &p.Functions.SESEvents
		default:
			errs = append(errs, fmt.Errorf("functions.%s: no such function (enqueue, drainer, reaper, retention, sesevents)", name))
			continue
		}
		size.MemoryMB = f.MemoryMB
		dur("functions."+name+".timeout", f.Timeout, &size.Timeout)
	}
	if len(errs) > 0 {
		return p, fmt.Errorf("context %q: %w", ContextKey, joinErrs(errs))
	}
	return p, nil
}

func joinErrs(errs []error) error {
	return errors.Join(errs...)
}
