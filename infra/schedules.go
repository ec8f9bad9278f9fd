package infra

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Schedules are how often each scheduled function runs: the drainer's
// schedule is the backstop of the stream wake-ups, the reaper's sets the
// gauges' resolution, and retention only has to keep up with TTL's lag.
var Schedules = map[FunctionName]time.Duration{
	FunctionDrainer:   time.Minute,
	FunctionReaper:    time.Minute,
	FunctionRetention: 24 * time.Hour,
}

// The drainer's stream event-source mapping. Records only wake the drainer
// (it claims from the due index, not from the records), so a failed batch
// is retried briefly and then dropped: the schedule picks the work up.
// Lambda hands a shard's batches one at a time unless parallelized: with
// streamParallelization (Lambda's most) up to that many batches of a
// shard run at once, records of one key (one partition's P#<n>) in order,
// so an invocation held by a slow partition delays only the partitions
// whose keys share its place (design.md §6).
const (
	streamRetryAttempts   = 2
	streamMaxRecordAge    = time.Hour
	streamParallelization = 10
)

// newSchedules declares one EventBridge rule per scheduled function and the
// drainer's stream event-source mapping.
func (s *Stack) newSchedules() {
	scope := constructs.NewConstruct(s.Stack, jsii.String("Schedules"))
	for _, fn := range []FunctionName{FunctionDrainer, FunctionReaper, FunctionRetention} {
		every := Schedules[fn]
		s.Rules[fn] = awsevents.NewRule(scope, jsii.String(functionID(fn)), &awsevents.RuleProps{
			Description: jsii.String("Runs the Ferry " + string(fn) + " every " + fmtDur(every)),
			Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(every.Minutes()))),
			Targets: &[]awsevents.IRuleTarget{
				awseventstargets.NewLambdaFunction(s.Functions[fn], &awseventstargets.LambdaFunctionProps{
					// A missed tick is made up by the next one.
					RetryAttempts: jsii.Number(0),
					MaxEventAge:   awscdk.Duration_Minutes(jsii.Number(1)),
				}),
			},
		})
	}

	p := s.Props
	s.StreamMapping = s.Functions[FunctionDrainer].AddEventSourceMapping(jsii.String("TableStream"), &awslambda.EventSourceMappingOptions{
		EventSourceArn:          s.Table.TableStreamArn(),
		StartingPosition:        awslambda.StartingPosition_LATEST,
		BatchSize:               jsii.Number(float64(p.StreamBatchSize)),
		MaxBatchingWindow:       awscdk.Duration_Seconds(jsii.Number(p.StreamBatchingWindow.Seconds())),
		ReportBatchItemFailures: jsii.Bool(true),
		ParallelizationFactor:   jsii.Number(streamParallelization),
		RetryAttempts:           jsii.Number(streamRetryAttempts),
		MaxRecordAge:            awscdk.Duration_Seconds(jsii.Number(streamMaxRecordAge.Seconds())),
		Filters: &[]*map[string]any{
			{"pattern": DrainerStreamFilter()},
		},
	})
}
