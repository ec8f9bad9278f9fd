package infra

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/customresources"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/ferryhq/ferry/internal/outbox"
)

// TableMarkerType is the CloudFormation type of the custom resource that
// writes the table's layout marker.
const TableMarkerType = "Custom::FerryTableMarker"

// TableMarkerCall is the DynamoDB call the marker's custom resource makes
// once the table exists (its parameters as the DynamoDB API takes them):
// a PutItem of the engine's marker item (outbox.LayoutMarker: the layout
// version this build writes, docs/design.md §3.10), conditioned on no
// marker being there. A table that holds a marker already (one created
// before v0.1.0, or another stack's) fails the deploy instead of being
// taken for this layout.
func TableMarkerCall(table any) map[string]any {
	item := map[string]any{}
	for name, v := range outbox.LayoutMarker() {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			item[name] = map[string]any{"S": v.Value}
		case *types.AttributeValueMemberN:
			item[name] = map[string]any{"N": v.Value}
		default:
			panic(fmt.Sprintf("the layout marker's %s is a %T, which the stack cannot write", name, v))
		}
	}
	return map[string]any{"TableName": table, "Item": item, "ConditionExpression": "attribute_not_exists(pk)"}
}

// newTableMarker declares the custom resource that writes the table's
// layout marker (TableMarkerCall) when the stack creates the table: every
// function depends on it, so none starts before the marker is there. The
// table's identity (design.md §3.10) is not written here, since a template
// holds no secret: the first function that needs it adds it. On an update
// of the resource (the table replaced by a new one) the same put is made,
// and a marker already there is kept.
func (s *Stack) newTableMarker(scope constructs.Construct) customresources.AwsCustomResource {
	logs := awslogs.NewLogGroup(scope, jsii.String("MarkerLogs"), &awslogs.LogGroupProps{
		Retention:     retentionDays(s.Props.LogRetentionDays),
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	role := awsiam.NewRole(scope, jsii.String("MarkerRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Ferry table layout marker (custom resource)"),
	})
	role.AddToPrincipalPolicy(statement([]string{"logs:CreateLogStream", "logs:PutLogEvents"}, *logs.LogGroupArn()))
	call := func(keepExisting bool) *customresources.AwsSdkCall {
		c := &customresources.AwsSdkCall{
			Service: jsii.String("DynamoDB"), Action: jsii.String("PutItem"),
			Parameters:         TableMarkerCall(s.Table.TableName()),
			PhysicalResourceId: customresources.PhysicalResourceId_Of(jsii.String("ferry-table-marker")),
		}
		if keepExisting {
			c.IgnoreErrorCodesMatching = jsii.String("ConditionalCheckFailedException")
		}
		return c
	}
	cr := customresources.NewAwsCustomResource(scope, jsii.String("LayoutMarker"), &customresources.AwsCustomResourceProps{
		ResourceType: jsii.String(TableMarkerType),
		OnCreate:     call(false),
		OnUpdate:     call(true),
		Policy: customresources.AwsCustomResourcePolicy_FromStatements(&[]awsiam.PolicyStatement{
			statement([]string{"dynamodb:PutItem"}, *s.Table.TableArn()),
		}),
		Role:                role,
		LogGroup:            logs,
		InstallLatestAwsSdk: jsii.Bool(false),
		Timeout:             awscdk.Duration_Minutes(jsii.Number(2)),
	})
	// The CDK's provider function names its role in DependsOn besides
	// its Role property: leave its policy only (cfn-lint W3005).
	if provider := s.Stack.Node().TryFindChild(jsii.String(markerProviderID)); provider != nil {
		deps := []string{}
		if policy := role.Node().TryFindChild(jsii.String("DefaultPolicy")); policy != nil {
			deps = append(deps, *s.Stack.GetLogicalId(policy.Node().DefaultChild().(awscdk.CfnElement)))
		}
		provider.Node().DefaultChild().(awslambda.CfnFunction).AddOverride(jsii.String("DependsOn"), deps)
	}
	return cr
}

// markerProviderID is the construct id of the CDK's singleton function
// behind every AwsCustomResource of a stack.
const markerProviderID = "AWS679f53fac002430cb0da5b7982bd2287"
