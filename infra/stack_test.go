package infra

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/require"
)

// synthesized is one stack and its template, synthesized once per props
// (jsii calls are slow; the tests share them and do not run in parallel).
type synthesized struct {
	stack    *Stack
	template assertions.Template
	json     map[string]any
}

var synthCache = map[string]*synthesized{}

// synth builds the stack for props (with the test asset directory) and
// synthesizes it; name keys the cache.
func synth(t *testing.T, name string, props Props) *synthesized {
	t.Helper()
	if s, ok := synthCache[name]; ok {
		return s
	}
	props.AssetDir = testAssetDir
	// The cached stack is synthesized again later (Annotations_FromStack),
	// so its output directory outlives this test.
	out, err := os.MkdirTemp(testAssetDir, "cdk.out-")
	require.NoError(t, err)
	// The context of cdk.json, feature flags included, as the CDK CLI
	// passes it: the tests pin the template that deploys.
	ctx := cdkContext(t)
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out), Context: &ctx})
	stack, err := NewStack(app, "Ferry", props)
	require.NoError(t, err)
	tmpl := assertions.Template_FromStack(stack.Stack, nil)
	s := &synthesized{stack: stack, template: tmpl, json: *tmpl.ToJSON()}
	synthCache[name] = s
	return s
}

func defaultStack(t *testing.T) *synthesized { return synth(t, "default", Props{}) }

const (
	testKey       = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	testIdentity  = "arn:aws:ses:eu-west-1:111122223333:identity/example.com"
	testBus       = "arn:aws:events:eu-west-1:111122223333:event-bus/orders"
	testSecret    = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:ferry/webhooks-AbCdEf"
	testOTelLayer = "arn:aws:lambda:eu-west-1:901920570463:layer:aws-otel-collector-arm64-ver-0-117-0:1"
)

// providersStack has every optional resource configured.
func providersStack(t *testing.T) *synthesized {
	return synth(t, "providers", Props{
		KMSKeyARN:           testKey,
		SESIdentityARNs:     []string{testIdentity},
		SESConfigurationSet: "ferry",
		EventBusARNs:        []string{testBus},
		WebhookSecretsARN:   testSecret,
		AlarmEmail:          "ops@example.com",
		IAMWorkspaces:       map[string][]string{"arn:aws:iam::111122223333:role/app": {"default", "billing"}},
		Tracing:             TracingOpenTelemetry,
		OTelLayerARN:        testOTelLayer,
	})
}

func jwtStack(t *testing.T) *synthesized {
	return synth(t, "jwt", Props{
		JWTIssuer: "https://id.example.com", JWTAudience: []string{"ferry-api"},
		Tracing: TracingOff, DisableDeletionProtection: true,
	})
}

