package lambdastack

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/ferryhq/ferry/internal/adapters/email"
	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/console"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
	"github.com/ferryhq/ferry/internal/httpapi"
	"github.com/ferryhq/ferry/internal/operator"
	"github.com/ferryhq/ferry/internal/outbox"
)

// Token is a local bearer token and the workspaces it stands for.
type Token struct {
	Token      string
	Workspaces []string
}

// Config is what ferry local runs with.
type Config struct {
	// Template is the synthesized template to run.
	Template string
	// BinDir holds each function's bootstrap, built for this machine:
	// BinDir/<function>/bootstrap.
	BinDir string
	// RIE is the aws-lambda-rie binary.
	RIE string
	// Addr is the HTTP API's listen address (ferry dev's by default);
	// DynamoDBAddr the embedded DynamoDB's (port 0: any).
	Addr, DynamoDBAddr string
	Tokens             []Token
	// OperatorTokens sign in to the console seeing every workspace;
	// ConsoleRefresh is how often its pages update (default 2s).
	OperatorTokens []string
	ConsoleRefresh time.Duration
	MailDir        string
	WebhookSecret  string
	// AllowPrivateWebhooks lets webhooks name and reach loopback receivers
	// (FERRY_ALLOW_PRIVATE_WEBHOOKS in every function's environment: the
	// enqueue checks a URL, the drainer dials it; never in the template).
	AllowPrivateWebhooks bool
	// Speedup divides every schedule's rate; Schedules overrides a
	// function's rate (0: never).
	Speedup   float64
	Schedules map[string]time.Duration
	// MaxInstances bounds each function's concurrent instances.
	MaxInstances int
	// LogDir, when set, keeps each function's log in LogDir/<function>.log.
	LogDir  string
	ShowEMF bool
	// Out receives the banner and the summary; LogOut the functions' lines.
	Out, LogOut io.Writer
	Local       Local
}

// Defaults of Config.
const (
	DefaultAddr         = "127.0.0.1:8080"
	DefaultMaxInstances = 10
)

// Stack is a running local stack.
type Stack struct {
	cfg       Config
	Template  *Template
	db        *ddblocal.DB
	gate      *RoleGate
	standIns  *StandIns
	logs      *Logs
	emulators map[string]*Emulator
	pollers   []*Poller
	front     *Front
	recorder  *console.Recorder // the console's chart, from the functions' EMF lines
	apiLn     net.Listener
	ddbLn     net.Listener
	awsLn     net.Listener
	servers   []*http.Server
	memory    *memorySampler

	mu            sync.Mutex
	scheduleCalls map[string]int
	started       time.Time
}

// Start reads the template, makes the table, serves DynamoDB, the AWS
// stand-ins and the HTTP API, and readies each function's emulator. Run
// then drives the schedules and stream pollers until ctx ends.
func Start(ctx context.Context, cfg Config) (*Stack, error) {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.DynamoDBAddr == "" {
		cfg.DynamoDBAddr = "127.0.0.1:0"
	}
	if cfg.MaxInstances == 0 {
		cfg.MaxInstances = DefaultMaxInstances
	}
	if cfg.Speedup == 0 {
		cfg.Speedup = 1
	}
	if cfg.Local == (Local{}) {
		cfg.Local = DefaultLocal
	}
	if len(cfg.Tokens) == 0 {
		cfg.Tokens = []Token{{Token: "dev", Workspaces: []string{"default"}}}
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	s := &Stack{cfg: cfg, emulators: map[string]*Emulator{}, scheduleCalls: map[string]int{}, started: time.Now()}
	s.logs = &Logs{Out: cfg.LogOut, Dir: cfg.LogDir, ShowEMF: cfg.ShowEMF}
	ok := false
	defer func() {
		if !ok {
			s.close()
		}
	}()
	for _, p := range []*string{&s.cfg.RIE, &s.cfg.BinDir} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return nil, err
		}
		*p = abs
	}
	tmpl, err := ReadTemplate(cfg.Template, cfg.Local)
	if err != nil {
		return nil, err
	}
	if err := s.serveDynamoDB(ctx, tmpl); err != nil {
		return nil, err
	}
	if err := s.serveStandIns(); err != nil {
		return nil, err
	}
	for _, f := range s.Template.Functions {
		if err := s.newEmulator(f); err != nil {
			return nil, err
		}
	}
	if err := s.serveAPI(ctx); err != nil {
		return nil, err
	}
	for _, m := range s.Template.Mappings {
		if m.Enabled {
			s.pollers = append(s.pollers, &Poller{Mapping: m, Table: s.Template.Table.Name, Streams: s.streamsClient(m.Function),
				Function: s.emulators[m.Function], Logs: s.logs, Local: s.cfg.Local})
		}
	}
	s.memory = newMemorySampler(s.pids)
	ok = true
	return s, nil
}

