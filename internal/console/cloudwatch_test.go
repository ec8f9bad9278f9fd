package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/console"
	"github.com/ferryhq/ferry/internal/console/consoletest"
)

// TestCloudWatchSeries: against a deployed stack the chart reads the
// metrics the dashboard graphs with one GetMetricData call (through the
// AWS SDK, to a loopback stand-in): the counts summed across kinds for
// the stack, the stack-wide backlog gauge, minute by minute; a quiet
// minute after the first datapoint counts zero.
func TestCloudWatchSeries(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 0, 30, 0, time.UTC)
	quietAt := now.Truncate(time.Minute).Add(-5 * time.Minute)
	cw := consoletest.NewCloudWatch(func(id string, at time.Time) (float64, bool) {
		if at.Equal(quietAt) || at.Before(now.Add(-30*time.Minute)) {
			return 0, false
		}
		return map[string]float64{"enqueued": 12, "delivered": 10, "failed": 1, "deferred": 3, "backlog": 40}[id], true
	})
	t.Cleanup(cw.Close)
	client := cloudwatch.New(cloudwatch.Options{Region: "us-east-1", BaseEndpoint: aws.String(cw.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	_, err := console.NewCloudWatch(client, "bad'name")
	require.Error(t, err, "a name that could break out of the query")
	src, err := console.NewCloudWatch(client, "ferry-prod")
	require.NoError(t, err)

	s, err := src.Series(context.Background(), now)
	require.NoError(t, err)
	require.Len(t, s.Minutes, console.SeriesMinutes)
	last := console.SeriesMinutes - 1
	require.Equal(t, 12.0, *s.Enqueued[last])
	require.Equal(t, 10.0, *s.Delivered[last])
	require.Equal(t, 1.0, *s.Failed[last])
	require.Equal(t, 3.0, *s.Deferred[last])
	require.Equal(t, 40.0, *s.Backlog[last])
	require.Nil(t, s.Enqueued[0], "no datapoint before the metrics began")
	quiet := last - 5
	require.Equal(t, 0.0, *s.Enqueued[quiet], "a quiet minute counts zero")
	require.Nil(t, s.Backlog[quiet], "a gauge with no datapoint is unknown")

	qs := cw.Queries()
	require.Len(t, qs, 5)
	for _, q := range qs[:4] {
		require.Contains(t, q.Expression, `WHERE Stack = 'ferry-prod'`, q.ID)
		require.True(t, strings.HasPrefix(q.Expression, "SELECT SUM("), q.ID)
	}
	require.Contains(t, qs[1].Expression, "Outcome = 'DONE'")
	require.Contains(t, qs[2].Expression, "Outcome != 'DONE' AND Outcome != 'CANCELLED'")
	require.Equal(t, consoletest.Query{ID: "backlog", MetricName: "BacklogDepth", Stat: "Maximum", Dimensions: map[string]string{"Stack": "ferry-prod"}}, qs[4])
}
