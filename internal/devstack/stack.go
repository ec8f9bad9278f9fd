package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"

	"github.com/ferryhq/ferry/internal/adapters/ssrfguard"
	"github.com/ferryhq/ferry/internal/adapters/webhook"
	"github.com/ferryhq/ferry/internal/console"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/handlers"
	"github.com/ferryhq/ferry/internal/httpapi"
	"github.com/ferryhq/ferry/internal/operator"
	"github.com/ferryhq/ferry/internal/outbox"
	"github.com/ferryhq/ferry/internal/telemetry"
)

// Stack is a running `ferry dev`: build it with Start, serve it with Run.
type Stack struct {
	cfg    Config
	log    *slog.Logger
	db     outbox.DynamoDB
	local  *ddblocal.DB // nil when --dynamodb-endpoint names another DynamoDB
	engine *outbox.Engine
	ports  handlers.EnginePorts
	obs    *telemetry.Observer
	rec    *console.Recorder // the console's metrics and attempts
	api    http.Handler
	ln     net.Listener
	loop   *drainLoop
	secret string
	email  string // where email goes, for the banner
	events string // where eventbridge actions go, for the banner
	watch  *dynamoWatch
}

// Start builds the stack: DynamoDB, the table (created if missing), the
// engine with the built-in adapters, the HTTP API, and its listener. Nothing
// runs until Run.
func Start(ctx context.Context, cfg Config) (_ *Stack, retErr error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Stack{cfg: cfg, log: cfg.Logger, watch: newDynamoWatch()}
	if s.log == nil {
		s.log = telemetry.NewLogger(os.Stderr, slog.LevelInfo)
	}
	s.secret = cfg.WebhookSecret
	if s.secret == "" {
		var err error
		if s.secret, err = NewWebhookSecret(); err != nil {
			return nil, err
		}
	}

	if cfg.DynamoDBEndpoint == "" {
		// TTL deletions run as DynamoDB's do (lazily, here at most a minute
		// late), so ended actions leave the table when their TTL passes.
		opts := []ddblocal.Option{ddblocal.WithClock(cfg.Clock), ddblocal.WithTTLSweepEvery(time.Minute)}
		if cfg.DataDir == "" {
			s.local = ddblocal.New(opts...)
		} else {
			local, err := ddblocal.Open(cfg.DataDir, opts...)
			if err != nil {
				return nil, fmt.Errorf("--data-dir: %w", err)
			}
			s.local = local
			s.log.Info("embedded DynamoDB loaded", slog.String("data_dir", cfg.DataDir), slog.String("recovery", local.Recovery().String()))
			defer func() {
				if retErr != nil {
					_ = local.Close() // release the directory
				}
			}()
		}
		s.db = s.local
	} else {
		s.db = RemoteDynamoDB(cfg.DynamoDBEndpoint)
	}

	reg, err := s.registry(ctx)
	if err != nil {
		return nil, err
	}
	metricsOut := cfg.MetricsOut
	if metricsOut == nil {
		metricsOut = io.Discard
	}
	s.obs = telemetry.NewObserver(telemetry.NewMetrics(metricsOut, cfg.Clock, map[string]string{"function": "ferry-dev"}), s.log)
	s.rec = console.NewRecorder(cfg.Clock, s.obs)
	s.engine, err = outbox.New(s.db, cfg.Clock, reg, cfg.outbox(), outbox.WithObserver(s.rec))
	if err != nil {
		return nil, fmt.Errorf("error building the engine: %w", err)
	}
	if err := EnsureTable(ctx, s.engine); err != nil {
		return nil, err
	}
	s.ports = handlers.EnginePorts{Engine: s.engine, Owner: fmt.Sprintf("ferry-dev-%d", os.Getpid())}
	// One pass may start attempts for this long; the engine keeps the write
	// margin on top of it.
	s.loop = newDrainLoop(s.engine, s.ports.Owner, cfg.Clock, cfg.Poll, cfg.WriteMargin+2*time.Second, s.log)

	tokens := make(map[string][]string, len(cfg.Tokens))
	for _, t := range cfg.Tokens {
		tokens[t.Token] = append(tokens[t.Token], t.Workspaces...)
	}
	auth, err := httpapi.NewBearerTokens(tokens)
	if err != nil {
		return nil, fmt.Errorf("--token: %w", err)
	}
	api, err := httpapi.New(httpapi.Options{
		Outbox: s.engine, Auth: auth, Clock: cfg.Clock, Logger: s.log,
		Health: s.ping, HealthTTL: cfg.HealthTTL,
		OnEnqueued: func(actions []outbox.Action) {
			ps := make([]int, 0, len(actions))
			for _, a := range actions {
				ps = append(ps, a.Partition)
				s.obs.Metrics.Count(telemetry.MetricActionsEnqueued, 1, telemetry.Dim{Name: "Kind", Value: a.Kind})
			}
			s.rec.Enqueued(len(actions))
			s.loop.Wake(ps...)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("error building the HTTP API: %w", err)
	}
	c, err := s.newConsole(reg, auth)
	if err != nil {
		return nil, err
	}
	s.api = console.WithAPI(api, c)
	var lc net.ListenConfig
	s.ln, err = lc.Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("error listening on --addr %s: %w", cfg.Addr, err)
	}
	return s, nil
}

// newConsole builds the console (/console): its own engine over a meter,
// so each page counts its reads, signing in with the API's tokens and the
// operator tokens, read-write (it is this machine's stack).
func (s *Stack) newConsole(reg *outbox.Registry, auth httpapi.Authenticator) (*console.Handler, error) {
	ce, err := outbox.New(operator.NewMeter(s.db), s.cfg.Clock, reg, s.cfg.outbox())
	if err != nil {
		return nil, fmt.Errorf("error building the console's engine: %w", err)
	}
	c, err := console.New(console.Options{
		Engine: ce, Login: console.TokenLogin(auth, s.cfg.OperatorTokens), Clock: s.cfg.Clock,
		Where: fmt.Sprintf("ferry dev, table %s", s.cfg.Table), AllowChanges: true, Refresh: s.cfg.ConsoleRefresh,
		Metrics: s.rec, Sweeps: s.loop.Sweeps, Attempts: s.rec.Attempts, Logger: s.log,
		OnAdmitted: func(a *outbox.Action) { s.loop.Wake(a.Partition) },
	})
	if err != nil {
		return nil, fmt.Errorf("error building the console: %w", err)
	}
	return c, nil
}

// registry registers the built-in adapters.
func (s *Stack) registry(ctx context.Context) (*outbox.Registry, error) {
	reg := outbox.NewRegistry()
	secrets, err := webhook.NewStaticSecrets(nil, s.secret)
	if err != nil {
		return nil, fmt.Errorf("--webhook-secret: %w", err)
	}
	wh, err := webhook.New(webhook.Options{
		Secrets: secrets, Clock: s.cfg.Clock,
		Policy: ssrfguard.Policy{AllowPrivate: s.cfg.AllowPrivateWebhooks},
	})
	if err != nil {
		return nil, fmt.Errorf("error building the webhook adapter: %w", err)
	}
	if err := reg.Register(wh); err != nil {
		return nil, err
	}
	if err := s.registerProviders(ctx, reg); err != nil {
		return nil, err
	}
	return reg, nil
}

// URL is the API's base URL.
func (s *Stack) URL() string { return "http://" + s.ln.Addr().String() }

// ConsoleURL is the console's address.
func (s *Stack) ConsoleURL() string { return s.URL() + console.Prefix + "/" }

// Engine is the stack's engine (tests read actions through it).
func (s *Stack) Engine() *outbox.Engine { return s.engine }

// WebhookSecret is the signing secret in use.
func (s *Stack) WebhookSecret() string { return s.secret }

// DrainPasses counts the drainer's completed passes.
func (s *Stack) DrainPasses() uint64 { return s.loop.Passes() }

// WaitDrainPasses blocks until the drainer has completed more than n passes
// (or ctx is done) and returns the count: tests step the stack pass by pass
// instead of sleeping.
func (s *Stack) WaitDrainPasses(ctx context.Context, n uint64) uint64 {
	return s.loop.WaitPasses(ctx, n)
}

// Run serves the API and runs the drainer, reaper and retention until ctx
// is done. Then it stops accepting requests, lets the drain pass in progress
// finish (attempts run to their end; claimed actions not started are
// released), and returns nil.
func (s *Stack) Run(ctx context.Context) error {
	srv := &http.Server{
		Handler:           s.api,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		IdleTimeout:       2 * time.Minute,
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(s.ln) }()

	var wg sync.WaitGroup
	wg.Go(func() { s.loop.Run(ctx) })
	if s.local != nil {
		wg.Go(func() { s.followChanges(ctx) })
	}
	wg.Go(func() { s.every(ctx, s.cfg.ReapEvery, s.reap) })
	wg.Go(func() { s.every(ctx, s.cfg.RetainEvery, s.retain) })
	wg.Go(func() { s.watchDynamoDB(ctx) })
	s.printBanner()

	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
		err = fmt.Errorf("error serving the API: %w", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if serr := srv.Shutdown(shutdownCtx); serr != nil && err == nil && !errors.Is(serr, http.ErrServerClosed) {
		err = fmt.Errorf("error shutting down the API: %w", serr)
	}
	wg.Wait()
	if ferr := s.obs.Flush(); ferr != nil {
		s.log.Warn("flushing metrics failed", slog.Any("error", ferr))
	}
	if s.cfg.DataDir != "" && s.local != nil {
		if cerr := s.local.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("error closing the data directory: %w", cerr)
		}
	}
	s.log.Info("ferry dev stopped")
	return err
}

// followChanges wakes the drainer for every change of the embedded table
// that makes an action claimable, as the DynamoDB Streams trigger does in
// AWS (design.md §3.8's stream filter: due_pk present and state ADMITTED).
func (s *Stack) followChanges(ctx context.Context) {
	ch, stop := s.local.Watch()
	defer stop()
	var from uint64
	if cs := s.local.Changes(s.cfg.Table, 0); len(cs) > 0 {
		from = cs[len(cs)-1].Seq + 1
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
		cs := s.local.Changes(s.cfg.Table, from)
		var wake []int
		for _, c := range cs {
			from = c.Seq + 1
			if p, ok := s.claimable(c); ok {
				wake = append(wake, p)
			}
		}
		if len(wake) > 0 {
			s.loop.Wake(wake...)
		}
	}
}

func (s *Stack) claimable(c ddblocal.Change) (int, bool) {
	if c.NewImage == nil {
		return 0, false
	}
	if _, ok := c.NewImage["due_pk"]; !ok {
		return 0, false
	}
	st, ok := c.NewImage["st"].(*types.AttributeValueMemberS)
	if !ok || st.Value != string(outbox.StateADMITTED) {
		return 0, false
	}
	pk, ok := c.Keys["pk"].(*types.AttributeValueMemberS)
	if !ok {
		return 0, false
	}
	return s.engine.PartitionOf(pk.Value)
}

func (s *Stack) every(ctx context.Context, d time.Duration, f func(context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f(ctx)
		}
	}
}

