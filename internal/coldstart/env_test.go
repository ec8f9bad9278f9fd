package coldstart

import (
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoad(t *testing.T) {
	t.Parallel()

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		c, err := Load(env(map[string]string{EnvTable: "ferry"}))
		require.NoError(t, err)
		require.Equal(t, Config{Table: "ferry", Partitions: 16, Lease: 5 * time.Minute, WriteMargin: time.Minute,
			ClockSkew: 5 * time.Second, MaxDeferrals: 50, MaxDeferTime: 24 * time.Hour, LogLevel: slog.LevelInfo}, c)
	})

	t.Run("Set", func(t *testing.T) {
		t.Parallel()
		c, err := Load(env(map[string]string{EnvTable: "t", EnvPartitions: "4", EnvLease: "2m", EnvWriteMargin: "30s", EnvLogLevel: "debug"}))
		require.NoError(t, err)
		require.Equal(t, Config{Table: "t", Partitions: 4, Lease: 2 * time.Minute, WriteMargin: 30 * time.Second,
			ClockSkew: 5 * time.Second, MaxDeferrals: 50, MaxDeferTime: 24 * time.Hour, LogLevel: slog.LevelDebug}, c)
		oc := c.Outbox().WithDefaults()
		require.NoError(t, oc.Validate())
		require.Equal(t, 4, oc.Partitions)
		require.Equal(t, 30*time.Second, oc.WriteMargin)
	})

	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantVar string
	}{
		{"MissingTable", map[string]string{}, EnvTable},
		{"PartitionsNotInt", map[string]string{EnvTable: "t", EnvPartitions: "four"}, EnvPartitions},
		{"PartitionsZero", map[string]string{EnvTable: "t", EnvPartitions: "0"}, EnvPartitions},
		{"PartitionsTooMany", map[string]string{EnvTable: "t", EnvPartitions: "100000"}, EnvPartitions},
		{"LeaseBad", map[string]string{EnvTable: "t", EnvLease: "5"}, EnvLease},
		{"LeaseNegative", map[string]string{EnvTable: "t", EnvLease: "-1m"}, EnvLease},
		{"MarginBad", map[string]string{EnvTable: "t", EnvWriteMargin: "soon"}, EnvWriteMargin},
		{"MarginNotBelowLease", map[string]string{EnvTable: "t", EnvLease: "1m", EnvWriteMargin: "1m"}, EnvWriteMargin},
		{"LogLevelBad", map[string]string{EnvTable: "t", EnvLogLevel: "loud"}, EnvLogLevel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(env(tc.env))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.wantVar)
			var ee *EnvError
			require.ErrorAs(t, err, &ee)
			require.Equal(t, tc.wantVar, ee.Var)
		})
	}
}

func TestLoadEnqueue(t *testing.T) {
	t.Parallel()

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		e, err := LoadEnqueue(env(nil))
		require.NoError(t, err)
		require.Equal(t, Enqueue{WorkspaceClaim: "ferry_workspaces", MaxBody: 256 * 1024, MaxPayload: 200 * 1024}, e)
	})

	t.Run("Set", func(t *testing.T) {
		t.Parallel()
		e, err := LoadEnqueue(env(map[string]string{
			EnvWorkspaceClaim: "tenants",
			EnvIAMWorkspaces:  `{"arn:aws:iam::123456789012:role/app":["a","b"]}`,
			EnvMaxBody:        "4096", EnvMaxPayload: "2048",
		}))
		require.NoError(t, err)
		require.Equal(t, Enqueue{
			WorkspaceClaim: "tenants",
			IAMWorkspaces:  map[string][]string{"arn:aws:iam::123456789012:role/app": {"a", "b"}},
			MaxBody:        4096, MaxPayload: 2048,
		}, e)
	})

	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantVar string
	}{
		{"ClaimWithSpace", map[string]string{EnvWorkspaceClaim: "a b"}, EnvWorkspaceClaim},
		{"IAMNotJSON", map[string]string{EnvIAMWorkspaces: "{"}, EnvIAMWorkspaces},
		{"IAMTrailing", map[string]string{EnvIAMWorkspaces: `{} {}`}, EnvIAMWorkspaces},
		{"IAMNull", map[string]string{EnvIAMWorkspaces: `null`}, EnvIAMWorkspaces},
		{"IAMNotARN", map[string]string{EnvIAMWorkspaces: `{"role":["a"]}`}, EnvIAMWorkspaces},
		{"IAMEmptyList", map[string]string{EnvIAMWorkspaces: `{"arn:aws:iam::1:role/x":[]}`}, EnvIAMWorkspaces},
		{"IAMBadWorkspace", map[string]string{EnvIAMWorkspaces: `{"arn:aws:iam::1:role/x":[""]}`}, EnvIAMWorkspaces},
		{"MaxBodyBad", map[string]string{EnvMaxBody: "big"}, EnvMaxBody},
		{"PayloadOverBody", map[string]string{EnvMaxBody: "2048", EnvMaxPayload: "4096"}, EnvMaxPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := LoadEnqueue(env(tc.env))
			require.Error(t, err)
			var ee *EnvError
			require.ErrorAs(t, err, &ee)
			require.Equal(t, tc.wantVar, ee.Var)
		})
	}
}

