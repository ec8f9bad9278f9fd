package console

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// MetricDataAPI is the part of the CloudWatch client the console calls.
type MetricDataAPI interface {
	GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

// CloudWatch reads a deployed stack's chart from the metrics its functions
// write (namespace Ferry, dimension Stack), with the queries its dashboard
// graphs (infra/dashboard.go): one GetMetricData call per chart.
type CloudWatch struct {
	Client MetricDataAPI
	Stack  string
}

// stackName is what CloudFormation accepts as a stack's name, so a name
// can stand in a Metrics Insights query as it is.
var stackName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]{0,127}$`)

// NewCloudWatch checks the stack's name and returns the source.
func NewCloudWatch(client MetricDataAPI, stack string) (*CloudWatch, error) {
	if !stackName.MatchString(stack) {
		return nil, fmt.Errorf("--stack %q: a stack's name is a letter, then letters, digits and hyphens (at most 128)", stack)
	}
	return &CloudWatch{Client: client, Stack: stack}, nil
}

// Source implements Metrics.
func (c *CloudWatch) Source() string { return "CloudWatch (stack " + c.Stack + ")" }

// The ids of the chart's queries in a GetMetricData call.
const (
	cwEnqueued  = "enqueued"
	cwDelivered = "delivered"
	cwFailed    = "failed"
	cwDeferred  = "deferred"
	cwBacklog   = "backlog"
)

// queries are the chart's series as GetMetricData queries: Metrics
// Insights sums across kinds (and outcomes) for the counts, the stack-wide
// BacklogDepth gauge for the backlog.
func (c *CloudWatch) queries() []types.MetricDataQuery {
	insights := func(id, q string) types.MetricDataQuery {
		return types.MetricDataQuery{Id: aws.String(id), Expression: aws.String(q), Period: aws.Int32(60), ReturnData: aws.Bool(true)}
	}
	where := fmt.Sprintf(`WHERE Stack = '%s'`, c.Stack)
	ended := `SELECT SUM(ActionsEnded) FROM SCHEMA("Ferry", Kind, Outcome, Stack, StopReason) ` + where
	return []types.MetricDataQuery{
		insights(cwEnqueued, `SELECT SUM(ActionsEnqueued) FROM SCHEMA("Ferry", Kind, Stack) `+where),
		insights(cwDelivered, ended+` AND Outcome = 'DONE'`),
		insights(cwFailed, ended+` AND Outcome != 'DONE' AND Outcome != 'CANCELLED'`),
		insights(cwDeferred, `SELECT SUM(Deferrals) FROM SCHEMA("Ferry", Kind, Stack) `+where),
		{Id: aws.String(cwBacklog), ReturnData: aws.Bool(true), MetricStat: &types.MetricStat{
			Metric: &types.Metric{Namespace: aws.String("Ferry"), MetricName: aws.String("BacklogDepth"),
				Dimensions: []types.Dimension{{Name: aws.String("Stack"), Value: aws.String(c.Stack)}}},
			Period: aws.Int32(60), Stat: aws.String("Maximum"),
		}},
	}
}

// Series implements Metrics: the hour before now's minute, read with
// GetMetricData (paged by NextToken).
func (c *CloudWatch) Series(ctx context.Context, now time.Time) (*Series, error) {
	s := newSeries(now, c.Source())
	cols := map[string][]*float64{cwEnqueued: s.Enqueued, cwDelivered: s.Delivered, cwFailed: s.Failed, cwDeferred: s.Deferred, cwBacklog: s.Backlog}
	in := &cloudwatch.GetMetricDataInput{
		StartTime:         aws.Time(time.Unix(s.Minutes[0], 0)),
		EndTime:           aws.Time(time.Unix(s.Minutes[len(s.Minutes)-1], 0).Add(time.Minute)),
		MetricDataQueries: c.queries(),
		ScanBy:            types.ScanByTimestampAscending,
	}
	for page := 0; page < 10; page++ {
		out, err := c.Client.GetMetricData(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("error reading the stack's metrics (CloudWatch GetMetricData): %w", err)
		}
		for _, r := range out.MetricDataResults {
			col, ok := cols[aws.ToString(r.Id)]
			if !ok {
				continue
			}
			for i, t := range r.Timestamps {
				if j := s.at(t); j >= 0 && i < len(r.Values) {
					col[j] = ptr(r.Values[i])
				}
			}
		}
		if out.NextToken == nil {
			break
		}
		in.NextToken = out.NextToken
	}
	// A count with no datapoint in a minute after the first is zero
	// (CloudWatch publishes nothing for a quiet minute).
	for _, col := range [][]*float64{s.Enqueued, s.Delivered, s.Failed, s.Deferred} {
		seen := false
		for i := range col {
			seen = seen || col[i] != nil
			if col[i] == nil && seen {
				col[i] = ptr(0)
			}
		}
	}
	return s, nil
}

var _ Metrics = (*CloudWatch)(nil)