// serveDynamoDB makes the table as the template declares it in the
// embedded DynamoDB, serves it behind the role gate, and reads the
// template again with the table's stream label.
func (s *Stack) serveDynamoDB(ctx context.Context, tmpl *Template) error {
	s.db = ddblocal.New(ddblocal.WithRegion(s.cfg.Local.Region, s.cfg.Local.Account), ddblocal.WithTTLSweepEvery(time.Minute))
	if _, err := s.db.CreateTable(ctx, tmpl.Table.Create); err != nil {
		return fmt.Errorf("creating table %s: %w", tmpl.Table.Name, err)
	}
	if a := tmpl.Table.TTLAttribute; a != "" {
		if _, err := s.db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(tmpl.Table.Name),
			TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(a), Enabled: aws.Bool(true)}}); err != nil {
			return fmt.Errorf("table %s: TTL: %w", tmpl.Table.Name, err)
		}
	}
	for _, put := range tmpl.Table.Puts {
		if err := customPut(s.db, put); err != nil {
			return err
		}
	}
	if err := checkLayout(ctx, s.db, tmpl.Table.Name); err != nil {
		return err
	}
	d, err := s.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tmpl.Table.Name)})
	if err != nil {
		return err
	}
	local := s.cfg.Local
	local.StreamLabel = aws.ToString(d.Table.LatestStreamLabel)
	if local.StreamLabel != "" {
		if tmpl, err = ReadTemplate(s.cfg.Template, local); err != nil {
			return err
		}
	}
	s.Template = tmpl
	s.gate = &RoleGate{Next: ddbhttp.NewHandler(s.db), Map: MapRequests(local), Local: local, Logs: s.logs}
	for _, f := range tmpl.Functions {
		s.gate.Register(f)
	}
	s.ddbLn, err = net.Listen("tcp", s.cfg.DynamoDBAddr)
	if err != nil {
		return fmt.Errorf("DynamoDB listen address %s: %w", s.cfg.DynamoDBAddr, err)
	}
	s.serve(s.ddbLn, s.gate)
	return nil
}

// checkLayout refuses, before any function or the console starts, a table
// the template left without this build's layout marker (no marker
// resource, or one of another layout version: design.md §3.10), as every
// function would at its cold start. It only reads.
func checkLayout(ctx context.Context, db *ddblocal.DB, table string) error {
	e, err := outbox.New(db, clock.System{}, outbox.NewRegistry(), outbox.Config{Table: table})
	if err != nil {
		return err
	}
	return e.LayoutCheck(ctx)
}

// customPut makes a custom resource's PutItem in db, as CloudFormation's
// call through the resource's provider would (the request as the DynamoDB
// API takes it).
func customPut(db *ddblocal.DB, put CustomPut) error {
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(put.Input))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.PutItem")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	rec := httptest.NewRecorder()
	ddbhttp.NewHandler(db).ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return fmt.Errorf("custom resource %s: PutItem: %s", put.LogicalID, rec.Body.String())
	}
	return nil
}

func (s *Stack) serveStandIns() error {
	dir := s.cfg.MailDir
	if dir == "" {
		dir = "./.ferry/mail"
	}
	mail, err := email.NewMailDirSender(dir, clock.System{})
	if err != nil {
		return err
	}
	s.standIns = &StandIns{Mail: mail, WebhookSecret: s.cfg.WebhookSecret, Logs: s.logs}
	if s.awsLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return err
	}
	s.serve(s.awsLn, s.standIns)
	return nil
}