// TestLoadFollowsTheEngine ties the functions' configuration to the engine:
// the defaults are outbox.Config's, and a lease/margin pair the engine
// refuses is refused naming the variable, with the engine's own reason.
func TestLoadFollowsTheEngine(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{EnvTable: "t"}))
	require.NoError(t, err)
	require.Equal(t, outbox.Config{Table: "t"}.WithDefaults(), c.Outbox().WithDefaults())
	// One bound on the partition count everywhere (issue 28, item 5).
	_, err = Load(env(map[string]string{EnvTable: "t", EnvPartitions: strconv.Itoa(outbox.MaxPartitionCount)}))
	require.NoError(t, err)
	_, err = Load(env(map[string]string{EnvTable: "t", EnvPartitions: strconv.Itoa(outbox.MaxPartitionCount + 1)}))
	require.ErrorContains(t, err, EnvPartitions)
	require.Error(t, outbox.Config{Table: "t", Partitions: outbox.MaxPartitionCount + 1}.WithDefaults().Validate(), "the engine refuses it too")

	for _, lm := range [][2]string{{"5m", "60s"}, {"1m", "1m"}, {"30s", "1m"}, {"5m", "5s"}, {"5m", "4s"}} {
		lease, _ := time.ParseDuration(lm[0])
		margin, _ := time.ParseDuration(lm[1])
		engineErr := outbox.Config{Table: "t", Lease: lease, WriteMargin: margin}.WithDefaults().Validate()
		_, err := Load(env(map[string]string{EnvTable: "t", EnvLease: lm[0], EnvWriteMargin: lm[1]}))
		if engineErr == nil {
			require.NoError(t, err, lm)
			continue
		}
		var ve *outbox.ValidationError
		require.ErrorAs(t, engineErr, &ve)
		require.ErrorContains(t, err, EnvWriteMargin, lm)
		require.ErrorContains(t, err, ve.Named(engineVars), lm)
	}
}

// TestClockSkewAndDeferralVariables: the functions read the clock skew
// bound (issue 13, finding 6: "the same for the functions' environment
// variables") and the deferral bounds (finding 1), and a combination the
// engine refuses names the variables set and what would work.
func TestClockSkewAndDeferralVariables(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{EnvTable: "t", EnvClockSkew: "0s", EnvLease: "5s", EnvWriteMargin: "1s",
		EnvMaxDeferrals: "7", EnvMaxDeferTime: "2h"}))
	require.NoError(t, err)
	o := c.Outbox().WithDefaults()
	require.Zero(t, o.ClockSkew, "a set 0s stays 0")
	require.Equal(t, 7, o.MaxDeferrals)
	require.Equal(t, 2*time.Hour, o.MaxDeferTime)
	require.NoError(t, o.Validate())

	_, err = Load(env(map[string]string{EnvTable: "t", EnvLease: "5s", EnvWriteMargin: "1s"}))
	require.EqualError(t, err, `environment variable FERRY_CLOCK_SKEW="5s": FERRY_CLOCK_SKEW (5s) must be shorter than FERRY_WRITE_MARGIN (1s): a provider call gets FERRY_WRITE_MARGIN less FERRY_CLOCK_SKEW; lower FERRY_CLOCK_SKEW below 1s or raise FERRY_WRITE_MARGIN above 5s`,
		"the default skew is named, with the variable that sets it")
	for v, bad := range map[string]string{EnvClockSkew: "-1s", EnvMaxDeferrals: "0", EnvMaxDeferTime: "soon"} {
		_, err := Load(env(map[string]string{EnvTable: "t", v: bad}))
		require.ErrorContains(t, err, v)
	}
	_, err = Load(env(map[string]string{EnvTable: "t", EnvMaxDeferTime: "100ms"}))
	require.ErrorContains(t, err, "FERRY_MAX_DEFER_TIME (100ms) cannot be shorter than RetryBase (1s)")
}
