package lambdastack

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLogsPrefixAndEMF(t *testing.T) {
	t.Parallel()
	var out, summary bytes.Buffer
	logs := &Logs{Out: &out}
	w := logs.Writer("drainer", "drainer#1")
	emf := `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"Ferry","Dimensions":[["Kind"]],"Metrics":[{"Name":"Attempts","Unit":"Count"}]}]},"Kind":"webhook","Attempts":%d}`
	_, _ = fmt.Fprintf(w, "first line\n"+emf+"\npart", 2)
	_, _ = fmt.Fprintf(w, "ial\n"+emf+"\n", 3)
	require.NoError(t, w.Close())

	require.Equal(t, "drainer#1   | first line\ndrainer#1   | partial\n", out.String(), "EMF lines are not printed")
	require.Equal(t, 5.0, logs.Metric("drainer", "Attempts", "Kind=webhook"))
	require.Equal(t, 0.0, logs.Metric("drainer", "Attempts", "Kind=email"))
	logs.Summary(&summary)
	require.Contains(t, summary.String(), "drainer")
	require.True(t, strings.Contains(summary.String(), "Attempts") && strings.Contains(summary.String(), "Kind=webhook"), summary.String())
}

// TestFunctionSummarySaysOneInstance is issue 28 item 12: the summary said
// "1 instances".
func TestFunctionSummarySaysOneInstance(t *testing.T) {
	t.Parallel()
	require.Equal(t, "  drainer    1 invocation on 1 instance (first invocations: 12ms); 0 scheduled",
		functionSummary("drainer", EmulatorStats{Instances: 1, Invocations: 1, ColdStarts: []time.Duration{12 * time.Millisecond}}, 0))
	require.Equal(t, "  reaper     3 invocations on 2 instances (first invocations: 10ms, 11ms); 3 scheduled",
		functionSummary("reaper", EmulatorStats{Instances: 2, Invocations: 3, ColdStarts: []time.Duration{10 * time.Millisecond, 11 * time.Millisecond}}, 3))
	require.Equal(t, "  sesevents  0 invocations on 0 instances; 0 scheduled", functionSummary("sesevents", EmulatorStats{}, 0))
}