func (s *Stack) serve(ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)}
	s.servers = append(s.servers, srv)
	go func() { _ = srv.Serve(ln) }()
}

// newEmulator readies a function: its bootstrap, and its environment as
// Lambda would give it, pointed at the local endpoints.
func (s *Stack) newEmulator(f *Function) error {
	if !strings.HasPrefix(f.Runtime, "provided") || f.Handler == "" {
		return fmt.Errorf("function %s: runtime %s: ferry local runs OS-only runtimes (provided.*), whose handler is the bootstrap binary", f.Name, f.Runtime)
	}
	boot := filepath.Join(s.cfg.BinDir, f.Name, "bootstrap")
	if _, err := os.Stat(boot); err != nil {
		return fmt.Errorf("function %s: %s is missing (make local builds it for this machine)", f.Name, boot)
	}
	env := LambdaEnvironment(f, s.cfg.Local, filepath.Dir(boot))
	for k, v := range f.Environment {
		env[k] = v
	}
	env["AWS_ACCESS_KEY_ID"] = AccessKeyID(f.Name)
	env["AWS_SECRET_ACCESS_KEY"] = "ferry-local"
	env["AWS_SESSION_TOKEN"] = "ferry-local-" + f.Name
	// Every AWS service at the stand-ins, DynamoDB behind the role gate.
	awsURL := "http://" + s.awsLn.Addr().String()
	env["AWS_ENDPOINT_URL"] = awsURL
	for _, k := range []string{"AWS_ENDPOINT_URL_SESV2", "AWS_ENDPOINT_URL_SECRETS_MANAGER", "AWS_ENDPOINT_URL_EVENTBRIDGE"} {
		env[k] = awsURL
	}
	env["AWS_ENDPOINT_URL_DYNAMODB"] = "http://" + s.ddbLn.Addr().String()
	for k, v := range s.overrides(f) {
		env[k] = v
	}
	s.emulators[f.Name] = &Emulator{Function: f, RIE: s.cfg.RIE, Bootstrap: boot, Env: env, MaxInstances: s.cfg.MaxInstances, Logs: s.logs}
	return nil
}

// principalARN is the IAM principal a local token stands for on AWS_IAM
// routes.
func (s *Stack) principalARN(i int) string {
	return fmt.Sprintf("arn:aws:iam::%s:user/ferry-local-%d", s.cfg.Local.Account, i+1)
}

// overrides are the local changes to a function's environment beyond the
// endpoints: the one ferry local always names in its banner.
func (s *Stack) overrides(f *Function) map[string]string {
	out := map[string]string{}
	if _, ok := f.Environment["FERRY_IAM_WORKSPACES"]; ok {
		// The local tokens' principals join the template's map, so the
		// IAM-authorized API answers them.
		m := map[string][]string{}
		_ = json.Unmarshal([]byte(f.Environment["FERRY_IAM_WORKSPACES"]), &m)
		for i, t := range s.cfg.Tokens {
			m[s.principalARN(i)] = t.Workspaces
		}
		b, _ := json.Marshal(m)
		out["FERRY_IAM_WORKSPACES"] = string(b)
	}
	if s.cfg.AllowPrivateWebhooks {
		out["FERRY_ALLOW_PRIVATE_WEBHOOKS"] = "true"
	}
	return out
}

func (s *Stack) serveAPI(ctx context.Context) error {
	claim := "ferry_workspaces"
	for _, r := range s.Template.Routes {
		if f := s.Template.Function(r.Function); f != nil && f.Environment["FERRY_WORKSPACE_CLAIM"] != "" {
			claim = f.Environment["FERRY_WORKSPACE_CLAIM"]
		}
	}
	var principals []Principal
	for i, t := range s.cfg.Tokens {
		principals = append(principals, Principal{Token: t.Token, ARN: s.principalARN(i),
			Claims: map[string]string{"sub": fmt.Sprintf("ferry-local-%d", i+1), claim: strings.Join(t.Workspaces, " ")}})
	}
	fns := map[string]Invoker{}
	for name, e := range s.emulators {
		fns[name] = e
	}
	s.front = &Front{Routes: s.Template.Routes, Functions: fns, Principals: principals, Local: s.cfg.Local}
	s.front.Log = func(format string, args ...any) { s.logs.Event("api", "api", fmt.Sprintf(format, args...)) }
	c, err := s.newConsole(ctx)
	if err != nil {
		return err
	}
	if s.apiLn, err = net.Listen("tcp", s.cfg.Addr); err != nil {
		return fmt.Errorf("API listen address %s: %w", s.cfg.Addr, err)
	}
	s.serve(s.apiLn, console.WithAPI(s.front, c))
	return nil
}