// resources returns the template's resources of type typ by logical id.
func (s *synthesized) resources(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range s.json["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

// resource returns the properties of the resource with logical id.
func (s *synthesized) props(t *testing.T, logicalID string) map[string]any {
	t.Helper()
	r, ok := s.json["Resources"].(map[string]any)[logicalID]
	require.True(t, ok, "no resource %s", logicalID)
	return r.(map[string]any)["Properties"].(map[string]any)
}

// render writes a template value as a readable string: Ref and GetAtt as
// <Id> and <Id.Attr>, Fn::Join concatenated.
func render(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		if ref, ok := v["Ref"]; ok {
			return "<" + ref.(string) + ">"
		}
		if ga, ok := v["Fn::GetAtt"]; ok {
			parts := ga.([]any)
			return fmt.Sprintf("<%s.%s>", parts[0], parts[1])
		}
		if j, ok := v["Fn::Join"]; ok {
			args := j.([]any)
			var b strings.Builder
			for i, p := range args[1].([]any) {
				if i > 0 {
					b.WriteString(args[0].(string))
				}
				b.WriteString(render(p))
			}
			return b.String()
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func strings1(v any) []string {
	switch v := v.(type) {
	case []any:
		out := make([]string, len(v))
		for i, x := range v {
			out[i] = render(x)
		}
		return out
	default:
		return []string{render(v)}
	}
}

// stmt is a policy statement as the tests compare it.
type stmt struct {
	Actions   []string
	Resources []string
	Condition string
}

// roleStatements returns the statements of fn's role's policies, in order.
func (s *synthesized) roleStatements(t *testing.T, fn FunctionName) []stmt {
	t.Helper()
	roleID := s.stack.LogicalID(s.stack.Roles[fn])
	role := s.props(t, roleID)
	require.NotContains(t, role, "ManagedPolicyArns", "%s: no managed policies", fn)
	require.NotContains(t, role, "Policies", "%s: no inline policies besides the default policy", fn)
	var out []stmt
	n := 0
	for _, pol := range s.resources("AWS::IAM::Policy") {
		p := pol["Properties"].(map[string]any)
		if !slices.Contains(strings1(p["Roles"]), "<"+roleID+">") {
			continue
		}
		n++
		for _, st := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			st := st.(map[string]any)
			require.Equal(t, "Allow", st["Effect"])
			x := stmt{Actions: strings1(st["Action"]), Resources: strings1(st["Resource"])}
			if c, ok := st["Condition"]; ok {
				x.Condition = render(c)
			}
			out = append(out, x)
		}
	}
	require.Equal(t, 1, n, "%s: one policy", fn)
	return out
}

func TestTable(t *testing.T) {
	s := defaultStack(t)
	tableID := s.stack.LogicalID(s.stack.Table)
	require.Equal(t, "Table", tableID, "fixed: a refactor must never replace the table")
	r := s.json["Resources"].(map[string]any)[tableID].(map[string]any)
	require.Equal(t, "Retain", r["DeletionPolicy"], "deletion protection on: the stack keeps the table")
	require.Equal(t, "Retain", r["UpdateReplacePolicy"])
	p := r["Properties"].(map[string]any)
	want := map[string]any{
		"TableName":   "ferry",
		"BillingMode": "PAY_PER_REQUEST",
		"KeySchema": []any{
			map[string]any{"AttributeName": "pk", "KeyType": "HASH"},
			map[string]any{"AttributeName": "sk", "KeyType": "RANGE"},
		},
		"AttributeDefinitions": []any{
			map[string]any{"AttributeName": "pk", "AttributeType": "S"},
			map[string]any{"AttributeName": "sk", "AttributeType": "S"},
			map[string]any{"AttributeName": "due_pk", "AttributeType": "S"},
			map[string]any{"AttributeName": "due_sk", "AttributeType": "S"},
			map[string]any{"AttributeName": "sub_pk", "AttributeType": "S"},
			map[string]any{"AttributeName": "ws", "AttributeType": "S"},
			map[string]any{"AttributeName": "id", "AttributeType": "S"},
		},
		"GlobalSecondaryIndexes": []any{
			map[string]any{
				"IndexName": "due",
				"KeySchema": []any{
					map[string]any{"AttributeName": "due_pk", "KeyType": "HASH"},
					map[string]any{"AttributeName": "due_sk", "KeyType": "RANGE"},
				},
				"Projection": map[string]any{
					"ProjectionType":   "INCLUDE",
					"NonKeyAttributes": []any{"kind", "var", "ws", "lane", "prev", "st", "att", "max", "ep", "lx", "xa"},
				},
			},
			map[string]any{
				"IndexName": "subject",
				"KeySchema": []any{
					map[string]any{"AttributeName": "sub_pk", "KeyType": "HASH"},
					map[string]any{"AttributeName": "sk", "KeyType": "RANGE"},
				},
				"Projection": map[string]any{"ProjectionType": "KEYS_ONLY"},
			},
			map[string]any{
				"IndexName": "workspace",
				"KeySchema": []any{
					map[string]any{"AttributeName": "ws", "KeyType": "HASH"},
					map[string]any{"AttributeName": "id", "KeyType": "RANGE"},
				},
				"Projection": map[string]any{"ProjectionType": "KEYS_ONLY"},
			},
		},
		"TimeToLiveSpecification":          map[string]any{"AttributeName": "ttl", "Enabled": true},
		"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
		// SSE disabled in the template means the AWS-owned key (DynamoDB
		// always encrypts at rest).
		"SSESpecification":          map[string]any{"SSEEnabled": false},
		"StreamSpecification":       map[string]any{"StreamViewType": "NEW_AND_OLD_IMAGES"},
		"DeletionProtectionEnabled": true,
		"Tags":                      []any{map[string]any{"Key": VersionTagKey, "Value": testVersion}},
	}
	require.Equal(t, want, p)
}

// TestNoEndedIndex: the table has no `ended` index (design.md §3.6); no grant, alarm,
// dashboard or table property may name it or its keys.
func TestNoEndedIndex(t *testing.T) {
	for _, s := range []*synthesized{defaultStack(t), providersStack(t), jwtStack(t)} {
		b, err := json.Marshal(s.json)
		require.NoError(t, err)
		for _, name := range []string{"index/ended", `"ended"`, "end_pk", "end_sk"} {
			require.NotContains(t, string(b), name)
		}
	}
}

func TestTableCustomerManagedKey(t *testing.T) {
	s := providersStack(t)
	p := s.props(t, s.stack.LogicalID(s.stack.Table))
	require.Equal(t, map[string]any{"SSEEnabled": true, "SSEType": "KMS", "KMSMasterKeyId": testKey}, p["SSESpecification"])
}

func TestTableWithoutDeletionProtection(t *testing.T) {
	s := jwtStack(t)
	id := s.stack.LogicalID(s.stack.Table)
	r := s.json["Resources"].(map[string]any)[id].(map[string]any)
	require.Equal(t, "Delete", r["DeletionPolicy"])
	require.Equal(t, false, r["Properties"].(map[string]any)["DeletionProtectionEnabled"])
}

// ferryFunctions returns the template's Ferry functions (handler
// bootstrap) by logical id: every AWS::Lambda::Function but the CDK's
// provider of the layout marker's custom resource.
func (s *synthesized) ferryFunctions() map[string]map[string]any {
	out := s.resources("AWS::Lambda::Function")
	for id, f := range out {
		if f["Properties"].(map[string]any)["Handler"] != FunctionHandler {
			delete(out, id)
		}
	}
	return out
}

func TestFunctions(t *testing.T) {
	s := defaultStack(t)
	require.Len(t, s.ferryFunctions(), 5)
	require.Len(t, s.resources("AWS::Lambda::Function"), 6, "and the layout marker's provider")
	tableRef := map[string]any{"Ref": s.stack.LogicalID(s.stack.Table)}
	shared := map[string]any{
		"FERRY_TABLE": tableRef, "FERRY_PARTITIONS": "16", "FERRY_LEASE": "5m",
		"FERRY_WRITE_MARGIN": "60s", "LOG_LEVEL": "info", "FERRY_RETENTION": "720h", "FERRY_ROW_CAP": "500000",
		"FERRY_STACK": "Ferry", "FERRY_CLOCK_SKEW": "5s", "FERRY_PROVIDER_TIMEOUT": "30s",
		"FERRY_MAX_DEFERRALS": "50", "FERRY_MAX_DEFER_TIME": "24h",
	}
	with := func(extra map[string]any) map[string]any {
		m := map[string]any{}
		for k, v := range shared {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	want := map[FunctionName]struct {
		memory, timeout float64
		env             map[string]any
	}{
		FunctionEnqueue:   {256, 10, with(map[string]any{"FERRY_IAM_WORKSPACES": "{}"})},
		FunctionDrainer:   {512, 120, with(nil)},
		FunctionReaper:    {256, 55, with(nil)},
		FunctionRetention: {256, 300, with(nil)},
		FunctionSESEvents: {128, 30, with(nil)},
	}
	for _, fn := range Functions {
		t.Run(functionID(fn), func(t *testing.T) {
			p := s.props(t, s.stack.LogicalID(s.stack.Functions[fn]))
			w := want[fn]
			require.Equal(t, "provided.al2023", p["Runtime"])
			require.Equal(t, []any{"arm64"}, p["Architectures"])
			require.Equal(t, "bootstrap", p["Handler"])
			require.Equal(t, w.memory, p["MemorySize"])
			require.Equal(t, w.timeout, p["Timeout"])
			require.Equal(t, map[string]any{"Variables": w.env}, p["Environment"])
			require.Equal(t, map[string]any{"Mode": "Active"}, p["TracingConfig"])
			require.Equal(t, map[string]any{"Role": map[string]any{"Fn::GetAtt": []any{s.stack.LogicalID(s.stack.Roles[fn]), "Arn"}}}["Role"], p["Role"])
			logID := s.stack.LogicalID(s.stack.LogGroups[fn])
			require.Equal(t, map[string]any{"LogGroup": map[string]any{"Ref": logID}}, p["LoggingConfig"])
			require.Equal(t, 30.0, s.props(t, logID)["RetentionInDays"])
		})
	}
}

func TestFunctionEnvironmentOfConfiguredStack(t *testing.T) {
	s := providersStack(t)
	env := func(fn FunctionName) map[string]any {
		return s.props(t, s.stack.LogicalID(s.stack.Functions[fn]))["Environment"].(map[string]any)["Variables"].(map[string]any)
	}
	require.Equal(t, `{"arn:aws:iam::111122223333:role/app":["default","billing"]}`, env(FunctionEnqueue)["FERRY_IAM_WORKSPACES"])
	require.NotContains(t, env(FunctionEnqueue), "FERRY_WORKSPACE_CLAIM")
	require.Equal(t, testSecret, env(FunctionDrainer)["FERRY_WEBHOOK_SECRETS_ARN"])
	for _, fn := range Functions {
		p := s.props(t, s.stack.LogicalID(s.stack.Functions[fn]))
		require.Equal(t, []any{testOTelLayer}, p["Layers"], "%s: the collector layer", fn)
		require.Equal(t, map[string]any{"Mode": "Active"}, p["TracingConfig"])
		require.Equal(t, "ferry-"+string(fn), env(fn)["OTEL_SERVICE_NAME"])
		require.Equal(t, "http://localhost:4318", env(fn)["OTEL_EXPORTER_OTLP_ENDPOINT"])
	}
	require.Equal(t, "ferry", env(FunctionDrainer)["FERRY_SES_CONFIGURATION_SET"])
	require.Equal(t, "ferry", env(FunctionSESEvents)["FERRY_SES_CONFIGURATION_SET"], "sesevents drops events of another set")

	j := jwtStack(t)
	enq := j.props(t, j.stack.LogicalID(j.stack.Functions[FunctionEnqueue]))
	vars := enq["Environment"].(map[string]any)["Variables"].(map[string]any)
	require.Equal(t, "ferry_workspaces", vars["FERRY_WORKSPACE_CLAIM"])
	require.NotContains(t, vars, "FERRY_IAM_WORKSPACES")
	require.NotContains(t, enq, "TracingConfig", "tracing off")
}

func TestRolePolicies(t *testing.T) {
	s := providersStack(t)
	table := "<" + s.stack.LogicalID(s.stack.Table) + ".Arn>"
	logs := func(fn FunctionName) stmt {
		return stmt{Actions: []string{"logs:CreateLogStream", "logs:PutLogEvents"},
			Resources: []string{"<" + s.stack.LogicalID(s.stack.LogGroups[fn]) + ".Arn>"}}
	}
	kms := stmt{
		Actions: []string{"kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"}, Resources: []string{testKey},
		Condition: `{"StringEquals":{"kms:ViaService":{"Fn::Join":["",["dynamodb.",{"Ref":"AWS::Region"},".amazonaws.com"]]}}}`,
	}
	// The table statements come from roles.json; TestRolesAreTheDerivedRoles
	// checks them against it on their own.
	tableStmts := func(fn FunctionName) []stmt {
		var out []stmt
		for _, g := range TableGrants[fn] {
			res := table
			if g.Index != "" {
				res += "/index/" + g.Index
			}
			out = append(out, stmt{Actions: g.Actions, Resources: []string{res}})
		}
		return out
	}
	// @aws-cdk/aws-iam:minimizePolicies (cdk.json) sorts a statement's actions.
	xray := stmt{Actions: []string{"xray:PutTelemetryRecords", "xray:PutTraceSegments"}, Resources: []string{"*"}}
	want := map[FunctionName][]stmt{
		// The Query grants on the subject and workspace indexes are one
		// statement (minimizePolicies merges statements of equal actions).
		FunctionEnqueue: {
			logs(FunctionEnqueue),
			tableStmts(FunctionEnqueue)[0],
			{Actions: []string{"dynamodb:Query"}, Resources: []string{table + "/index/subject", table + "/index/workspace"}},
			kms, xray,
		},
		FunctionDrainer: {
			logs(FunctionDrainer),
			tableStmts(FunctionDrainer)[0], tableStmts(FunctionDrainer)[1],
			{Actions: []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"},
				Resources: []string{"<" + s.stack.LogicalID(s.stack.Table) + ".StreamArn>"}},
			{Actions: []string{"dynamodb:ListStreams"}, Resources: []string{table + "/stream/*"}},
			{Actions: []string{"ses:SendEmail"}, Resources: []string{testIdentity,
				"arn:<AWS::Partition>:ses:<AWS::Region>:<AWS::AccountId>:configuration-set/ferry"}},
			{Actions: []string{"events:PutEvents"}, Resources: []string{testBus}},
			{Actions: []string{"secretsmanager:GetSecretValue"}, Resources: []string{testSecret}},
			kms, xray,
		},
		FunctionReaper: {
			logs(FunctionReaper),
			tableStmts(FunctionReaper)[0], tableStmts(FunctionReaper)[1],
			kms, xray,
		},
		FunctionRetention: {
			logs(FunctionRetention),
			tableStmts(FunctionRetention)[0],
			kms, xray,
		},
		// sesevents reads and writes its rows on the table, nothing else:
		// EventBridge invokes it through the function's resource policy.
		FunctionSESEvents: {
			logs(FunctionSESEvents),
			tableStmts(FunctionSESEvents)[0],
			kms, xray,
		},
	}
	for _, fn := range Functions {
		t.Run(functionID(fn), func(t *testing.T) {
			require.Equal(t, want[fn], s.roleStatements(t, fn))
		})
	}
}

func TestRolePoliciesWithoutProviders(t *testing.T) {
	// Nothing configured: the drainer may send no email and put no event,
	// reads webhook secrets only where the adapter looks by default, and
	// without tracing there is no "*" resource at all.
	s := jwtStack(t)
	for _, fn := range Functions {
		for _, st := range s.roleStatements(t, fn) {
			for _, a := range st.Actions {
				require.NotContains(t, a, "*", "%s: no wildcard action", fn)
				require.False(t, strings.HasPrefix(a, "ses:") || strings.HasPrefix(a, "events:") ||
					strings.HasPrefix(a, "kms:") || strings.HasPrefix(a, "xray:"), "%s: %s", fn, a)
				if strings.HasPrefix(a, "secretsmanager:") {
					require.Equal(t, FunctionDrainer, fn)
					require.Equal(t, stmt{Actions: []string{"secretsmanager:GetSecretValue"},
						Resources: []string{"arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:ferry/webhook/*"}}, st)
				}
			}
			for _, r := range st.Resources {
				require.NotEqual(t, "*", r, "%s", fn)
			}
		}
	}
}

func TestWebhookSecretResource(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	for i, tc := range []struct {
		value, want string
		pattern     bool
	}{
		{"", "arn:${Token[AWS.Partition.*]}:secretsmanager:${Token[AWS.Region.*]}:${Token[AWS.AccountId.*]}:secret:ferry/webhook/*", true},
		{testSecret, testSecret, false},
		{"ferry/webhooks", "arn:${Token[AWS.Partition.*]}:secretsmanager:${Token[AWS.Region.*]}:${Token[AWS.AccountId.*]}:secret:ferry/webhooks-??????", false},
		{"arn:aws:secretsmanager:eu-west-1:111122223333:secret:hooks/%s/signing", "arn:aws:secretsmanager:eu-west-1:111122223333:secret:hooks/*/signing-??????", true},
	} {
		p := Props{WebhookSecretsARN: tc.value}.WithDefaults()
		s := &Stack{Stack: awscdk.NewStack(app, jsii.String(fmt.Sprintf("S%d", i)), nil), Props: &p}
		got, pattern := s.webhookSecretResource()
		require.Regexp(t, "^"+tokenPattern(tc.want)+"$", got, tc.value)
		require.Equal(t, tc.pattern, pattern, tc.value)
	}
}

// tokenPattern turns want into a regular expression in which each
// ${Token[NAME.*]} matches that token with any number.
func tokenPattern(want string) string {
	q := regexp.QuoteMeta(want)
	return strings.ReplaceAll(q, `\.\*\]\}`, `\.[0-9]+\]\}`)
}

func TestAPIRoutesAllAuthorized(t *testing.T) {
	s := defaultStack(t)
	apiID := s.stack.LogicalID(s.stack.API)
	var keys []string
	for _, r := range s.resources("AWS::ApiGatewayV2::Route") {
		p := r["Properties"].(map[string]any)
		require.Equal(t, "AWS_IAM", p["AuthorizationType"], "route %v", p["RouteKey"])
		require.Equal(t, map[string]any{"Ref": apiID}, p["ApiId"])
		keys = append(keys, p["RouteKey"].(string))
	}
	var want []string
	for _, r := range Routes {
		want = append(want, r.Key())
	}
	sort.Strings(keys)
	sort.Strings(want)
	require.Equal(t, want, keys)
	require.Contains(t, keys, "POST /v1/actions:batch")
	require.Contains(t, keys, "DELETE /v1/subjects/{subject_id}")
	require.Contains(t, keys, "GET /healthz")

	for _, r := range s.resources("AWS::ApiGatewayV2::Integration") {
		p := r["Properties"].(map[string]any)
		require.Equal(t, "AWS_PROXY", p["IntegrationType"])
		require.Equal(t, "2.0", p["PayloadFormatVersion"])
		require.Equal(t, "<"+s.stack.LogicalID(s.stack.Functions[FunctionEnqueue])+".Arn>", render(p["IntegrationUri"]))
	}
}

func TestAPIRoutesJWT(t *testing.T) {
	s := jwtStack(t)
	auths := s.resources("AWS::ApiGatewayV2::Authorizer")
	require.Len(t, auths, 1)
	var authID string
	for id, a := range auths {
		authID = id
		p := a["Properties"].(map[string]any)
		require.Equal(t, "JWT", p["AuthorizerType"])
		require.Equal(t, map[string]any{"Audience": []any{"ferry-api"}, "Issuer": "https://id.example.com"}, p["JwtConfiguration"])
		require.Equal(t, []any{"$request.header.Authorization"}, p["IdentitySource"])
	}
	routes := s.resources("AWS::ApiGatewayV2::Route")
	require.Len(t, routes, len(Routes))
	for _, r := range routes {
		p := r["Properties"].(map[string]any)
		require.Equal(t, "JWT", p["AuthorizationType"])
		require.Equal(t, map[string]any{"Ref": authID}, p["AuthorizerId"])
	}
}

func TestAPIStage(t *testing.T) {
	s := defaultStack(t)
	p := s.props(t, s.stack.LogicalID(s.stack.APIStage))
	require.Equal(t, "$default", p["StageName"])
	require.Equal(t, true, p["AutoDeploy"])
	require.Equal(t, map[string]any{"ThrottlingRateLimit": 50.0, "ThrottlingBurstLimit": 100.0}, p["DefaultRouteSettings"])
	logs := p["AccessLogSettings"].(map[string]any)
	require.Equal(t, "<"+s.stack.LogicalID(s.stack.APIAccessLogs)+".Arn>", render(logs["DestinationArn"]))
	var format map[string]string
	require.NoError(t, json.Unmarshal([]byte(logs["Format"].(string)), &format))
	require.Equal(t, "$context.routeKey", format["routeKey"])
	for _, v := range format {
		require.NotContains(t, v, "$context.path", "paths carry subject ids")
	}
	require.Equal(t, 30.0, s.props(t, s.stack.LogicalID(s.stack.APIAccessLogs))["RetentionInDays"])
}

func TestSchedules(t *testing.T) {
	s := defaultStack(t)
	want := map[FunctionName]string{
		FunctionDrainer: "rate(1 minute)", FunctionReaper: "rate(1 minute)", FunctionRetention: "rate(1 day)",
	}
	require.Len(t, s.resources("AWS::Events::Rule"), len(want))
	for fn, expr := range want {
		p := s.props(t, s.stack.LogicalID(s.stack.Rules[fn]))
		require.Equal(t, expr, p["ScheduleExpression"], "%s", fn)
		require.Equal(t, "ENABLED", p["State"])
		targets := p["Targets"].([]any)
		require.Len(t, targets, 1)
		require.Equal(t, "<"+s.stack.LogicalID(s.stack.Functions[fn])+".Arn>", render(targets[0].(map[string]any)["Arn"]))
	}
}

func TestStreamEventSourceMapping(t *testing.T) {
	s := defaultStack(t)
	esms := s.resources("AWS::Lambda::EventSourceMapping")
	require.Len(t, esms, 1)
	for _, r := range esms {
		p := r["Properties"].(map[string]any)
		require.Equal(t, map[string]any{
			"FunctionName":                   map[string]any{"Ref": s.stack.LogicalID(s.stack.Functions[FunctionDrainer])},
			"EventSourceArn":                 map[string]any{"Fn::GetAtt": []any{s.stack.LogicalID(s.stack.Table), "StreamArn"}},
			"StartingPosition":               "LATEST",
			"BatchSize":                      100.0,
			"MaximumBatchingWindowInSeconds": 1.0,
			"FunctionResponseTypes":          []any{"ReportBatchItemFailures"},
			"MaximumRetryAttempts":           2.0,
			"MaximumRecordAgeInSeconds":      3600.0,
			"ParallelizationFactor":          10.0,
			"FilterCriteria": map[string]any{"Filters": []any{map[string]any{
				"Pattern": `{"dynamodb":{"NewImage":{"due_pk":{"S":[{"exists":true}]},"st":{"S":["ADMITTED"]}}}}`,
			}}},
			"Tags": []any{map[string]any{"Key": VersionTagKey, "Value": testVersion}},
		}, p)
	}
}

func TestAlarms(t *testing.T) {
	s := defaultStack(t)
	type alarm struct {
		threshold float64
		op        string
		periods   float64
	}
	gte := "GreaterThanOrEqualToThreshold"
	want := map[string]alarm{
		"OldestDueAge":         {300, "GreaterThanThreshold", 1},
		"GaugesMissing":        {1, "LessThanThreshold", 2},
		"Uncertain":            {1, gte, 1},
		"Failed":               {5, gte, 1},
		"StuckLaneHeads":       {1, gte, 3},
		"DynamoDBThrottles":    {1, gte, 1},
		"DynamoDBSystemErrors": {1, gte, 1},
	}
	for _, fn := range Functions {
		want[functionID(fn)+"Errors"] = alarm{1, gte, 1}
		want[functionID(fn)+"Throttles"] = alarm{1, gte, 1}
	}
	require.Len(t, s.resources("AWS::CloudWatch::Alarm"), len(want))
	require.ElementsMatch(t, mapKeys(want), s.stack.AlarmIDs())
	for id, w := range want {
		t.Run(id, func(t *testing.T) {
			p := s.props(t, s.stack.LogicalID(s.stack.Alarms[id]))
			require.Equal(t, w.threshold, p["Threshold"])
			require.Equal(t, w.op, p["ComparisonOperator"])
			require.Equal(t, w.periods, p["EvaluationPeriods"])
			require.Equal(t, "Ferry-"+id, p["AlarmName"])
			require.NotEmpty(t, p["AlarmDescription"])
			require.NotContains(t, p, "AlarmActions", "no topic configured")
		})
	}

	oldest := s.props(t, s.stack.LogicalID(s.stack.Alarms["OldestDueAge"]))
	require.Equal(t, "Ferry", oldest["Namespace"])
	require.Equal(t, "OldestDueAge", oldest["MetricName"])
	require.Equal(t, "Maximum", oldest["Statistic"])
	stackDim := []any{map[string]any{"Name": "Stack", "Value": "Ferry"}}
	for _, id := range []string{"OldestDueAge", "GaugesMissing", "StuckLaneHeads"} {
		require.Equal(t, stackDim, s.props(t, s.stack.LogicalID(s.stack.Alarms[id]))["Dimensions"], "%s: this stack's metric only", id)
	}
	require.Equal(t, "breaching", s.props(t, s.stack.LogicalID(s.stack.Alarms["GaugesMissing"]))["TreatMissingData"])
	// OldestDueAge reads the claimable backlog only; a lane held by its
	// head is StuckLaneHeads' (issue 28, item 8).
	require.Contains(t, oldest["AlarmDescription"], "Actions waiting behind their lane's head are not counted")
	require.Contains(t, s.props(t, s.stack.LogicalID(s.stack.Alarms["StuckLaneHeads"]))["AlarmDescription"], "waiting behind a head")

	query := func(id string) string {
		m := s.props(t, s.stack.LogicalID(s.stack.Alarms[id]))["Metrics"].([]any)
		require.Len(t, m, 1)
		require.Equal(t, 300.0, m[0].(map[string]any)["Period"])
		return m[0].(map[string]any)["Expression"].(string)
	}
	require.Equal(t, `SELECT SUM(ActionsEnded) FROM SCHEMA("Ferry", Kind, Outcome, Stack, StopReason) WHERE Stack = 'Ferry' AND Outcome = 'UNCERTAIN'`, query("Uncertain"))
	require.Equal(t, `SELECT SUM(ActionsEnded) FROM SCHEMA("Ferry", Kind, Outcome, Stack, StopReason) WHERE Stack = 'Ferry' AND Outcome = 'FAILED'`, query("Failed"))

	throttles := s.props(t, s.stack.LogicalID(s.stack.Alarms["DynamoDBThrottles"]))["Metrics"].([]any)
	require.Len(t, throttles, 1+len(TableOperations))
	expr := throttles[0].(map[string]any)["Expression"].(string)
	require.Equal(t, "FILL(getitem, 0) + FILL(putitem, 0) + FILL(updateitem, 0) + FILL(deleteitem, 0) + FILL(query, 0) + FILL(scan, 0) + FILL(batchgetitem, 0) + FILL(transactwriteitems, 0)", expr)
	for _, m := range throttles[1:] {
		stat := m.(map[string]any)["MetricStat"].(map[string]any)
		metric := stat["Metric"].(map[string]any)
		require.Equal(t, "AWS/DynamoDB", metric["Namespace"])
		require.Equal(t, "ThrottledRequests", metric["MetricName"])
		require.Equal(t, "Sum", stat["Stat"])
	}

	errs := s.props(t, s.stack.LogicalID(s.stack.Alarms["DrainerErrors"]))
	require.Equal(t, "AWS/Lambda", errs["Namespace"])
	require.Equal(t, "Errors", errs["MetricName"])
	require.Equal(t, []any{map[string]any{"Name": "FunctionName", "Value": map[string]any{"Ref": s.stack.LogicalID(s.stack.Functions[FunctionDrainer])}}}, errs["Dimensions"])
}

func TestAlarmsNotifyTheTopic(t *testing.T) {
	s := providersStack(t)
	topics := s.resources("AWS::SNS::Topic")
	require.Len(t, topics, 1)
	var topicID string
	for id := range topics {
		topicID = id
	}
	policies := s.resources("AWS::SNS::TopicPolicy")
	require.Len(t, policies, 1, "the topic refuses publishing without TLS")
	subs := s.resources("AWS::SNS::Subscription")
	require.Len(t, subs, 1)
	for _, sub := range subs {
		p := sub["Properties"].(map[string]any)
		require.Equal(t, "email", p["Protocol"])
		require.Equal(t, "ops@example.com", p["Endpoint"])
	}
	for _, id := range s.stack.AlarmIDs() {
		p := s.props(t, s.stack.LogicalID(s.stack.Alarms[id]))
		require.Equal(t, []any{map[string]any{"Ref": topicID}}, p["AlarmActions"], id)
		require.Equal(t, []any{map[string]any{"Ref": topicID}}, p["OKActions"], id)
	}
}

func TestDashboard(t *testing.T) {
	s := defaultStack(t)
	dashboards := s.resources("AWS::CloudWatch::Dashboard")
	require.Len(t, dashboards, 1)
	for _, d := range dashboards {
		body := render(d["Properties"].(map[string]any)["DashboardBody"])
		for _, title := range []string{"Alarms", "Backlog: due, blocked and claimed actions", "Backlog: oldest due and blocked age (s)",
			"Throughput: ended actions by outcome", "Latency: function duration p99 (ms)", "Latency: API p50 and p99 (ms)",
			"Errors: functions", "Errors: DynamoDB throttled requests"} {
			require.Contains(t, body, `"title":"`+title+`"`)
		}
		require.Contains(t, body, `WHERE Stack = 'Ferry' GROUP BY Outcome`)
		// Actions waiting behind their lane are graphed apart from the
		// claimable backlog (issue 28, item 8).
		require.Contains(t, body, `["Ferry","BlockedDepth","Stack","Ferry"`)
		require.Contains(t, body, `["Ferry","OldestBlockedAge","Stack","Ferry"`)
		require.Contains(t, body, `SELECT SUM(Attempts) FROM SCHEMA(\"Ferry\", Kind, Stack) WHERE Stack = 'Ferry'`)
		// What the web console's chart reads too (internal/console).
		require.Contains(t, body, `SELECT SUM(ActionsEnqueued) FROM SCHEMA(\"Ferry\", Kind, Stack) WHERE Stack = 'Ferry'`)
		require.Contains(t, body, `SELECT SUM(Deferrals) FROM SCHEMA(\"Ferry\", Kind, Stack) WHERE Stack = 'Ferry'`)
		// Every Ferry metric of the dashboard names this stack: a metric
		// array ["Ferry", name, …] always goes on with "Stack", "Ferry".
		for _, m := range regexp.MustCompile(`\["Ferry","[A-Za-z]+"[^\]]*\]`).FindAllString(body, -1) {
			require.Contains(t, m, `"Stack","Ferry"`, m)
		}
	}
}

func TestCdkNagHasNoUnsuppressedFindings(t *testing.T) {
	for name, s := range map[string]*synthesized{"Default": defaultStack(t), "Providers": providersStack(t), "JWT": jwtStack(t)} {
		t.Run(name, func(t *testing.T) {
			ann := assertions.Annotations_FromStack(s.stack.Stack)
			match := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
			errs := ann.FindError(jsii.String("*"), match)
			require.Empty(t, *errs, "cdk-nag errors")
			warns := ann.FindWarning(jsii.String("*"), match)
			require.Empty(t, *warns, "cdk-nag warnings")
		})
	}
	// Every suppression carries a reason.
	s := defaultStack(t)
	for _, fn := range Functions {
		for _, sup := range s.stack.Suppressions(fn) {
			require.NotEmpty(t, sup.Reason)
			require.NotEmpty(t, sup.AppliesTo, "suppressions are narrowed to the findings they accept")
		}
	}
}

func TestNewStackRefusesInvalidProps(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	_, err := NewStack(app, "Bad", Props{AssetDir: testAssetDir, WriteMargin: time.Minute, Lease: 30 * time.Second})
	require.ErrorContains(t, err, "WriteMargin (1m0s) must be shorter than Lease (30s)")
	require.Empty(t, *app.Node().Children(), "nothing declared")

	_, err = NewStack(app, "NoAssets", Props{AssetDir: t.TempDir()})
	require.ErrorContains(t, err, "run `make build` first")
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
