package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
	"github.com/ferryhq/ferry/internal/devstack"
	"github.com/ferryhq/ferry/internal/operator"
	"github.com/ferryhq/ferry/internal/outbox"
	"github.com/ferryhq/ferry/internal/telemetry"
	"github.com/ferryhq/ferry/internal/version"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "ferry",
		Short:         "Ferry: a durable, fenced outbox for AWS Lambda and DynamoDB",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.String(),
	}
	root.SetVersionTemplate(versionLine() + "\n")
	root.AddCommand(newDevCommand(), newDynamoDBCommand(), newTableCommand(), newLocalCommand(), newVersionCommand())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError(err) })
	ops := &operatorFlags{}
	for _, c := range newOperatorCommands(ops) {
		ops.register(c)
		root.AddCommand(c)
	}
	return root
}

// versionLine is what `ferry version` and `ferry --version` print: the
// version first (internal/version), then the Go release and platform.
func versionLine() string {
	return fmt.Sprintf("ferry %s (%s %s/%s)", version.String(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Ferry's version (also --version)",
		Long: `Prints the version of this build: the release tag it was built from (make
stamps git describe, e.g. v0.1.0 or v0.1.0-3-gcd6075f-dirty), else the module
version Go recorded (go install ...@v0.1.0), else "devel"; then the Go release
and platform.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return err
		},
	}
}

func newLogger(level string) (*slog.Logger, error) {
	lvl, err := telemetry.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return telemetry.NewLogger(os.Stderr, lvl), nil
}

func newDevCommand() *cobra.Command {
	var (
		cfg      devstack.Config
		tokens   []string
		logLevel string
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the whole system on one machine: DynamoDB, API, drainer, reaper, retention",
		Long: `Runs the whole system in one process: the embedded DynamoDB (in memory,
unless --dynamodb-endpoint names another), the HTTP API, the drainer (woken at
once by an enqueue, and polling), the reaper and retention on timers, and the
built-in adapters. Email goes to the local mail sink (--mail-dir) unless
AWS_ENDPOINT_URL_SESV2 names an SES endpoint. SIGINT/SIGTERM stop claiming,
finish or release what runs, and exit 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cfg.Tokens, err = devstack.ParseTokens(tokens); err != nil {
				return &operator.Error{Code: operator.ExitUsage, Err: err}
			}
			// The flags as typed: a zero is refused here, before Start
			// would take it for the default.
			if err := cfg.Validate(); err != nil {
				return &operator.Error{Code: operator.ExitUsage, Err: err}
			}
			if err := checkEndpoint("--dynamodb-endpoint", cfg.DynamoDBEndpoint); err != nil {
				return err
			}
			log, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			cfg.Logger = log
			cfg.Stdout = cmd.OutOrStdout()
			cfg.Clock = clock.System{}
			cfg.SESEndpoint = os.Getenv("AWS_ENDPOINT_URL_SESV2")
			stack, err := devstack.Start(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return stack.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "addr", devstack.DefaultAddr, "API listen address")
	f.StringArrayVar(&tokens, "token", nil, "a bearer token and the workspaces it may use, TOKEN=WS1,WS2; repeatable (default: token dev for workspace default)")
	f.StringArrayVar(&cfg.OperatorTokens, "operator-token", nil, "a token that signs in to the console (/console) seeing every workspace; repeatable (the API does not take it)")
	f.IntVar(&cfg.Partitions, "partitions", devstack.DefaultPartitions, "outbox partitions")
	f.DurationVar(&cfg.Lease, "lease", devstack.DefaultLease, "claim lease")
	f.DurationVar(&cfg.WriteMargin, "write-margin", devstack.DefaultWriteMargin, "lease left that the write fence requires")
	f.DurationVar(&cfg.RetryBase, "retry-base", devstack.DefaultRetryBase, "first retry backoff (exponential, jittered, capped)")
	f.DurationVar(&cfg.ClockSkew, "clock-skew", devstack.DefaultClockSkew, "bound on clock disagreement the engine allows for (0: one process, one clock)")
	f.IntVar(&cfg.MaxDeferrals, "max-deferrals", devstack.DefaultMaxDeferrals, "deferrals in a row (429/503 with Retry-After) before an action fails DEFERRALS_EXHAUSTED")
	f.DurationVar(&cfg.MaxDeferTime, "max-defer-time", devstack.DefaultMaxDeferTime, "longest run of deferrals before an action fails DEFERRALS_EXHAUSTED")
	f.DurationVar(&cfg.Poll, "poll", devstack.DefaultPoll, "drainer poll interval when no wake-up comes")
	f.StringVar(&cfg.DynamoDBEndpoint, "dynamodb-endpoint", "", "use this DynamoDB instead of the embedded one (default embedded)")
	f.StringVar(&cfg.DataDir, "data-dir", "", "keep the embedded DynamoDB's data in this directory, so a restart keeps everything (default: in memory)")
	f.StringVar(&cfg.Table, "table", devstack.DefaultTable, "the table to use; created with its indexes if missing")
	f.StringVar(&cfg.MailDir, "mail-dir", devstack.DefaultMailDir, "local mail sink: each email an .eml file")
	f.BoolVar(&cfg.AllowPrivateWebhooks, "allow-private-webhooks", false, "let webhooks reach loopback/private addresses (for local receivers)")
	f.BoolVar(&cfg.UseSES, "ses", false, "send email through Amazon SES v2 with the AWS credentials of the environment, instead of the local mail sink")
	f.StringVar(&cfg.WebhookSecret, "webhook-secret", "", "signing secret for webhooks, whsec_… (default generated and printed)")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	return cmd
}

func newDynamoDBCommand() *cobra.Command {
	var (
		addr, logLevel, dataDir       string
		unprocessedRate, throttleRate float64
		chaosSeed                     uint64
		statusDelay                   time.Duration
		salvage                       bool
	)
	cmd := &cobra.Command{
		Use:   "dynamodb",
		Short: "Serve the embedded DynamoDB as a DynamoDB-compatible HTTP endpoint",
		Long: `Serves the embedded DynamoDB over HTTP with DynamoDB's JSON protocol, the
DynamoDB Streams API at the same address, so the AWS SDKs, the AWS CLI and
SAM can use it:

  AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000
  AWS_ENDPOINT_URL_DYNAMODB_STREAMS=http://127.0.0.1:8000

In memory unless --data-dir names a directory: then tables, items, indexes,
TTL settings, tags and stream records are kept there, every write fsynced
before it is answered (see docs/dynamodb.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			if unprocessedRate < 0 || unprocessedRate >= 1 || throttleRate < 0 || throttleRate >= 1 {
				return errors.New("--unprocessed-rate and --throttle-rate must be at least 0 and below 1")
			}
			// Items whose TTL passed are deleted at most a minute late.
			opts := []ddblocal.Option{ddblocal.WithTTLSweepEvery(time.Minute), ddblocal.WithUnprocessed(unprocessedRate, chaosSeed),
				ddblocal.WithTableStatusDelay(statusDelay)}
			if throttleRate > 0 {
				opts = append(opts, ddblocal.WithSeed(chaosSeed, ddblocal.FaultRates{Throttle: throttleRate, Ops: ddblocal.ItemOperations()}))
			}
			var db *ddblocal.DB
			if dataDir == "" {
				if salvage {
					return errors.New("--salvage needs --data-dir: it starts from a damaged data directory")
				}
				db = ddblocal.New(opts...)
			} else {
				if salvage {
					opts = append(opts, ddblocal.WithSalvage())
				}
				if db, err = ddblocal.Open(dataDir, opts...); err != nil {
					return fmt.Errorf("--data-dir: %w", err)
				}
				defer func() {
					if cerr := db.Close(); cerr != nil {
						log.Error("closing the data directory failed", "data_dir", dataDir, "error", cerr)
					}
				}()
				log.Info("data directory loaded", "data_dir", dataDir, "recovery", db.Recovery().String())
				if tt := db.Recovery().TornTail; tt != nil {
					log.Warn("the log ended with a write cut short by a crash; it was never acknowledged and was dropped (its bytes are kept)",
						"file", tt.File, "offset", tt.Offset, "bytes", tt.Bytes, "found", tt.Reason, "kept_in", tt.Kept)
				}
				if sv := db.Recovery().Salvage; sv != nil {
					for _, d := range sv.Damage {
						log.Warn("--salvage: started past damage", "file", d.File, "offset", d.Offset, "damage", d.Reason)
					}
					log.Warn("--salvage: kept every log record before the damage; what followed it is set aside",
						"kept_through_record", sv.Replayed, "acknowledged_through_record", sv.Acknowledged,
						"set_aside_in", sv.Dir, "files", strings.Join(sv.Files, ", "))
					if sv.Acknowledged > sv.Replayed {
						log.Error("--salvage: acknowledged writes were lost", "records", fmt.Sprintf("%d to %d", sv.Replayed+1, sv.Acknowledged))
					}
				}
			}
			var lc net.ListenConfig
			ln, err := lc.Listen(cmd.Context(), "tcp", addr)
			if err != nil {
				return fmt.Errorf("error listening on --addr %s: %w", addr, err)
			}
			where := "in memory"
			if dataDir != "" {
				where = "data in " + dataDir
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Embedded DynamoDB on http://%s (%s)\n  export AWS_ENDPOINT_URL_DYNAMODB=http://%s\n", ln.Addr(), where, ln.Addr())
			return ddbhttp.Serve(cmd.Context(), ln, db, log)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8000", "listen address")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "keep the data in this directory (default: in memory)")
	cmd.Flags().Float64Var(&unprocessedRate, "unprocessed-rate", 0, "leave this share of BatchGetItem keys and BatchWriteItem writes unprocessed (0 to <1), to prove a client's retry loop")
	cmd.Flags().Float64Var(&throttleRate, "throttle-rate", 0, "refuse this share of item calls with ProvisionedThroughputExceededException (0 to <1)")
	cmd.Flags().Uint64Var(&chaosSeed, "chaos-seed", 1, "seed of --unprocessed-rate and --throttle-rate (same seed and calls, same answers)")
	cmd.Flags().BoolVar(&salvage, "salvage", false,
		"start from a --data-dir whose start-up was refused as damaged: keep every write before the damage, move the rest of the log aside (see docs/dynamodb.md)")
	cmd.Flags().DurationVar(&statusDelay, "table-status-delay", ddblocal.DefaultServerTableStatusDelay,
		"how long a table stays CREATING, UPDATING or DELETING (at most: a DescribeTable, as the SDKs' waiters send, ends it); 0: ACTIVE at once")
	return cmd
}

func newTableCommand() *cobra.Command {
	table := &cobra.Command{Use: "table", Short: "Manage the Ferry table"}
	var endpoint, name string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create the Ferry table, its indexes and its TTL setting (nothing if it exists)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			from := "--dynamodb-endpoint"
			if endpoint == "" {
				from, endpoint = "AWS_ENDPOINT_URL_DYNAMODB", os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")
			}
			if endpoint == "" {
				return &operator.Error{Code: operator.ExitUsage, Err: errors.New("--dynamodb-endpoint is required (or AWS_ENDPOINT_URL_DYNAMODB)")}
			}
			if err := checkEndpoint(from, endpoint); err != nil {
				return err
			}
			e, err := outbox.New(devstack.RemoteDynamoDB(endpoint), clock.System{}, outbox.NewRegistry(), outbox.Config{Table: name})
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
			defer cancel()
			if err := devstack.EnsureTable(ctx, e); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "table %q is ready at %s\n", name, endpoint)
			return nil
		},
	}
	create.Flags().StringVar(&endpoint, "dynamodb-endpoint", "", "the DynamoDB endpoint URL (default $AWS_ENDPOINT_URL_DYNAMODB)")
	create.Flags().StringVar(&name, "table", devstack.DefaultTable, "the table's name")
	table.AddCommand(create)
	return table
}