// newConsole builds the console (/console beside the API): it reads the
// embedded table directly, as an operator's commands would (no function's
// role applies), signs in with the local tokens (their workspaces) and the
// operator tokens, and charts the functions' EMF metrics.
func (s *Stack) newConsole(ctx context.Context) (*console.Handler, error) {
	partitions, _ := strconv.Atoi(s.functionEnv("FERRY_PARTITIONS"))
	retention, _ := time.ParseDuration(s.functionEnv("FERRY_RETENTION"))
	sess, err := operator.NewSession(ctx, s.db, clock.System{}, operator.Target{Table: s.Template.Table.Name,
		Partitions: cmp.Or(partitions, outbox.DefaultPartitions), Retention: cmp.Or(retention, outbox.DefaultRetention)})
	if err != nil {
		return nil, fmt.Errorf("the console: %w", err)
	}
	tokens := map[string][]string{}
	for _, t := range s.cfg.Tokens {
		tokens[t.Token] = append(tokens[t.Token], t.Workspaces...)
	}
	auth, err := httpapi.NewBearerTokens(tokens)
	if err != nil {
		return nil, fmt.Errorf("--token: %w", err)
	}
	s.recorder = console.NewRecorder(clock.System{}, nil)
	s.logs.OnEMF = s.recorder.IngestEMF
	return console.New(console.Options{Engine: sess.Engine, Login: console.TokenLogin(auth, s.cfg.OperatorTokens),
		Clock: clock.System{}, Where: "ferry local, table " + s.Template.Table.Name, AllowChanges: true,
		Refresh: cmp.Or(s.cfg.ConsoleRefresh, 2*time.Second), Metrics: s.recorder})
}

// functionEnv is a variable of the functions' environment (the first
// function that sets it).
func (s *Stack) functionEnv(name string) string {
	for _, f := range s.Template.Functions {
		if v := f.Environment[name]; v != "" {
			return v
		}
	}
	return ""
}

// ConsoleMetrics is the console's chart: the functions' EMF metrics.
func (s *Stack) ConsoleMetrics() console.Metrics { return s.recorder }

// ConsoleURL is the console's address.
func (s *Stack) ConsoleURL() string { return s.URL() + console.Prefix + "/" }

// URL is the HTTP API's base URL.
func (s *Stack) URL() string { return "http://" + s.apiLn.Addr().String() }

// DynamoDBURL is the embedded DynamoDB's endpoint (behind the role gate,
// which checks only the functions' own requests).
func (s *Stack) DynamoDBURL() string { return "http://" + s.ddbLn.Addr().String() }

// Logs returns the stack's logs (and its EMF counters).
func (s *Stack) Logs() *Logs { return s.logs }

// Gate returns the role gate (its refusals).
func (s *Stack) Gate() *RoleGate { return s.gate }

// StandIns returns the AWS stand-ins (emails sent, events put).
func (s *Stack) StandIns() *StandIns { return s.standIns }

// Pollers returns the stream pollers (their counts).
func (s *Stack) Pollers() []*Poller { return s.pollers }

// Emulator returns the named function's emulator.
func (s *Stack) Emulator(name string) *Emulator { return s.emulators[name] }

// ScheduleCalls returns how many scheduled invocations each function had.
func (s *Stack) ScheduleCalls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.scheduleCalls {
		out[k] = v
	}
	return out
}

// Run drives the schedules and the stream pollers until ctx ends, then
// stops everything and writes the summary.
func (s *Stack) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, sc := range s.Template.Schedules {
		every, on := s.scheduleEvery(sc)
		if !on {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); s.runSchedule(ctx, sc, every) }()
	}
	for _, p := range s.pollers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Run(ctx); err != nil && ctx.Err() == nil {
				s.logs.Event(p.Mapping.Function, "esm", "stream poller stopped: "+err.Error())
			}
		}()
	}
	wg.Add(1)
	go func() { defer wg.Done(); s.memory.run(ctx) }()
	<-ctx.Done()
	wg.Wait()
	s.close()
	s.Summary(s.cfg.Out)
	return nil
}