func (s *Stack) reap(ctx context.Context) {
	h := &handlers.ReaperHandler{Engine: s.ports, Obs: s.obs, Log: s.log}
	resp, err := h.Invoke(ctx, events.EventBridgeEvent{ID: "ferry-dev-reaper"})
	if err != nil {
		s.log.Warn("reaper pass failed", slog.Any("error", err))
		return
	}
	s.rec.Backlog(resp.BacklogDepth)
}

func (s *Stack) retain(ctx context.Context) {
	h := &handlers.RetentionHandler{Engine: s.ports, Obs: s.obs, Log: s.log}
	if _, err := h.Invoke(ctx, events.EventBridgeEvent{ID: "ferry-dev-retention"}); err != nil {
		s.log.Warn("retention pass failed", slog.Any("error", err))
	}
}

// RemoteDynamoDB returns a client for the DynamoDB at endpoint (ferry
// dynamodb, DynamoDB Local). Credentials come from the environment when set;
// otherwise static local ones, so no credential provider ever reaches out
// for instance metadata.
func RemoteDynamoDB(endpoint string) *dynamodb.Client {
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if id == "" || secret == "" {
		id, secret = "ferry", "ferry"
	}
	return dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       region,
		Credentials:  credentials.NewStaticCredentialsProvider(id, secret, os.Getenv("AWS_SESSION_TOKEN")),
		// The stack says what failed (operator.DescribeDynamoDBError);
		// the SDK's own lines are noise beside it.
		Logger: logging.Nop{},
		// Every attempt's error is kept: with a retry quota, after an
		// outage the calls answer "retry quota exceeded" instead.
		Retryer: retry.NewStandard(func(so *retry.StandardOptions) { so.RateLimiter = ratelimit.None }),
	})
}
