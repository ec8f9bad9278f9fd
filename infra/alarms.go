package infra

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// The metrics the functions write in the Embedded Metric Format
// (internal/telemetry): namespace, names and dimension sets. Every set also
// holds MetricDimensionStack (the stack's name, from FERRY_STACK), so two
// stacks in one account and region never mix their metrics; the alarms and
// the dashboard read only their own stack's.
const (
	MetricNamespace      = "Ferry"
	MetricDimensionStack = "Stack"
	MetricActionsEnded   = "ActionsEnded" // Count [Stack, Kind, Outcome, StopReason]
	MetricAttempts       = "Attempts"     // Count [Stack, Kind]
	// MetricActionsEnqueued and MetricDeferrals: new actions (the enqueue
	// function) and deferrals (the drainer), by kind; the web console's
	// chart reads them as this dashboard does.
	MetricActionsEnqueued = "ActionsEnqueued" // Count [Stack, Kind]
	MetricDeferrals       = "Deferrals"       // Count [Stack, Kind]
	MetricClaimed         = "ClaimedActions"  // Count [Stack]
	MetricClaimConflicts  = "ClaimConflicts"  // Count [Stack]
	MetricShortBatches    = "ShortBatches"    // Count [Stack]
	MetricFenceRefusals   = "FenceRefusals"   // Count [Stack, Kind]
	// The reaper's backlog gauges (design.md §8): BacklogDepth and
	// OldestDueAge count what the drainer could claim now; BlockedDepth
	// and OldestBlockedAge the due actions waiting behind an earlier live
	// member of their lane; StuckLaneHeads the lanes due past StuckAfter.
	MetricBacklogDepth     = "BacklogDepth"     // Count [Stack] (total) and [Stack, Partition]
	MetricBlockedDepth     = "BlockedDepth"     // Count [Stack] (total) and [Stack, Partition]
	MetricClaimedDepth     = "ClaimedDepth"     // Count [Stack] (total) and [Stack, Partition]
	MetricStuckLaneHeads   = "StuckLaneHeads"   // Count [Stack] (total) and [Stack, Partition]
	MetricOldestDueAge     = "OldestDueAge"     // Seconds [Stack] (oldest) and [Stack, Partition]
	MetricOldestBlockedAge = "OldestBlockedAge" // Seconds [Stack] (oldest) and [Stack, Partition]
	// The sesevents function's (internal/handlers): SES events recorded as
	// delivery evidence, dropped, and UNCERTAIN emails they confirmed.
	MetricDeliveryEvents        = "DeliveryEvents"        // Count [Stack, Status]
	MetricDeliveryEventsDropped = "DeliveryEventsDropped" // Count [Stack, Reason]
	MetricUncertainConfirmed    = "UncertainConfirmed"    // Count [Stack, Kind]
)

// groupQuery is a Metrics Insights query summing one stack's metric
// counted per dim, one line per value of dim.
func groupQuery(stack, metric, dim string) string {
	return fmt.Sprintf(`SELECT SUM(%s) FROM SCHEMA("%s", %s, %s) WHERE %s = '%s' GROUP BY %s`,
		metric, MetricNamespace, dim, MetricDimensionStack, MetricDimensionStack, stack, dim)
}

// alarmPeriod is every alarm's period.
var alarmPeriod = awscdk.Duration_Minutes(jsii.Number(5))

// kindQuery is a Metrics Insights query summing a metric counted per kind
// (dimensions Stack, Kind) across kinds, for one stack.
func kindQuery(stack, metric string) string {
	return fmt.Sprintf(`SELECT SUM(%s) FROM SCHEMA("%s", Kind, %s) WHERE %s = '%s'`,
		metric, MetricNamespace, MetricDimensionStack, MetricDimensionStack, stack)
}

// endedQuery is a Metrics Insights query summing one stack's ActionsEnded
// across kinds and stop reasons for one outcome ("" for all, grouped by
// outcome).
func endedQuery(stack, outcome string) string {
	q := fmt.Sprintf(`SELECT SUM(%s) FROM SCHEMA("%s", Kind, Outcome, %s, StopReason) WHERE %s = '%s'`,
		MetricActionsEnded, MetricNamespace, MetricDimensionStack, MetricDimensionStack, stack)
	if outcome == "" {
		return q + " GROUP BY Outcome"
	}
	return q + fmt.Sprintf(" AND Outcome = '%s'", outcome)
}