// streamsClient reads the table's stream with the function's credentials:
// Lambda's poller reads it with the function's execution role.
func (s *Stack) streamsClient(fn string) *dynamodbstreams.Client {
	return dynamodbstreams.New(dynamodbstreams.Options{
		BaseEndpoint: aws.String(s.DynamoDBURL()),
		Region:       s.cfg.Local.Region,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKeyID(fn), "ferry-local", "ferry-local-"+fn),
	})
}

// scheduleEvery is a schedule's local period: an override, or the
// template's rate divided by the speed-up.
func (s *Stack) scheduleEvery(sc Schedule) (time.Duration, bool) {
	if d, ok := s.cfg.Schedules[sc.Function]; ok {
		return d, d > 0
	}
	return time.Duration(float64(sc.Every) / s.cfg.Speedup), sc.Enabled
}

// runSchedule invokes the rule's function every period, asynchronously as
// EventBridge does (each tick its own invocation; a busy function gets
// another instance).
func (s *Stack) runSchedule(ctx context.Context, sc Schedule, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			ev := map[string]any{
				"version": "0", "id": newRequestID(), "detail-type": "Scheduled Event", "source": "aws.events",
				"account": s.cfg.Local.Account, "time": now.UTC().Format(time.RFC3339), "region": s.cfg.Local.Region,
				"resources": []string{fmt.Sprintf("arn:aws:events:%s:%s:rule/%s", s.cfg.Local.Region, s.cfg.Local.Account, sc.LogicalID)},
				"detail":    map[string]any{},
			}
			payload, _ := json.Marshal(ev)
			s.mu.Lock()
			s.scheduleCalls[sc.Function]++
			s.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := s.emulators[sc.Function].Invoke(context.WithoutCancel(ctx), payload)
				switch {
				case err != nil:
					s.logs.Event(sc.Function, "schedule", "scheduled invocation failed: "+err.Error())
				case res.FunctionError != "":
					s.logs.Event(sc.Function, "schedule", "scheduled invocation failed ("+res.FunctionError+"): "+string(res.Payload))
				}
			}()
		}
	}
}

// close stops the servers and the emulators.
func (s *Stack) close() {
	for _, srv := range s.servers {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(ctx)
		cancel()
	}
	s.servers = nil
	var wg sync.WaitGroup
	for _, e := range s.emulators {
		wg.Add(1)
		go func() { defer wg.Done(); e.Close() }()
	}
	wg.Wait()
	s.logs.Close()
}

// pids are the processes of the stack: this one and every emulator.
func (s *Stack) pids() []int {
	out := []int{os.Getpid()}
	for _, e := range s.emulators {
		out = append(out, e.PIDs()...)
	}
	return out
}

// Summary writes, per function, its instances, invocations and cold
// starts, the poller's counts, the role gate's refusals, the memory peak
// and the EMF counters.
func (s *Stack) Summary(w io.Writer) {
	fmt.Fprintf(w, "\nferry local ran %s.\n\n", time.Since(s.started).Round(time.Second))
	names := make([]string, 0, len(s.emulators))
	for n := range s.emulators {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintln(w, functionSummary(n, s.emulators[n].Stats(), s.ScheduleCalls()[n]))
	}
	for _, p := range s.pollers {
		st := p.Stats()
		fmt.Fprintf(w, "  stream → %s: %d records read, %d filtered out, %d too old; %d batches (%d records), %d retried, %d partial, %d bisected, %d given up\n",
			p.Mapping.Function, st.Read, st.Filtered, st.Expired, st.Batches, st.Records, st.Retries, st.Partial, st.Bisected, st.Dropped)
	}
	emails, events, refused := s.standIns.Counts()
	fmt.Fprintf(w, "  stand-ins: %d emails to the mail sink, %d events put, %d requests refused\n", emails, events, len(refused))
	denied := s.gate.Denials()
	fmt.Fprintf(w, "  roles: %d DynamoDB requests refused (AccessDeniedException)\n", len(denied))
	for _, d := range denied {
		fmt.Fprintf(w, "    %s: %s on %s\n", d.Function, d.Action, d.Resource)
	}
	if peak := s.memory.peak(); peak > 0 {
		fmt.Fprintf(w, "  memory: %.1f MiB at most (resident, this process and every emulator and bootstrap)\n", float64(peak)/(1<<20))
	}
	fmt.Fprintf(w, "\nMetrics (EMF lines, added up):\n\n")
	s.logs.Summary(w)
}

