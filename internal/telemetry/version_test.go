package telemetry

import (
	"bytes"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/version"
)

// TestEMFLinesCarryTheVersion: every EMF line, counters and gauges alike,
// names the build as a plain property, never as a dimension.
func TestEMFLinesCarryTheVersion(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	m := NewMetrics(&out, clock.NewManual(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)), map[string]string{"function": "reaper"})
	m.Count("ReapedActions", 2, Dim{Name: "StopReason", Value: "EXPIRED"})
	require.NoError(t, m.Gauges([]Dim{{Name: "Partition", Value: "3"}}, Gauge{Name: "BacklogDepth", Unit: UnitCount, Value: 7}))
	require.NoError(t, m.Flush())

	docs := emfLines(t, &out)
	require.Len(t, docs, 2)
	for _, d := range docs {
		require.Equal(t, version.String(), d[KeyVersion])
		require.Equal(t, "reaper", d["function"])
		dir := d["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
		for _, set := range dir["Dimensions"].([]any) {
			require.NotContains(t, set, KeyVersion)
		}
	}
}

// TestEMFVersionGivenByCaller: props naming a version keep it (ferry dev or
// a test may say which build it reports).
func TestEMFVersionGivenByCaller(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	m := NewMetrics(&out, clock.NewManual(time.Unix(0, 0)), map[string]string{KeyVersion: "v0.9.0"})
	m.Count("ClaimConflicts", 1)
	require.NoError(t, m.Flush())
	docs := emfLines(t, &out)
	require.Len(t, docs, 1)
	require.Equal(t, "v0.9.0", docs[0][KeyVersion])
}

func TestLogColdStart(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	LogColdStart(NewLogger(&out, slog.LevelInfo).With(slog.String("function", "drainer")))
	docs := lines(t, &out)
	require.Len(t, docs, 1)
	require.Equal(t, "cold start", docs[0]["msg"])
	require.Equal(t, "drainer", docs[0]["function"])
	require.Equal(t, version.String(), docs[0][KeyVersion])
	require.Equal(t, runtime.Version(), docs[0]["go"])
}
