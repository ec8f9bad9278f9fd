package lambdastack

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Template is what ferry local reads from a synthesized CloudFormation
// template: the table, the functions with their roles, the HTTP API's
// routes, the schedules and the stream event-source mappings. Intrinsic
// functions (Ref, Fn::GetAtt, Fn::Join, Fn::Sub) are resolved against the
// local account, region and table.
type Template struct {
	// Path is the template file it was read from.
	Path      string
	Table     Table
	Functions []*Function // in the template's order of logical ids
	Routes    []Route
	Schedules []Schedule
	Mappings  []StreamMapping
}

// Table is the stack's DynamoDB table.
type Table struct {
	LogicalID  string
	Name       string
	StreamView string // "" when the table has no stream
	// Create and TTLAttribute make the table as the template declares it.
	Create       *dynamodb.CreateTableInput
	TTLAttribute string
	// Puts are the PutItem calls the template's custom resources make in
	// the table once it exists (the layout marker, infra/marker.go), as
	// the DynamoDB API takes them (JSON).
	Puts []CustomPut
}

// CustomPut is the DynamoDB PutItem a custom resource (an AwsCustomResource
// of the CDK, Custom::…) makes when it is created.
type CustomPut struct {
	LogicalID string
	Input     json.RawMessage
}

// Function is one AWS::Lambda::Function.
type Function struct {
	LogicalID string
	// Name is the short name: the construct's id in the CDK path
	// ("Ferry/Drainer/Function/Resource" → "drainer"), the directory of
	// its source under functions/ and the prefix of its log lines.
	Name          string
	Handler       string
	Runtime       string
	Architectures []string
	MemoryMB      int
	Timeout       time.Duration
	Environment   map[string]string
	Role          Role
}

// Role is a function's execution role: the statements of every policy
// attached to it.
type Role struct {
	LogicalID  string
	ARN        string
	Statements []Statement
}

// Statement is one IAM policy statement with its references resolved.
type Statement struct {
	Effect    string // Allow or Deny
	Actions   []string
	Resources []string
	// Condition is the statement's condition block as written (operator →
	// key → values); nil when it has none.
	Condition map[string]map[string][]string
}

// Route is one route of the HTTP API and how it is authorized.
type Route struct {
	Method string // GET, POST, …, or ANY
	Path   string // "/v1/actions/{id}"; "$default" for the default route
	// Function is the short name of the function the integration invokes.
	Function string
	// PayloadFormat is the integration's payload format version ("2.0").
	PayloadFormat string
	// Authorization is NONE, AWS_IAM, JWT or CUSTOM.
	Authorization string
	// JWT holds the authorizer's issuer and audience (Authorization JWT).
	JWT *JWTAuthorizer
}

// JWTAuthorizer is an HTTP API JWT authorizer's configuration.
type JWTAuthorizer struct {
	Issuer   string
	Audience []string
}

// Schedule is an EventBridge rule that invokes a function on a rate.
type Schedule struct {
	LogicalID  string
	Expression string        // as written: "rate(1 minute)"
	Every      time.Duration // the rate
	Function   string
	Enabled    bool
}

// StreamMapping is a DynamoDB Streams event-source mapping.
type StreamMapping struct {
	LogicalID        string
	Function         string
	StreamARN        string // the table's stream, as ARN pattern "…/stream/*"
	BatchSize        int
	BatchingWindow   time.Duration
	StartingPosition string   // LATEST or TRIM_HORIZON
	Filters          []string // patterns (JSON), ORed
	ReportItemErrors bool     // FunctionResponseTypes has ReportBatchItemFailures
	// MaxRetries is MaximumRetryAttempts; -1 retries until the record
	// expires.
	MaxRetries int
	// MaxRecordAge is MaximumRecordAgeInSeconds; 0 means no limit.
	MaxRecordAge   time.Duration
	Bisect         bool
	Parallelism    int
	Enabled        bool
	TumblingWindow time.Duration
}

