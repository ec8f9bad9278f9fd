package infra

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsses"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/customresources"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Stack is the Ferry stack and the constructs a test or an extending app
// may want to reach.
type Stack struct {
	Stack awscdk.Stack
	// Props are the props after WithDefaults.
	Props *Props

	Table awsdynamodb.Table
	// TableMarker writes the table's layout marker (marker.go).
	TableMarker   customresources.AwsCustomResource
	Functions     map[FunctionName]awslambda.Function
	Roles         map[FunctionName]awsiam.Role
	LogGroups     map[FunctionName]awslogs.LogGroup
	API           awsapigatewayv2.HttpApi
	APIStage      awsapigatewayv2.HttpStage
	APIAccessLogs awslogs.LogGroup
	Rules         map[FunctionName]awsevents.Rule
	StreamMapping awslambda.EventSourceMapping
	// SESDestination and SESRule route the SES configuration set's events
	// to the sesevents function (nil without SESConfigurationSet).
	SESDestination awsses.ConfigurationSetEventDestination
	SESRule        awsevents.Rule
	// Alarms by id (see AlarmIDs).
	Alarms     map[string]awscloudwatch.Alarm
	AlarmTopic awssns.ITopic
	Dashboard  awscloudwatch.Dashboard

	key awskms.IKey
}

// NewStack validates props and declares the Ferry stack under scope: the
// table, the five functions with their roles and logs, the HTTP API, the
// schedules and stream wake-up, the SES event routing (with a configuration
// set), alarms, a dashboard, and cdk-nag's AwsSolutions checks, all tagged
// with the Ferry version (VersionTagKey). It declares nothing when props are
// invalid.
func NewStack(scope constructs.Construct, id string, props Props) (*Stack, error) {
	p := props.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("invalid Ferry stack props: %w", err)
	}
	assetDir, err := filepath.Abs(p.AssetDir)
	if err != nil {
		return nil, fmt.Errorf("AssetDir (%s): %w", p.AssetDir, err)
	}
	if err := checkAssets(assetDir); err != nil {
		return nil, err
	}
	version, err := stackVersion(&p, assetDir)
	if err != nil {
		return nil, err
	}
	p.Version = version

	sp := p.StackProps
	if sp.Description == nil {
		sp.Description = jsii.String("Ferry: a durable, fenced outbox on AWS Lambda and DynamoDB")
	}
	sp.Tags = stackTags(sp.Tags, p.Version)
	s := &Stack{
		Stack:     awscdk.NewStack(scope, jsii.String(id), &sp),
		Props:     &p,
		Functions: map[FunctionName]awslambda.Function{},
		Roles:     map[FunctionName]awsiam.Role{},
		LogGroups: map[FunctionName]awslogs.LogGroup{},
		Rules:     map[FunctionName]awsevents.Rule{},
		Alarms:    map[string]awscloudwatch.Alarm{},
	}
	s.tagResources(p.Version)
	// One construct per concern: Storage (the table), one per function,
	// Api, Schedules, Alarms and the Dashboard.
	storage := constructs.NewConstruct(s.Stack, jsii.String("Storage"))
	if p.KMSKeyARN != "" {
		s.key = awskms.Key_FromKeyArn(storage, jsii.String("TableKey"), jsii.String(p.KMSKeyARN))
	}
	s.Table = newTable(storage, &p, s.key)
	s.TableMarker = s.newTableMarker(storage)
	for _, fn := range Functions {
		if err := s.newFunction(fn, assetDir); err != nil {
			return nil, err
		}
	}
	s.newAPI()
	s.newSchedules()
	s.newSESEvents()
	s.newAlarms()
	s.newDashboard()
	s.applyNag()

	awscdk.NewCfnOutput(s.Stack, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("The HTTP API's base URL"),
		Value:       s.API.ApiEndpoint(),
	})
	awscdk.NewCfnOutput(s.Stack, jsii.String("TableName"), &awscdk.CfnOutputProps{
		Description: jsii.String("The Ferry table"),
		Value:       s.Table.TableName(),
	})
	return s, nil
}

// AlarmIDs returns the alarms' ids in a stable order.
func (s *Stack) AlarmIDs() []string {
	ids := make([]string, 0, len(s.Alarms))
	for id := range s.Alarms {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// LogicalID returns the logical id of c's CloudFormation resource (its
// default child), as the template names it.
func (s *Stack) LogicalID(c constructs.IConstruct) string {
	el := c.Node().DefaultChild().(awscdk.CfnElement)
	return s.Stack.Resolve(el.LogicalId()).(string)
}
