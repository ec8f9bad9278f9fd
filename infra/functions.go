package infra

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// FunctionName names one of Ferry's functions (and its directory under the
// asset directory: <AssetDir>/<name>/bootstrap).
type FunctionName string

// The functions.
const (
	FunctionEnqueue   FunctionName = "enqueue"
	FunctionDrainer   FunctionName = "drainer"
	FunctionReaper    FunctionName = "reaper"
	FunctionRetention FunctionName = "retention"
	FunctionSESEvents FunctionName = "sesevents"
)

// Functions lists the functions in the order the stack declares them.
var Functions = []FunctionName{FunctionEnqueue, FunctionDrainer, FunctionReaper, FunctionRetention, FunctionSESEvents}

// The runtime every function uses: a Go binary named bootstrap on the
// OS-only runtime, built for Graviton.
var (
	FunctionRuntime      = awslambda.Runtime_PROVIDED_AL2023()
	FunctionArchitecture = awslambda.Architecture_ARM_64()
)

// FunctionHandler is the handler every function declares ("bootstrap": the
// OS-only runtime runs the binary of that name).
const FunctionHandler = "bootstrap"

// descriptions say what each function is for, in the console.
var descriptions = map[FunctionName]string{
	FunctionEnqueue:   "Ferry HTTP API: enqueue, read, list, admit, cancel, erase",
	FunctionDrainer:   "Ferry drainer: claims due actions and carries them out",
	FunctionReaper:    "Ferry reaper: ends lost leases, expires actions, publishes backlog gauges",
	FunctionRetention: "Ferry retention: deletes ended actions past TTL or the row cap, serves erasure",
	FunctionSESEvents: "Ferry SES events: records SES delivery events of Ferry emails beside their actions",
}

// size returns fn's memory and timeout from the props.
func (p *Props) size(fn FunctionName) FunctionSize {
	switch fn {
	case FunctionEnqueue:
		return p.Functions.Enqueue
	case FunctionDrainer:
		return p.Functions.Drainer
	case FunctionReaper:
		return p.Functions.Reaper
	case FunctionSESEvents:
		return p.Functions.SESEvents
	default:
		return p.Functions.Retention
	}
}

// checkAssets reports a missing bootstrap with the command that builds it.
func checkAssets(dir string) error {
	for _, fn := range Functions {
		path := filepath.Join(dir, string(fn), FunctionHandler)
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("AssetDir (%s): %s is missing (run `make build` first): %w", dir, path, err)
		}
	}
	return nil
}