// functionSummary is the summary's line of one function.
func functionSummary(name string, st EmulatorStats, scheduled int) string {
	var cold []string
	for _, d := range st.ColdStarts {
		cold = append(cold, d.Round(time.Millisecond).String())
	}
	first := ""
	if len(cold) > 0 {
		first = " (first invocations: " + strings.Join(cold, ", ") + ")"
	}
	return fmt.Sprintf("  %-10s %s on %s%s; %d scheduled", name,
		counted(st.Invocations, "invocation"), counted(st.Instances, "instance"), first, scheduled)
}

// counted is n and the noun, plural unless n is 1.
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Banner writes what a newcomer needs: the API, tokens, DynamoDB, where
// mail goes, the schedules, the stream mapping and what differs from AWS.
func (s *Stack) Banner(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "Ferry local is running %s\n\n", s.Template.Path)
	fmt.Fprintf(&b, "  API            %s  (payload 2.0 to %s)\n", s.URL(), routeFunctions(s.Template.Routes))
	fmt.Fprintf(&b, "  console        %s  (sign in with a token below, or an --operator-token for every workspace)\n", s.ConsoleURL())
	for _, t := range s.cfg.Tokens {
		fmt.Fprintf(&b, "  token          %s  (workspaces: %s)\n", t.Token, strings.Join(t.Workspaces, ", "))
	}
	fmt.Fprintf(&b, "  DynamoDB       %s  (table %q, each function's role enforced)\n", s.DynamoDBURL(), s.Template.Table.Name)
	fmt.Fprintf(&b, "  email          local mail sink in %s (SES v2 stand-in)\n", s.standIns.Mail.Dir())
	fmt.Fprintf(&b, "  webhook secret %s\n", s.cfg.WebhookSecret)
	for _, f := range s.Template.Functions {
		arch := f.Architectures[0]
		if native := map[string]string{"amd64": "x86_64", "arm64": "arm64"}[runtime.GOARCH]; native != arch {
			arch += " (runs as " + native + " here)"
		}
		fmt.Fprintf(&b, "  function       %-10s %d MB, %s timeout, %s\n", f.Name, f.MemoryMB, f.Timeout, arch)
	}
	for _, sc := range s.Template.Schedules {
		every, on := s.scheduleEvery(sc)
		state := "every " + every.String()
		if !on {
			state = "off"
		}
		fmt.Fprintf(&b, "  schedule       %-10s %s: %s\n", sc.Function, sc.Expression, state)
	}
	for _, m := range s.Template.Mappings {
		fmt.Fprintf(&b, "  stream         %-10s batch %d, window %s, %s, %d filter(s), retries %d, bisect %t, partial batch responses %t\n",
			m.Function, m.BatchSize, m.BatchingWindow, m.StartingPosition, len(m.Filters), m.MaxRetries, m.Bisect, m.ReportItemErrors)
	}
	if s.cfg.AllowPrivateWebhooks {
		fmt.Fprintf(&b, "  webhooks       may reach loopback and private addresses (FERRY_ALLOW_PRIVATE_WEBHOOKS, not in the template)\n")
	}
	fmt.Fprintf(&b, "\nPress Ctrl-C to stop; the summary (invocations, stream batches, refusals, metrics) follows.\n")
	fmt.Fprint(w, b.String())
}

func routeFunctions(routes []Route) string {
	seen := map[string]bool{}
	var out []string
	for _, r := range routes {
		if !seen[r.Function] {
			seen[r.Function] = true
			out = append(out, r.Function)
		}
	}
	return strings.Join(out, ", ")
}