// Local is the account and region a local template is resolved in: the
// embedded DynamoDB's.
type Local struct {
	Region  string
	Account string
	// StreamLabel is the table's stream label once the table exists; ""
	// resolves the stream's ARN to a pattern over the table's streams.
	StreamLabel string
}

// DefaultLocal is the embedded DynamoDB's region and account.
var DefaultLocal = Local{Region: "us-east-1", Account: "000000000000"}

// StackTemplate returns the path of the stack's template in a cloud
// assembly directory (cdk.out): the only stack in manifest.json, or the one
// named stack.
func StackTemplate(assemblyDir, stack string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(assemblyDir, "manifest.json"))
	if err != nil {
		return "", fmt.Errorf("reading the cloud assembly: %w", err)
	}
	var m struct {
		Artifacts map[string]struct {
			Type       string `json:"type"`
			Properties struct {
				TemplateFile string `json:"templateFile"`
			} `json:"properties"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", fmt.Errorf("reading %s: %w", filepath.Join(assemblyDir, "manifest.json"), err)
	}
	var names []string
	for name, a := range m.Artifacts {
		if a.Type == "aws:cloudformation:stack" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	switch {
	case stack != "":
		a, ok := m.Artifacts[stack]
		if !ok || a.Type != "aws:cloudformation:stack" {
			return "", fmt.Errorf("cloud assembly %s has no stack %q (stacks: %s)", assemblyDir, stack, strings.Join(names, ", "))
		}
		return filepath.Join(assemblyDir, a.Properties.TemplateFile), nil
	case len(names) == 1:
		return filepath.Join(assemblyDir, m.Artifacts[names[0]].Properties.TemplateFile), nil
	case len(names) == 0:
		return "", fmt.Errorf("cloud assembly %s has no stack", assemblyDir)
	}
	return "", fmt.Errorf("cloud assembly %s has several stacks (%s): name one", assemblyDir, strings.Join(names, ", "))
}

// rawTemplate is a CloudFormation template as JSON.
type rawTemplate struct {
	Resources map[string]rawResource `json:"Resources"`
}

type rawResource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
	Metadata   map[string]any `json:"Metadata"`
}

// ReadTemplate reads and resolves the template at path.
func ReadTemplate(path string, local Local) (*Template, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rt rawTemplate
	if err := json.Unmarshal(raw, &rt); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	t, err := parseTemplate(rt, local)
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", path, err)
	}
	t.Path = path
	return t, nil
}

// parseTemplate builds the Template from the raw resources.
func parseTemplate(rt rawTemplate, local Local) (*Template, error) {
	r := &resolver{res: rt.Resources, local: local}
	t := &Template{}
	ids := make([]string, 0, len(rt.Resources))
	for id := range rt.Resources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var errs []error
	for _, id := range ids {
		if rt.Resources[id].Type != "AWS::DynamoDB::Table" {
			continue
		}
		if t.Table.LogicalID != "" {
			return nil, fmt.Errorf("declares several tables (%s, %s); ferry local runs one", t.Table.LogicalID, id)
		}
		t.Table = Table{LogicalID: id, Name: r.tableName(id)}
		if spec, ok := rt.Resources[id].Properties["StreamSpecification"].(map[string]any); ok {
			t.Table.StreamView, _ = spec["StreamViewType"].(string)
		}
		var err error
		if t.Table.Create, t.Table.TTLAttribute, err = tableInputs(t.Table.Name, rt.Resources[id].Properties); err != nil {
			return nil, err
		}
	}
	if t.Table.LogicalID == "" {
		return nil, errors.New("declares no AWS::DynamoDB::Table")
	}
	puts, providers, err := r.customPuts(ids)
	if err != nil {
		return nil, err
	}
	t.Table.Puts = puts
	for _, id := range ids {
		if rt.Resources[id].Type == "AWS::Lambda::Function" && !providers[id] {
			f, err := r.function(id)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			t.Functions = append(t.Functions, f)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, id := range ids {
		var err error
		switch rt.Resources[id].Type {
		case "AWS::ApiGatewayV2::Route":
			var route Route
			if route, err = r.route(id); err == nil {
				t.Routes = append(t.Routes, route)
			}
		case "AWS::Events::Rule":
			var ss []Schedule
			if ss, err = r.schedules(id); err == nil {
				t.Schedules = append(t.Schedules, ss...)
			}
		case "AWS::Lambda::EventSourceMapping":
			var m StreamMapping
			if m, err = r.mapping(id); err == nil {
				t.Mappings = append(t.Mappings, m)
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return t, errors.Join(errs...)
}

// customPuts reads the custom resources (types Custom::…): each must make
// one DynamoDB PutItem in the stack's table when created (an
// AwsCustomResource's Create call), which ferry local makes itself right
// after the table; providers are the functions that serve them (their
// ServiceToken), which ferry local does not run.
func (r *resolver) customPuts(ids []string) ([]CustomPut, map[string]bool, error) {
	var puts []CustomPut
	providers := map[string]bool{}
	for _, id := range ids {
		res := r.res[id]
		if !strings.HasPrefix(res.Type, "Custom::") && res.Type != "AWS::CloudFormation::CustomResource" {
			continue
		}
		fid, ok := refOrGetAtt(res.Properties["ServiceToken"])
		if !ok || r.res[fid].Type != "AWS::Lambda::Function" {
			return nil, nil, fmt.Errorf("%s.ServiceToken: not a function of this template", id)
		}
		providers[fid] = true
		create, err := r.str(res.Properties["Create"])
		if err != nil {
			return nil, nil, fmt.Errorf("%s (%s): ferry local runs only custom resources that make one SDK call (Create): %w", id, res.Type, err)
		}
		var call struct {
			Service, Action string
			Parameters      json.RawMessage
		}
		if err := json.Unmarshal([]byte(create), &call); err != nil {
			return nil, nil, fmt.Errorf("%s.Create: %w", id, err)
		}
		if !strings.EqualFold(call.Service, "DynamoDB") || !strings.EqualFold(call.Action, "PutItem") {
			return nil, nil, fmt.Errorf("%s.Create: %s.%s: ferry local makes only DynamoDB PutItem calls of custom resources", id, call.Service, call.Action)
		}
		puts = append(puts, CustomPut{LogicalID: id, Input: call.Parameters})
	}
	return puts, providers, nil
}

// Function returns the function of that short name, or nil.
func (t *Template) Function(name string) *Function {
	for _, f := range t.Functions {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// function reads one AWS::Lambda::Function and its role.
func (r *resolver) function(id string) (*Function, error) {
	p := r.res[id].Properties
	f := &Function{LogicalID: id, Name: r.functionName(id), MemoryMB: 128, Timeout: 3 * time.Second, Environment: map[string]string{}}
	var err error
	if f.Handler, err = r.str(p["Handler"]); err != nil {
		return nil, fmt.Errorf("%s.Handler: %w", id, err)
	}
	if f.Runtime, err = r.str(p["Runtime"]); err != nil {
		return nil, fmt.Errorf("%s.Runtime: %w", id, err)
	}
	if v, ok := p["MemorySize"]; ok {
		if f.MemoryMB, err = r.integer(v); err != nil {
			return nil, fmt.Errorf("%s.MemorySize: %w", id, err)
		}
	}
	if v, ok := p["Timeout"]; ok {
		secs, err := r.integer(v)
		if err != nil {
			return nil, fmt.Errorf("%s.Timeout: %w", id, err)
		}
		f.Timeout = time.Duration(secs) * time.Second
	}
	f.Architectures = []string{"x86_64"}
	if as, ok := p["Architectures"].([]any); ok && len(as) > 0 {
		f.Architectures = nil
		for _, a := range as {
			s, err := r.str(a)
			if err != nil {
				return nil, fmt.Errorf("%s.Architectures: %w", id, err)
			}
			f.Architectures = append(f.Architectures, s)
		}
	}
	if env, ok := p["Environment"].(map[string]any); ok {
		vars, _ := env["Variables"].(map[string]any)
		for k, v := range vars {
			s, err := r.str(v)
			if err != nil {
				return nil, fmt.Errorf("%s.Environment.%s: %w", id, k, err)
			}
			f.Environment[k] = s
		}
	}
	roleID, ok := refOrGetAtt(p["Role"])
	if !ok || r.res[roleID].Type != "AWS::IAM::Role" {
		return nil, fmt.Errorf("%s.Role: not a role of this template (ferry local enforces the role it declares)", id)
	}
	if f.Role, err = r.role(roleID); err != nil {
		return nil, err
	}
	return f, nil
}

// functionName is a function's short name, from its CDK path metadata
// when the template has it ("Ferry/Drainer/Function/Resource"), else its
// logical id without the CDK hash and the "Function" suffix.
func (r *resolver) functionName(id string) string {
	if path, ok := r.res[id].Metadata["aws:cdk:path"].(string); ok {
		parts := strings.Split(path, "/")
		if len(parts) >= 3 {
			return strings.ToLower(parts[len(parts)-3])
		}
	}
	name := cdkHash.ReplaceAllString(id, "")
	name = strings.TrimSuffix(name, "Function")
	return strings.ToLower(name)
}

var cdkHash = regexp.MustCompile(`[0-9A-F]{8}$`)

// role reads a role and the statements of the policies attached to it
// (AWS::IAM::Policy resources naming it, and its own inline policies).
func (r *resolver) role(id string) (Role, error) {
	role := Role{LogicalID: id, ARN: r.arn(id)}
	var docs []any
	if ps, ok := r.res[id].Properties["Policies"].([]any); ok {
		for _, p := range ps {
			if pm, ok := p.(map[string]any); ok {
				docs = append(docs, pm["PolicyDocument"])
			}
		}
	}
	ids := make([]string, 0)
	for pid, res := range r.res {
		if res.Type != "AWS::IAM::Policy" {
			continue
		}
		roles, _ := res.Properties["Roles"].([]any)
		for _, ref := range roles {
			if rid, ok := refOrGetAtt(ref); ok && rid == id {
				ids = append(ids, pid)
			}
		}
	}
	sort.Strings(ids)
	for _, pid := range ids {
		docs = append(docs, r.res[pid].Properties["PolicyDocument"])
	}
	for _, d := range docs {
		dm, _ := d.(map[string]any)
		stmts, _ := dm["Statement"].([]any)
		for i, s := range stmts {
			st, err := r.statement(s)
			if err != nil {
				return role, fmt.Errorf("role %s, statement %d: %w", id, i, err)
			}
			role.Statements = append(role.Statements, st)
		}
	}
	return role, nil
}

func (r *resolver) statement(v any) (Statement, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Statement{}, errors.New("not an object")
	}
	if _, ok := m["NotAction"]; ok {
		return Statement{}, errors.New("NotAction is not supported")
	}
	if _, ok := m["NotResource"]; ok {
		return Statement{}, errors.New("NotResource is not supported")
	}
	st := Statement{}
	var err error
	if st.Effect, err = r.str(m["Effect"]); err != nil {
		return st, fmt.Errorf("Effect: %w", err)
	}
	if st.Actions, err = r.strs(m["Action"]); err != nil {
		return st, fmt.Errorf("Action: %w", err)
	}
	if st.Resources, err = r.strs(m["Resource"]); err != nil {
		return st, fmt.Errorf("Resource: %w", err)
	}
	if c, ok := m["Condition"].(map[string]any); ok {
		st.Condition = map[string]map[string][]string{}
		for op, kv := range c {
			kvm, _ := kv.(map[string]any)
			st.Condition[op] = map[string][]string{}
			for k, vals := range kvm {
				ss, err := r.strs(vals)
				if err != nil {
					return st, fmt.Errorf("Condition %s %s: %w", op, k, err)
				}
				st.Condition[op][k] = ss
			}
		}
	}
	return st, nil
}

// route reads an AWS::ApiGatewayV2::Route with its integration and
// authorizer.
func (r *resolver) route(id string) (Route, error) {
	p := r.res[id].Properties
	key, err := r.str(p["RouteKey"])
	if err != nil {
		return Route{}, fmt.Errorf("%s.RouteKey: %w", id, err)
	}
	route := Route{Authorization: "NONE"}
	if key == "$default" {
		route.Method, route.Path = "ANY", "$default"
	} else {
		var ok bool
		route.Method, route.Path, ok = strings.Cut(key, " ")
		if !ok {
			return Route{}, fmt.Errorf("%s.RouteKey %q: want \"METHOD /path\"", id, key)
		}
	}
	if v, ok := p["AuthorizationType"]; ok {
		if route.Authorization, err = r.str(v); err != nil {
			return Route{}, fmt.Errorf("%s.AuthorizationType: %w", id, err)
		}
	}
	if route.Authorization == "JWT" {
		aid, _ := refOrGetAtt(p["AuthorizerId"])
		cfg, _ := r.res[aid].Properties["JwtConfiguration"].(map[string]any)
		if cfg == nil {
			return Route{}, fmt.Errorf("%s: JWT route without a JWT authorizer", id)
		}
		route.JWT = &JWTAuthorizer{}
		route.JWT.Issuer, _ = r.str(cfg["Issuer"])
		route.JWT.Audience, _ = r.strs(cfg["Audience"])
	}
	// Target is "integrations/<id>", a Join of the literal and a Ref.
	target, err := r.str(p["Target"])
	if err != nil {
		return Route{}, fmt.Errorf("%s.Target: %w", id, err)
	}
	iid := strings.TrimPrefix(target, "integrations/")
	integ, ok := r.res[iid]
	if !ok || integ.Type != "AWS::ApiGatewayV2::Integration" {
		return Route{}, fmt.Errorf("%s.Target %q: no such integration", id, target)
	}
	if t, _ := integ.Properties["IntegrationType"].(string); t != "AWS_PROXY" {
		return Route{}, fmt.Errorf("%s: integration %s is %q; ferry local serves AWS_PROXY (Lambda) integrations", id, iid, t)
	}
	fid, ok := refOrGetAtt(integ.Properties["IntegrationUri"])
	if !ok || r.res[fid].Type != "AWS::Lambda::Function" {
		return Route{}, fmt.Errorf("%s: integration %s does not name a function of this template", id, iid)
	}
	route.Function = r.functionName(fid)
	route.PayloadFormat = "1.0"
	if v, ok := integ.Properties["PayloadFormatVersion"]; ok {
		route.PayloadFormat, _ = r.str(v)
	}
	return route, nil
}

var rateExpr = regexp.MustCompile(`^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$`)

// schedules reads an AWS::Events::Rule's schedule and the functions it
// targets (a rule with an event pattern instead is not a schedule: none).
func (r *resolver) schedules(id string) ([]Schedule, error) {
	p := r.res[id].Properties
	expr, ok := p["ScheduleExpression"].(string)
	if !ok {
		return nil, nil
	}
	m := rateExpr.FindStringSubmatch(expr)
	if m == nil {
		return nil, fmt.Errorf("%s: schedule %q: ferry local runs rate() schedules only", id, expr)
	}
	n, _ := strconv.Atoi(m[1])
	unit := map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}[strings.TrimSuffix(m[2], "s")]
	state, _ := p["State"].(string)
	var out []Schedule
	targets, _ := p["Targets"].([]any)
	for _, t := range targets {
		tm, _ := t.(map[string]any)
		fid, ok := refOrGetAtt(tm["Arn"])
		if !ok || r.res[fid].Type != "AWS::Lambda::Function" {
			continue
		}
		out = append(out, Schedule{LogicalID: id, Expression: expr, Every: time.Duration(n) * unit,
			Function: r.functionName(fid), Enabled: state == "" || state == "ENABLED"})
	}
	return out, nil
}

// mapping reads an AWS::Lambda::EventSourceMapping of a DynamoDB stream.
func (r *resolver) mapping(id string) (StreamMapping, error) {
	p := r.res[id].Properties
	src, _ := p["EventSourceArn"].(map[string]any)
	ga, _ := src["Fn::GetAtt"].([]any)
	if len(ga) != 2 || ga[1] != "StreamArn" || r.res[fmt.Sprint(ga[0])].Type != "AWS::DynamoDB::Table" {
		return StreamMapping{}, fmt.Errorf("%s: ferry local runs event-source mappings of the table's stream only", id)
	}
	fid, _ := refOrGetAtt(p["FunctionName"])
	if r.res[fid].Type != "AWS::Lambda::Function" {
		return StreamMapping{}, fmt.Errorf("%s.FunctionName: not a function of this template", id)
	}
	m := StreamMapping{
		LogicalID: id, Function: r.functionName(fid), StreamARN: r.streamARN(fmt.Sprint(ga[0])),
		BatchSize: 100, MaxRetries: -1, Parallelism: 1, Enabled: true,
	}
	ints := []struct {
		key string
		dst *int
	}{{"BatchSize", &m.BatchSize}, {"MaximumRetryAttempts", &m.MaxRetries}, {"ParallelizationFactor", &m.Parallelism}}
	for _, f := range ints {
		if v, ok := p[f.key]; ok {
			n, err := r.integer(v)
			if err != nil {
				return m, fmt.Errorf("%s.%s: %w", id, f.key, err)
			}
			*f.dst = n
		}
	}
	durs := []struct {
		key string
		dst *time.Duration
	}{{"MaximumBatchingWindowInSeconds", &m.BatchingWindow}, {"MaximumRecordAgeInSeconds", &m.MaxRecordAge}, {"TumblingWindowInSeconds", &m.TumblingWindow}}
	for _, f := range durs {
		if v, ok := p[f.key]; ok {
			n, err := r.integer(v)
			if err != nil {
				return m, fmt.Errorf("%s.%s: %w", id, f.key, err)
			}
			if n > 0 {
				*f.dst = time.Duration(n) * time.Second
			}
		}
	}
	m.StartingPosition, _ = p["StartingPosition"].(string)
	if m.StartingPosition != "LATEST" && m.StartingPosition != "TRIM_HORIZON" {
		return m, fmt.Errorf("%s.StartingPosition %q: want LATEST or TRIM_HORIZON", id, m.StartingPosition)
	}
	if b, ok := p["BisectBatchOnFunctionError"].(bool); ok {
		m.Bisect = b
	}
	if b, ok := p["Enabled"].(bool); ok {
		m.Enabled = b
	}
	types, _ := r.strs(p["FunctionResponseTypes"])
	for _, t := range types {
		if t == "ReportBatchItemFailures" {
			m.ReportItemErrors = true
		}
	}
	if fc, ok := p["FilterCriteria"].(map[string]any); ok {
		fs, _ := fc["Filters"].([]any)
		for i, f := range fs {
			fm, _ := f.(map[string]any)
			pat, err := r.str(fm["Pattern"])
			if err != nil {
				return m, fmt.Errorf("%s.FilterCriteria.Filters[%d]: %w", id, i, err)
			}
			if _, err := ParsePattern(pat); err != nil {
				return m, fmt.Errorf("%s.FilterCriteria.Filters[%d]: %w", id, i, err)
			}
			m.Filters = append(m.Filters, pat)
		}
	}
	return m, nil
}
