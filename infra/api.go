package infra

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Route is one route of the HTTP API (API.md, "The HTTP API (v1)").
type Route struct {
	Method awsapigatewayv2.HttpMethod
	Path   string
}

// Key is the route key API Gateway stores: "METHOD /path".
func (r Route) Key() string { return fmt.Sprintf("%s %s", r.Method, r.Path) }

// Routes are the HTTP API's routes, all served by the enqueue function and
// all behind the authorizer.
var Routes = []Route{
	{awsapigatewayv2.HttpMethod_POST, "/v1/actions"},
	{awsapigatewayv2.HttpMethod_POST, "/v1/actions:batch"},
	{awsapigatewayv2.HttpMethod_GET, "/v1/actions/{id}"},
	{awsapigatewayv2.HttpMethod_GET, "/v1/actions"},
	{awsapigatewayv2.HttpMethod_POST, "/v1/actions/{id}/admit"},
	{awsapigatewayv2.HttpMethod_POST, "/v1/actions/{id}/cancel"},
	{awsapigatewayv2.HttpMethod_DELETE, "/v1/subjects/{subject_id}"},
	{awsapigatewayv2.HttpMethod_GET, "/v1/openapi.json"},
	{awsapigatewayv2.HttpMethod_GET, "/healthz"},
}

// accessLogFormat is the API's access log line. It logs the route key, not
// the path: paths carry action and subject ids, and a subject id may be
// personal data.
var accessLogFormat = map[string]string{
	"requestId":        "$context.requestId",
	"requestTime":      "$context.requestTime",
	"ip":               "$context.identity.sourceIp",
	"routeKey":         "$context.routeKey",
	"status":           "$context.status",
	"protocol":         "$context.protocol",
	"responseLength":   "$context.responseLength",
	"latency":          "$context.responseLatency",
	"integrationError": "$context.integrationErrorMessage",
	"authorizerError":  "$context.authorizer.error",
	"principal":        "$context.identity.userArn",
}

// AccessLogFormat returns the access log format as the stage holds it.
func AccessLogFormat() string {
	b, _ := json.Marshal(accessLogFormat) // a map of strings always encodes
	return string(b)
}

// newAPI declares the HTTP API: the routes, the authorizer (JWT when an
// issuer is given, else IAM), a $default stage with throttling and access
// logs.
func (s *Stack) newAPI() {
	p := s.Props
	var authorizer awsapigatewayv2.IHttpRouteAuthorizer
	if p.UsesJWT() {
		authorizer = awsapigatewayv2authorizers.NewHttpJwtAuthorizer(jsii.String("JwtAuthorizer"), jsii.String(p.JWTIssuer),
			&awsapigatewayv2authorizers.HttpJwtAuthorizerProps{JwtAudience: jsii.Strings(p.JWTAudience...)})
	} else {
		authorizer = awsapigatewayv2authorizers.NewHttpIamAuthorizer()
	}
	scope := constructs.NewConstruct(s.Stack, jsii.String("Api"))
	api := awsapigatewayv2.NewHttpApi(scope, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
		Description:        jsii.String("Ferry HTTP API (v1)"),
		CreateDefaultStage: jsii.Bool(false),
		DefaultAuthorizer:  authorizer,
	})
	integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("Enqueue"), s.Functions[FunctionEnqueue],
		&awsapigatewayv2integrations.HttpLambdaIntegrationProps{
			PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0(),
		})
	for _, r := range Routes {
		api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(r.Path),
			Methods:     &[]awsapigatewayv2.HttpMethod{r.Method},
			Integration: integration,
		})
	}

	logs := awslogs.NewLogGroup(scope, jsii.String("AccessLogs"), &awslogs.LogGroupProps{
		Retention:     retentionDays(p.LogRetentionDays),
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	stage := awsapigatewayv2.NewHttpStage(scope, jsii.String("Stage"), &awsapigatewayv2.HttpStageProps{
		HttpApi:    api,
		StageName:  jsii.String("$default"),
		AutoDeploy: jsii.Bool(true),
		Throttle: &awsapigatewayv2.ThrottleSettings{
			RateLimit:  jsii.Number(p.APIThrottleRate),
			BurstLimit: jsii.Number(float64(p.APIThrottleBurst)),
		},
	})
	// The L2 stage takes access log settings only through an interface Go
	// code cannot implement; the L1 property is the same setting.
	cfn := stage.Node().DefaultChild().(awsapigatewayv2.CfnStage)
	cfn.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: logs.LogGroupArn(),
		Format:         jsii.String(AccessLogFormat()),
	})
	s.API = api
	s.APIStage = stage
	s.APIAccessLogs = logs
}
