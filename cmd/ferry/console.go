package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/spf13/cobra"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/console"
	"github.com/ferryhq/ferry/internal/operator"
)

// consoleFlags are `ferry console`'s own flags.
type consoleFlags struct {
	addr         string
	stack        string
	allowChanges bool
	refresh      time.Duration
	// metrics builds the chart's source for --stack; tests replace it
	// with a loopback CloudWatch.
	metrics func(ctx context.Context, t operator.Target, stack string) (console.Metrics, error)
}

func newConsoleCommand(o *operatorFlags) *cobra.Command {
	cf := &consoleFlags{}
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the web console on loopback against the table (read-only unless --allow-changes)",
		Long: `Serves the web console (docs/console.md) on a loopback address against the
table, with this machine's AWS credentials (or --dynamodb-endpoint), and
prints the link that signs in: only whoever has it can use the console.
The console only reads unless --allow-changes (then admit, cancel and
erase a subject, each confirmed, refused as ferry actions and ferry
subjects erase refuse them). With --stack NAME the
overview's chart reads the stack's CloudWatch metrics (GetMetricData).
Runs until interrupted.`,
		Args: args(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error { return runConsole(cmd, o, cf) },
	}
	f := cmd.Flags()
	f.StringVar(&cf.addr, "addr", "127.0.0.1:8090", "loopback address to serve on")
	f.StringVar(&cf.stack, "stack", "", "the deployed stack whose CloudWatch metrics the chart shows (default: no chart)")
	f.BoolVar(&cf.allowChanges, "allow-changes", false, "let the console admit and cancel actions and erase subjects (each confirmed)")
	f.DurationVar(&cf.refresh, "refresh", 10*time.Second, "how often pages update themselves, each update a read of the table (0: never)")
	return cmd
}

// loopbackAddr refuses an address that is not on this machine's loopback:
// the console acts with the operator's credentials.
func loopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return &operator.Error{Code: operator.ExitUsage, Err: fmt.Errorf("--addr %q: %w", addr, err)}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return &operator.Error{Code: operator.ExitUsage, Err: fmt.Errorf("--addr %q: the console serves on loopback only (127.0.0.1, ::1, localhost): it acts with your credentials", addr)}
	}
	return nil
}

func runConsole(cmd *cobra.Command, o *operatorFlags, cf *consoleFlags) error {
	if err := loopbackAddr(cf.addr); err != nil {
		return err
	}
	if cf.refresh < 0 {
		return &operator.Error{Code: operator.ExitUsage, Err: fmt.Errorf("--refresh %s: want 0 or more", cf.refresh)}
	}
	s, err := o.session(cmd)
	if err != nil {
		return err
	}
	opts := console.Options{Engine: s.Engine, Clock: clock.System{}, AllowChanges: cf.allowChanges, Refresh: cf.refresh,
		Where: "table " + o.target.Table + whereWords(o.target)}
	if cf.stack != "" {
		metrics := cf.metrics
		if metrics == nil {
			metrics = cloudWatchMetrics
		}
		if opts.Metrics, err = metrics(cmd.Context(), o.target, cf.stack); err != nil {
			return err
		}
	}
	token, err := console.NewLoginToken()
	if err != nil {
		return err
	}
	opts.Login = func(t string) *console.Viewer {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) != 1 {
			return nil
		}
		return &console.Viewer{ID: "operator", Operator: true}
	}
	h, err := console.New(opts)
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(cmd.Context(), "tcp", cf.addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", cf.addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	mode := "read-only (--allow-changes to admit, cancel and erase)"
	if cf.allowChanges {
		mode = "admit, cancel and erase allowed, each confirmed"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Ferry console for table %s%s: %s\n\n  open  http://%s%s/login?token=%s\n\nThe link signs in; keep it to yourself. Ctrl-C stops.\n",
		o.target.Table, whereWords(o.target), mode, ln.Addr(), console.Prefix, token)
	return serveUntilDone(cmd.Context(), srv, ln)
}

func whereWords(t operator.Target) string {
	switch {
	case t.Endpoint != "":
		return " at " + t.Endpoint
	case t.Region != "":
		return " in " + t.Region
	}
	return ""
}

// cloudWatchMetrics reads the stack's metrics with the same AWS
// configuration as the table (region, profile; AWS_ENDPOINT_URL_CLOUDWATCH
// names another endpoint).
func cloudWatchMetrics(ctx context.Context, t operator.Target, stack string) (console.Metrics, error) {
	cfg, err := config.LoadDefaultConfig(ctx, operator.LoadOptions(t)...)
	if err != nil {
		return nil, &operator.Error{Code: operator.ExitUsage, Err: fmt.Errorf("error loading the AWS configuration for CloudWatch: %w", err)}
	}
	m, err := console.NewCloudWatch(cloudwatch.NewFromConfig(cfg), stack)
	if err != nil {
		return nil, &operator.Error{Code: operator.ExitUsage, Err: err}
	}
	return m, nil
}

// serveUntilDone serves until ctx ends, then shuts the server down.
func serveUntilDone(ctx context.Context, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