// newFunction declares fn: its log group, its role (no managed policies:
// only the log group, the table grants of TableGrants and, for the drainer,
// the stream and its providers) and the function itself.
func (s *Stack) newFunction(fn FunctionName, assetDir string) error {
	p := s.Props
	// One construct per function: its log group, role and function.
	scope := constructs.NewConstruct(s.Stack, jsii.String(functionID(fn)))
	logs := awslogs.NewLogGroup(scope, jsii.String("Logs"), &awslogs.LogGroupProps{
		Retention:     retentionDays(p.LogRetentionDays),
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	role := awsiam.NewRole(scope, jsii.String("Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Ferry " + string(fn) + " function"),
	})
	role.AddToPrincipalPolicy(statement([]string{"logs:CreateLogStream", "logs:PutLogEvents"}, *logs.LogGroupArn()))
	s.grantFunction(fn, role)

	env, err := FunctionEnvironment(fn, p, *s.Table.TableName(), *s.Stack.StackName())
	if err != nil {
		return err
	}
	size := p.size(fn)
	fp := &awslambda.FunctionProps{
		Description:  jsii.String(descriptions[fn]),
		Runtime:      FunctionRuntime,
		Architecture: FunctionArchitecture,
		Handler:      jsii.String(FunctionHandler),
		Code:         awslambda.Code_FromAsset(jsii.String(filepath.Join(assetDir, string(fn))), nil),
		MemorySize:   jsii.Number(float64(size.MemoryMB)),
		Timeout:      awscdk.Duration_Seconds(jsii.Number(float64(size.Timeout / time.Second))),
		Role:         role,
		LogGroup:     logs,
		Environment:  jsiiMap(env),
		Tracing:      awslambda.Tracing_ACTIVE,
	}
	switch fn {
	case FunctionEnqueue:
	case FunctionSESEvents:
		// An SES event is delivered once: a failed recording (DynamoDB
		// unavailable) is retried by Lambda, twice, minutes apart.
		fp.RetryAttempts = jsii.Number(2)
	default:
		// Scheduled invocations are asynchronous: the next tick retries, so
		// Lambda's own retries would only pile work up.
		fp.RetryAttempts = jsii.Number(0)
	}
	switch p.Tracing {
	case TracingOff:
		fp.Tracing = awslambda.Tracing_DISABLED
	case TracingOpenTelemetry:
		fp.Layers = &[]awslambda.ILayerVersion{
			awslambda.LayerVersion_FromLayerVersionArn(scope, jsii.String("OTelLayer"), jsii.String(p.OTelLayerARN)),
		}
	}
	s.Functions[fn] = awslambda.NewFunction(scope, jsii.String("Function"), fp)
	s.dropRoleDependency(s.Functions[fn], role)
	s.Roles[fn] = role
	s.LogGroups[fn] = logs
	return nil
}

// dropRoleDependency leaves a function depending on its role's policy and
// the table's layout marker only. The CDK names the role in the function's
// DependsOn as well, which
// the function's Role property (a GetAtt of the role) already orders:
// cfn-lint warns of the duplicate (W3005).
func (s *Stack) dropRoleDependency(f awslambda.Function, role awsiam.Role) {
	deps := []string{}
	if policy := role.Node().TryFindChild(jsii.String("DefaultPolicy")); policy != nil {
		deps = append(deps, *s.Stack.GetLogicalId(policy.Node().DefaultChild().(awscdk.CfnElement)))
	}
	if s.TableMarker != nil {
		// A function's cold start refuses a table without its layout
		// marker (marker.go): the function waits for it.
		cr := s.TableMarker.Node().FindChild(jsii.String("Resource")).Node().DefaultChild().(awscdk.CfnElement)
		deps = append(deps, *s.Stack.GetLogicalId(cr))
	}
	f.Node().DefaultChild().(awslambda.CfnFunction).AddOverride(jsii.String("DependsOn"), deps)
}

// functionID is fn's construct id: "Enqueue", "Drainer", ...
func functionID(fn FunctionName) string {
	s := string(fn)
	return string(s[0]-'a'+'A') + s[1:]
}

func jsiiMap(m map[string]string) *map[string]*string {
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = jsii.String(v)
	}
	return &out
}

// retentionDays maps a validated day count to CloudWatch Logs' enum.
func retentionDays(days int) awslogs.RetentionDays {
	m := map[int]awslogs.RetentionDays{
		1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS, 5: awslogs.RetentionDays_FIVE_DAYS,
		7: awslogs.RetentionDays_ONE_WEEK, 14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
		60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS, 120: awslogs.RetentionDays_FOUR_MONTHS,
		150: awslogs.RetentionDays_FIVE_MONTHS, 180: awslogs.RetentionDays_SIX_MONTHS, 365: awslogs.RetentionDays_ONE_YEAR,
		400: awslogs.RetentionDays_THIRTEEN_MONTHS, 545: awslogs.RetentionDays_EIGHTEEN_MONTHS, 731: awslogs.RetentionDays_TWO_YEARS,
		1096: awslogs.RetentionDays_THREE_YEARS, 1827: awslogs.RetentionDays_FIVE_YEARS, 2192: awslogs.RetentionDays_SIX_YEARS,
		2557: awslogs.RetentionDays_SEVEN_YEARS, 2922: awslogs.RetentionDays_EIGHT_YEARS, 3288: awslogs.RetentionDays_NINE_YEARS,
		3653: awslogs.RetentionDays_TEN_YEARS,
	}
	return m[days]
}
