package devstack

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// TestConfigFollowsTheEngine ties `ferry dev`'s engine settings to the
// engine: the lease, margin, retry base and table default to outbox.Config's,
// and a lease/margin pair the engine refuses is refused naming the flag, with
// the engine's own reason.
func TestConfigFollowsTheEngine(t *testing.T) {
	t.Parallel()
	c := Config{}.WithDefaults()
	engine := outbox.Config{}.WithDefaults()
	require.Equal(t, engine.Lease, c.Lease)
	require.Equal(t, engine.WriteMargin, c.WriteMargin)
	require.Equal(t, engine.RetryBase, c.RetryBase)
	require.Equal(t, outbox.DefaultTable, c.Table)
	require.NoError(t, c.Validate())
	// One bound on the partition count everywhere (issue 28, item 5).
	c.Partitions = outbox.MaxPartitionCount
	require.NoError(t, c.Validate())
	c.Partitions++
	require.ErrorContains(t, c.Validate(), "--partitions must be between 1 and 1024")
	require.Error(t, c.outbox().WithDefaults().Validate(), "the engine refuses it too")
	c.Partitions = 4

	for _, lm := range [][2]time.Duration{{time.Minute, time.Minute}, {30 * time.Second, time.Minute}, {5 * time.Minute, 5 * time.Second}, {5 * time.Minute, 6 * time.Second}} {
		d := c
		d.Lease, d.WriteMargin = lm[0], lm[1]
		engineErr := d.outbox().WithDefaults().Validate()
		err := d.Validate()
		if engineErr == nil {
			require.NoError(t, err, lm)
			continue
		}
		var ve *outbox.ValidationError
		require.ErrorAs(t, engineErr, &ve)
		require.EqualError(t, err, ve.Named(engineFlags), lm)
		require.NotRegexp(t, `\b(Lease|WriteMargin|ClockSkew)\b`, err.Error(), "the user set flags, not fields")
	}
}

// TestShortLeasesAreAccepted is issue 13, finding 6: `ferry dev --lease 5s
// --write-margin 1s` refused to start over a ClockSkew the user could
// neither see nor set. One process has one clock: the skew is 0 unless
// --clock-skew says otherwise, and a combination the engine cannot honour
// is refused naming the flags and what would work.
func TestShortLeasesAreAccepted(t *testing.T) {
	t.Parallel()
	c := Config{Lease: 5 * time.Second, WriteMargin: time.Second}.WithDefaults()
	require.NoError(t, c.Validate())
	require.Zero(t, c.outbox().WithDefaults().ClockSkew, "one process, one clock")

	for _, tc := range []struct {
		lease, margin, skew time.Duration
		want                string
	}{
		{5 * time.Second, time.Second, 2 * time.Second,
			"--clock-skew (2s) must be shorter than --write-margin (1s): a provider call gets --write-margin less --clock-skew; lower --clock-skew below 1s or raise --write-margin above 2s"},
		{5 * time.Second, 3 * time.Second, 2 * time.Second,
			"--lease (5s) must be longer than --write-margin (3s) plus --clock-skew (2s): raise --lease above 5s, or lower --write-margin or --clock-skew"},
		{5 * time.Second, 5 * time.Second, 0,
			"--write-margin (5s) must be shorter than --lease (5s): lower --write-margin below 5s or raise --lease above 5s"},
	} {
		d := Config{Lease: tc.lease, WriteMargin: tc.margin, ClockSkew: tc.skew}.WithDefaults()
		require.EqualError(t, d.Validate(), tc.want)
	}
	ok := Config{Lease: 5 * time.Second, WriteMargin: 3 * time.Second, ClockSkew: time.Second}.WithDefaults()
	require.NoError(t, ok.Validate())
	require.Equal(t, time.Second, ok.outbox().WithDefaults().ClockSkew)
}

// TestEngineConfigIsWhatRuns: the configuration Validate checks is the one
// the stack runs once the defaults are in (the engine's defaults under the
// settings without a flag only).
func TestEngineConfigIsWhatRuns(t *testing.T) {
	t.Parallel()
	c := Config{Lease: 7 * time.Minute, ClockSkew: time.Second, MaxDeferrals: 3}.WithDefaults()
	require.Equal(t, c.outbox().WithDefaults(), c.engineConfig())
	zero := Config{}
	require.Zero(t, zero.engineConfig().Partitions, "a zero set by a flag reaches the engine's rules")
	require.Zero(t, zero.engineConfig().RetryBase)
}

// TestParseTokensRefusesARepeatedToken: one token, one entry.
func TestParseTokensRefusesARepeatedToken(t *testing.T) {
	t.Parallel()
	got, err := ParseTokens([]string{"a=x,y", "b=z"})
	require.NoError(t, err)
	require.Equal(t, []Token{{Token: "a", Workspaces: []string{"x", "y"}}, {Token: "b", Workspaces: []string{"z"}}}, got)
	_, err = ParseTokens([]string{"a=x", "b=z", " a = y"})
	require.EqualError(t, err, `--token: token "a" is given twice ("a=x" and " a = y"); give it once with all its workspaces, e.g. --token a=x,y`)
	require.EqualError(t, Config{Tokens: append(got, got[0])}.WithDefaults().Validate(), `--token: token "a" is given twice; give it once with all its workspaces`)
}
