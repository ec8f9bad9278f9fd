package coldstart

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/ferryhq/ferry/internal/outbox"
)

// The environment variables the functions read.
const (
	EnvTable       = "FERRY_TABLE"
	EnvPartitions  = "FERRY_PARTITIONS"
	EnvLease       = "FERRY_LEASE"
	EnvWriteMargin = "FERRY_WRITE_MARGIN"
	// EnvClockSkew bounds how far the functions' clocks may disagree
	// (default the engine's 5s; 0s when they read one clock).
	EnvClockSkew = "FERRY_CLOCK_SKEW"
	// EnvMaxDeferrals and EnvMaxDeferTime bound a run of deferrals
	// (default the engine's 50 and 24h).
	EnvMaxDeferrals   = "FERRY_MAX_DEFERRALS"
	EnvMaxDeferTime   = "FERRY_MAX_DEFER_TIME"
	EnvLogLevel       = "LOG_LEVEL"
	EnvWorkspaceClaim = "FERRY_WORKSPACE_CLAIM"
	EnvIAMWorkspaces  = "FERRY_IAM_WORKSPACES"
	EnvMaxBody        = "FERRY_MAX_BODY"
	EnvMaxPayload     = "FERRY_MAX_PAYLOAD"
	// DefaultWorkspaceClaim is the JWT claim that lists a principal's
	// workspaces when FERRY_WORKSPACE_CLAIM is unset.
	DefaultWorkspaceClaim = "ferry_workspaces"
	// DefaultMaxBody is the largest request body the HTTP API reads (bytes).
	DefaultMaxBody = 256 * 1024
	// MaxPartitions bounds FERRY_PARTITIONS: the engine's own bound on a
	// table's count (a sweep visits every partition).
	MaxPartitions = outbox.MaxPartitionCount
)

// Config is the configuration every function shares. Its fields mirror the
// engine's outbox.Config fields of the same names; zero values never leave
// Load (the engine's defaults are applied, and its rules checked).
type Config struct {
	Table       string        // FERRY_TABLE, required
	Partitions  int           // FERRY_PARTITIONS, default outbox.DefaultPartitions
	Lease       time.Duration // FERRY_LEASE, default outbox.DefaultLease
	WriteMargin time.Duration // FERRY_WRITE_MARGIN, default outbox.DefaultWriteMargin, below Lease
	// ClockSkew is FERRY_CLOCK_SKEW, default outbox.DefaultClockSkew; a
	// set 0s stays 0 (the engine's SingleClock).
	ClockSkew    time.Duration
	MaxDeferrals int           // FERRY_MAX_DEFERRALS, default outbox.DefaultMaxDeferrals
	MaxDeferTime time.Duration // FERRY_MAX_DEFER_TIME, default outbox.DefaultMaxDeferTime
	LogLevel     slog.Level    // LOG_LEVEL, default info
}

// Outbox returns the engine configuration these settings make; the fields
// the environment does not set keep the engine's defaults.
func (c Config) Outbox() outbox.Config {
	return outbox.Config{
		Table: c.Table, Partitions: c.Partitions, Lease: c.Lease, WriteMargin: c.WriteMargin,
		ClockSkew: c.ClockSkew, SingleClock: c.ClockSkew == 0,
		MaxDeferrals: c.MaxDeferrals, MaxDeferTime: c.MaxDeferTime,
	}
}

// EnvError says which environment variable is missing or invalid.
type EnvError struct {
	Var    string // the variable's name
	Value  string // what it held ("" when unset)
	Reason string
}

func (e *EnvError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("environment variable %s: %s", e.Var, e.Reason)
	}
	return fmt.Sprintf("environment variable %s=%q: %s", e.Var, e.Value, e.Reason)
}

