package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"
)

// dashboardPeriod is the resolution of the dashboard's graphs.
var dashboardPeriod = awscdk.Duration_Minutes(jsii.Number(1))

// newDashboard declares the dashboard: alarm states; backlog; throughput by
// outcome; latency; errors.
func (s *Stack) newDashboard() {
	graph := func(title string, left []awscloudwatch.IMetric, right []awscloudwatch.IMetric) awscloudwatch.IWidget {
		props := &awscloudwatch.GraphWidgetProps{
			Title:  jsii.String(title),
			Width:  jsii.Number(12),
			Height: jsii.Number(6),
			Left:   &left,
			Period: dashboardPeriod,
		}
		if len(right) > 0 {
			props.Right = &right
		}
		return awscloudwatch.NewGraphWidget(props)
	}
	stack := *s.Stack.StackName()
	gauge := func(name string) awscloudwatch.IMetric { return s.ferryMetric(name, "Maximum", dashboardPeriod) }
	count := func(name string) awscloudwatch.IMetric { return s.ferryMetric(name, "Sum", dashboardPeriod) }
	query := func(label, q string) awscloudwatch.IMetric {
		return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(q), Label: jsii.String(label), Period: dashboardPeriod,
		})
	}

	alarms := make([]interfacesawscloudwatch.IAlarmRef, 0, len(s.Alarms))
	for _, id := range s.AlarmIDs() {
		alarms = append(alarms, s.Alarms[id])
	}
	var duration, errs, throttles []awscloudwatch.IMetric
	for _, fn := range Functions {
		f := s.Functions[fn]
		duration = append(duration, f.MetricDuration(&awscloudwatch.MetricOptions{
			Statistic: jsii.String("p99"), Period: dashboardPeriod, Label: jsii.String(string(fn) + " p99"),
		}))
		errs = append(errs, f.MetricErrors(&awscloudwatch.MetricOptions{
			Statistic: jsii.String("Sum"), Period: dashboardPeriod, Label: jsii.String(string(fn) + " errors"),
		}))
		throttles = append(throttles, f.MetricThrottles(&awscloudwatch.MetricOptions{
			Statistic: jsii.String("Sum"), Period: dashboardPeriod, Label: jsii.String(string(fn) + " throttles"),
		}))
	}
	api := func(name, stat string) awscloudwatch.IMetric {
		return s.API.Metric(jsii.String(name), &awscloudwatch.MetricOptions{Statistic: jsii.String(stat), Period: dashboardPeriod})
	}

	s.Dashboard = awscloudwatch.NewDashboard(s.Stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName: jsii.String(*s.Stack.StackName()),
		Widgets: &[]*[]awscloudwatch.IWidget{
			{awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
				Title: jsii.String("Alarms"), Alarms: &alarms, Width: jsii.Number(24), Height: jsii.Number(4),
			})},
			{
				graph("Backlog: due, blocked and claimed actions",
					[]awscloudwatch.IMetric{gauge(MetricBacklogDepth), gauge(MetricBlockedDepth), gauge(MetricClaimedDepth), gauge(MetricStuckLaneHeads)}, nil),
				graph("Backlog: oldest due and blocked age (s)", []awscloudwatch.IMetric{gauge(MetricOldestDueAge), gauge(MetricOldestBlockedAge)}, nil),
			},
			{
				graph("Throughput: ended actions by outcome", []awscloudwatch.IMetric{query("ended", endedQuery(stack, ""))}, nil),
				graph("Throughput: enqueued, attempts, claims and deferrals",
					[]awscloudwatch.IMetric{
						query("enqueued", kindQuery(stack, MetricActionsEnqueued)),
						query("attempts", kindQuery(stack, MetricAttempts)),
						count(MetricClaimed),
						query("deferred", kindQuery(stack, MetricDeferrals)),
					},
					[]awscloudwatch.IMetric{
						count(MetricClaimConflicts), count(MetricShortBatches),
						query("fence refusals", kindQuery(stack, MetricFenceRefusals)),
					}),
			},
			{
				graph("Latency: function duration p99 (ms)", duration, nil),
				graph("Latency: API p50 and p99 (ms)", []awscloudwatch.IMetric{api("Latency", "p50"), api("Latency", "p99")}, nil),
			},
			{
				graph("Errors: functions", errs, throttles),
				graph("Errors: API", []awscloudwatch.IMetric{api("4xx", "Sum"), api("5xx", "Sum")}, nil),
			},
			{
				// One graph each: both expressions name their per-operation
				// metrics by operation, and ids must be unique in a graph.
				graph("Errors: DynamoDB throttled requests", []awscloudwatch.IMetric{
					s.tableOperationsMetric("ThrottledRequests", "throttled requests", dashboardPeriod),
				}, nil),
				graph("Errors: DynamoDB system errors", []awscloudwatch.IMetric{
					s.tableOperationsMetric("SystemErrors", "system errors", dashboardPeriod),
				}, nil),
			},
			{
				// What SES reported about Ferry emails (sesevents), and how
				// many UNCERTAIN emails it showed went out after all.
				graph("Email: SES events recorded, by status",
					[]awscloudwatch.IMetric{query("events", groupQuery(stack, MetricDeliveryEvents, "Status"))}, nil),
				graph("Email: uncertain emails confirmed, SES events dropped",
					[]awscloudwatch.IMetric{query("uncertain confirmed", kindQuery(stack, MetricUncertainConfirmed))},
					[]awscloudwatch.IMetric{query("dropped", groupQuery(stack, MetricDeliveryEventsDropped, "Reason"))}),
			},
		},
	})
}
