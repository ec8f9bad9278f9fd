package lambdastack

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

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