// ferryMetric is one of the stack's own Ferry metrics without other
// dimensions (a stack-wide total).
func (s *Stack) ferryMetric(name, statistic string, period awscdk.Duration) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:     jsii.String(MetricNamespace),
		MetricName:    jsii.String(name),
		DimensionsMap: &map[string]*string{MetricDimensionStack: s.Stack.StackName()},
		Statistic:     jsii.String(statistic),
		Period:        period,
	})
}

// TableOperations are the DynamoDB operations the functions call (see
// TableGrants), watched by the throttle and system-error alarms.
var TableOperations = []awsdynamodb.Operation{
	awsdynamodb.Operation_GET_ITEM, awsdynamodb.Operation_PUT_ITEM, awsdynamodb.Operation_UPDATE_ITEM,
	awsdynamodb.Operation_DELETE_ITEM, awsdynamodb.Operation_QUERY, awsdynamodb.Operation_SCAN,
	awsdynamodb.Operation_BATCH_GET_ITEM, awsdynamodb.Operation_TRANSACT_WRITE_ITEMS,
}

// tableOperationsMetric sums the table's metric name (ThrottledRequests or
// SystemErrors, published per operation) over TableOperations. Each term is
// FILL(…, 0): these metrics are only published when non-zero, and a plain
// sum of sparse series has no value where any term is missing.
func (s *Stack) tableOperationsMetric(name, label string, period awscdk.Duration) awscloudwatch.IMetric {
	using := map[string]awscloudwatch.IMetric{}
	terms := make([]string, 0, len(TableOperations))
	for _, op := range TableOperations {
		opName := operationName(op)
		id := strings.ToLower(opName)
		using[id] = awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace:  jsii.String("AWS/DynamoDB"),
			MetricName: jsii.String(name),
			DimensionsMap: &map[string]*string{
				"TableName": s.Table.TableName(),
				"Operation": jsii.String(opName),
			},
			Statistic: jsii.String("Sum"),
			Period:    period,
		})
		terms = append(terms, fmt.Sprintf("FILL(%s, 0)", id))
	}
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String(strings.Join(terms, " + ")),
		UsingMetrics: &using,
		Label:        jsii.String(label),
		Period:       period,
	})
}

// operationName turns GET_ITEM into GetItem, the Operation dimension's value.
func operationName(op awsdynamodb.Operation) string {
	var b strings.Builder
	for _, word := range strings.Split(string(op), "_") {
		b.WriteString(word[:1] + strings.ToLower(word[1:]))
	}
	return b.String()
}

// alarmSpec is one alarm the stack declares.
type alarmSpec struct {
	id          string
	description string
	metric      awscloudwatch.IMetric
	threshold   float64
	periods     int
	op          awscloudwatch.ComparisonOperator
	missing     awscloudwatch.TreatMissingData
}