// Load reads the shared configuration through getenv (os.Getenv in a
// function's main). It returns an *EnvError (possibly several joined) naming
// each variable that is missing or invalid.
func Load(getenv func(string) string) (Config, error) {
	defaults := outbox.Config{}.WithDefaults()
	c := Config{
		Table:        strings.TrimSpace(getenv(EnvTable)),
		Partitions:   defaults.Partitions,
		Lease:        defaults.Lease,
		WriteMargin:  defaults.WriteMargin,
		ClockSkew:    defaults.ClockSkew,
		MaxDeferrals: defaults.MaxDeferrals,
		MaxDeferTime: defaults.MaxDeferTime,
		LogLevel:     slog.LevelInfo,
	}
	var errs []error
	if c.Table == "" {
		errs = append(errs, &EnvError{Var: EnvTable, Reason: "required (the DynamoDB table name)"})
	}
	if v := getenv(EnvPartitions); v != "" {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			errs = append(errs, &EnvError{Var: EnvPartitions, Value: v, Reason: "not an integer"})
		case n < 1 || n > MaxPartitions:
			errs = append(errs, &EnvError{Var: EnvPartitions, Value: v, Reason: fmt.Sprintf("must be between 1 and %d", MaxPartitions)})
		default:
			c.Partitions = n
		}
	}
	durationsOK := true
	if v := getenv(EnvMaxDeferrals); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			errs = append(errs, &EnvError{Var: EnvMaxDeferrals, Value: v, Reason: "must be a positive integer"})
			durationsOK = false
		} else {
			c.MaxDeferrals = n
		}
	}
	if v := getenv(EnvClockSkew); v != "" {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 0 {
			errs = append(errs, &EnvError{Var: EnvClockSkew, Value: v, Reason: "must be a duration of 0s or more (e.g. 5s)"})
			durationsOK = false
		} else {
			c.ClockSkew = d
		}
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{EnvLease, &c.Lease}, {EnvWriteMargin, &c.WriteMargin}, {EnvMaxDeferTime, &c.MaxDeferTime}} {
		v := getenv(d.name)
		if v == "" {
			continue
		}
		parsed, err := parsePositiveDuration(v)
		if err != nil {
			errs = append(errs, &EnvError{Var: d.name, Value: v, Reason: err.Error()})
			durationsOK = false
			continue
		}
		*d.dst = parsed
	}
	if durationsOK {
		errs = append(errs, engineRules(c)...)
	}
	if v := getenv(EnvLogLevel); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(strings.TrimSpace(v))); err != nil {
			errs = append(errs, &EnvError{Var: EnvLogLevel, Value: v, Reason: "must be debug, info, warn or error"})
		}
	}
	if len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}
	return c, nil
}

// engineVars names the variable of each engine setting the functions read.
var engineVars = map[string]string{
	"Table": EnvTable, "Partitions": EnvPartitions, "Lease": EnvLease, "WriteMargin": EnvWriteMargin,
	"ClockSkew": EnvClockSkew, "MaxDeferrals": EnvMaxDeferrals, "MaxDeferTime": EnvMaxDeferTime,
}

// engineRules checks c against the engine's own rules (outbox.Config.Validate:
// the write margin shorter than the lease, the clock skew shorter than the
// margin, ...), naming the variables involved and what would work.
func engineRules(c Config) []error {
	if c.Table == "" {
		return nil // reported above
	}
	err := c.Outbox().WithDefaults().Validate()
	var ve *outbox.ValidationError
	if !errors.As(err, &ve) {
		return nil
	}
	name, ok := engineVars[ve.Field]
	if !ok {
		return []error{err}
	}
	return []error{&EnvError{Var: name, Value: getField(c, ve.Field), Reason: ve.Named(engineVars)}}
}

func getField(c Config, field string) string {
	switch field {
	case "Partitions":
		return strconv.Itoa(c.Partitions)
	case "Lease":
		return c.Lease.String()
	case "WriteMargin":
		return c.WriteMargin.String()
	case "ClockSkew":
		return c.ClockSkew.String()
	case "MaxDeferrals":
		return strconv.Itoa(c.MaxDeferrals)
	case "MaxDeferTime":
		return c.MaxDeferTime.String()
	}
	return ""
}

func parsePositiveDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		return 0, errors.New("not a duration (e.g. 5m, 60s)")
	}
	if d <= 0 {
		return 0, errors.New("must be positive")
	}
	return d, nil
}

// Enqueue is the enqueue function's own configuration: how the authorizer's
// principal maps to workspaces, and the request size caps.
type Enqueue struct {
	// WorkspaceClaim names the JWT claim listing the principal's workspaces
	// (space-separated).
	WorkspaceClaim string
	// IAMWorkspaces maps an IAM principal ARN to its workspaces. Nil when
	// FERRY_IAM_WORKSPACES is unset.
	IAMWorkspaces map[string][]string
	MaxBody       int // FERRY_MAX_BODY, bytes, default 256 KiB
	MaxPayload    int // FERRY_MAX_PAYLOAD, bytes, default outbox.DefaultMaxPayload
}

// LoadEnqueue reads the enqueue function's configuration through getenv,
// returning an *EnvError (possibly several joined) naming each invalid
// variable.
func LoadEnqueue(getenv func(string) string) (Enqueue, error) {
	e := Enqueue{
		WorkspaceClaim: DefaultWorkspaceClaim,
		MaxBody:        DefaultMaxBody,
		MaxPayload:     outbox.DefaultMaxPayload,
	}
	var errs []error
	if v := getenv(EnvWorkspaceClaim); v != "" {
		v = strings.TrimSpace(v)
		if v == "" || strings.ContainsAny(v, " \t\r\n") {
			errs = append(errs, &EnvError{Var: EnvWorkspaceClaim, Value: v, Reason: "must be one claim name without spaces"})
		} else {
			e.WorkspaceClaim = v
		}
	}
	if v := getenv(EnvIAMWorkspaces); v != "" {
		m, err := parseIAMWorkspaces(v)
		if err != nil {
			// The value may be long; name the variable, not the whole value.
			errs = append(errs, &EnvError{Var: EnvIAMWorkspaces, Reason: err.Error()})
		} else {
			e.IAMWorkspaces = m
		}
	}
	for _, s := range []struct {
		name string
		dst  *int
	}{{EnvMaxBody, &e.MaxBody}, {EnvMaxPayload, &e.MaxPayload}} {
		v := getenv(s.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1024 || n > 6*1024*1024 {
			errs = append(errs, &EnvError{Var: s.name, Value: v, Reason: "must be a byte count between 1024 and 6291456"})
			continue
		}
		*s.dst = n
	}
	if len(errs) == 0 && e.MaxPayload > e.MaxBody {
		errs = append(errs, &EnvError{Var: EnvMaxPayload, Value: strconv.Itoa(e.MaxPayload),
			Reason: fmt.Sprintf("must not exceed %s (%d)", EnvMaxBody, e.MaxBody)})
	}
	if len(errs) > 0 {
		return Enqueue{}, errors.Join(errs...)
	}
	return e, nil
}

func parseIAMWorkspaces(v string) (map[string][]string, error) {
	dec := json.NewDecoder(strings.NewReader(v))
	var m map[string][]string
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("not a JSON object from principal ARN to a list of workspaces: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON object")
	}
	if m == nil {
		return nil, errors.New("must be a JSON object, not null")
	}
	for arn, wss := range m {
		if !strings.HasPrefix(arn, "arn:") {
			return nil, fmt.Errorf("key %q is not an ARN", arn)
		}
		if len(wss) == 0 {
			return nil, fmt.Errorf("principal %q has no workspaces", arn)
		}
		for _, ws := range wss {
			if ws == "" || strings.ContainsAny(ws, " \t\r\n") {
				return nil, fmt.Errorf("principal %q: workspace %q is empty or has spaces", arn, ws)
			}
		}
	}
	return m, nil
}