// newAlarms declares the alarms and, when configured, the topic they
// notify.
func (s *Stack) newAlarms() {
	p := s.Props
	a := p.Alarms
	stack := *s.Stack.StackName()
	gte := awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD
	notBreaching := awscloudwatch.TreatMissingData_NOT_BREACHING
	specs := []alarmSpec{
		{
			id:          "OldestDueAge",
			description: fmt.Sprintf("The oldest action the drainer could claim has waited more than %s: the drainer is not keeping up or not running. (Actions waiting behind their lane's head are not counted: see StuckLaneHeads.)", fmtDur(a.OldestDueAge)),
			metric:      s.ferryMetric(MetricOldestDueAge, "Maximum", alarmPeriod),
			threshold:   a.OldestDueAge.Seconds(), periods: 1,
			op: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD, missing: notBreaching,
		},
		{
			id:          "GaugesMissing",
			description: "The reaper has published no backlog gauges for 10 minutes: the backlog alarms are blind.",
			metric:      s.ferryMetric(MetricOldestDueAge, "SampleCount", alarmPeriod),
			threshold:   1, periods: 2,
			op: awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD, missing: awscloudwatch.TreatMissingData_BREACHING,
		},
		{
			id:          "Uncertain",
			description: "An action ended UNCERTAIN: its effect may or may not have happened; someone must check the provider.",
			metric: awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
				Expression: jsii.String(endedQuery(stack, "UNCERTAIN")), Period: alarmPeriod, Label: jsii.String("UNCERTAIN"),
			}),
			threshold: float64(a.Uncertain), periods: 1, op: gte, missing: notBreaching,
		},
		{
			id:          "Failed",
			description: fmt.Sprintf("%d or more actions ended FAILED in 5 minutes.", a.Failed),
			metric: awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
				Expression: jsii.String(endedQuery(stack, "FAILED")), Period: alarmPeriod, Label: jsii.String("FAILED"),
			}),
			threshold: float64(a.Failed), periods: 1, op: gte, missing: notBreaching,
		},
		{
			id:          "StuckLaneHeads",
			description: "Lanes have been stuck for 15 minutes: a lane's oldest due member (its head, or one waiting behind a head that retries, defers, runs or is a proposal) has waited longer than that; the actions behind the head cannot start.",
			metric:      s.ferryMetric(MetricStuckLaneHeads, "Maximum", alarmPeriod),
			threshold:   float64(a.StuckLaneHeads), periods: 3, op: gte, missing: notBreaching,
		},
	}
	for _, fn := range Functions {
		f := s.Functions[fn]
		opts := &awscloudwatch.MetricOptions{Period: alarmPeriod, Statistic: jsii.String("Sum")}
		specs = append(specs,
			alarmSpec{
				id:          functionID(fn) + "Errors",
				description: fmt.Sprintf("The %s function failed (errors, timeouts or crashes).", fn),
				metric:      f.MetricErrors(opts),
				threshold:   float64(a.FunctionErrors), periods: 1, op: gte, missing: notBreaching,
			},
			alarmSpec{
				id:          functionID(fn) + "Throttles",
				description: fmt.Sprintf("The %s function was throttled.", fn),
				metric:      f.MetricThrottles(opts),
				threshold:   float64(a.FunctionThrottles), periods: 1, op: gte, missing: notBreaching,
			})
	}
	specs = append(specs,
		alarmSpec{
			id:          "DynamoDBThrottles",
			description: "Requests to the Ferry table were throttled.",
			metric:      s.tableOperationsMetric("ThrottledRequests", "throttled requests", alarmPeriod),
			threshold:   float64(a.DynamoDBThrottles), periods: 1, op: gte, missing: notBreaching,
		},
		alarmSpec{
			id:          "DynamoDBSystemErrors",
			description: "DynamoDB answered requests to the Ferry table with system errors (HTTP 500).",
			metric:      s.tableOperationsMetric("SystemErrors", "system errors", alarmPeriod),
			threshold:   float64(a.DynamoDBSystemErrors), periods: 1, op: gte, missing: notBreaching,
		})

	scope := constructs.NewConstruct(s.Stack, jsii.String("Alarms"))
	var action awscloudwatch.IAlarmAction
	switch {
	case p.AlarmTopicARN != "":
		s.AlarmTopic = awssns.Topic_FromTopicArn(scope, jsii.String("Topic"), jsii.String(p.AlarmTopicARN))
	case p.AlarmEmail != "":
		topic := awssns.NewTopic(scope, jsii.String("Topic"), &awssns.TopicProps{
			DisplayName: jsii.String("Ferry alarms"),
			EnforceSSL:  jsii.Bool(true),
		})
		topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(p.AlarmEmail), nil))
		s.AlarmTopic = topic
	}
	if s.AlarmTopic != nil {
		action = awscloudwatchactions.NewSnsAction(s.AlarmTopic)
	}
	for _, spec := range specs {
		alarm := awscloudwatch.NewAlarm(scope, jsii.String(spec.id), &awscloudwatch.AlarmProps{
			AlarmName:          jsii.String(*s.Stack.StackName() + "-" + spec.id),
			AlarmDescription:   jsii.String(spec.description),
			Metric:             spec.metric,
			Threshold:          jsii.Number(spec.threshold),
			EvaluationPeriods:  jsii.Number(float64(spec.periods)),
			ComparisonOperator: spec.op,
			TreatMissingData:   spec.missing,
		})
		if action != nil {
			alarm.AddAlarmAction(action)
			alarm.AddOkAction(action)
		}
		s.Alarms[spec.id] = alarm
	}
}
