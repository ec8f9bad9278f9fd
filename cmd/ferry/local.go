package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferryhq/ferry/internal/devstack"
	"github.com/ferryhq/ferry/internal/lambdastack"
	"github.com/ferryhq/ferry/internal/operator"
)

func newLocalCommand() *cobra.Command {
	var (
		cfg       lambdastack.Config
		tokens    []string
		schedules []string
		infraDir  string
		stack     string
		noSynth   bool
	)
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Run the deployed functions on this machine, wired as the synthesized stack wires them",
		Long: `Runs what cdk deploy deploys, on loopback and without Docker or an AWS
account: each function's real bootstrap under the Lambda Runtime Interface
Emulator with the environment, memory, timeout and handler of the synthesized
CloudFormation template (infra/cdk.out, synthesized first when missing or
older than infra/); an HTTP API front sending payload 2.0 events for the
template's routes; the template's schedules; a DynamoDB Streams poller doing
what Lambda's event-source mapping does; and each function's role enforced on
its DynamoDB requests. ` + "`make local`" + ` builds the bootstraps and runs it.
SIGINT/SIGTERM stop it and print a summary.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			parsed, err := devstack.ParseTokens(tokens)
			if err != nil {
				return &operator.Error{Code: operator.ExitUsage, Err: err}
			}
			for _, tok := range parsed {
				cfg.Tokens = append(cfg.Tokens, lambdastack.Token{Token: tok.Token, Workspaces: tok.Workspaces})
			}
			cfg.Schedules = map[string]time.Duration{}
			for _, s := range schedules {
				name, every, ok := strings.Cut(s, "=")
				d, err := time.ParseDuration(every)
				if every == "off" {
					d, err = 0, nil
				}
				if !ok || err != nil || d < 0 {
					return fmt.Errorf("--schedule %q: want FUNCTION=DURATION (e.g. reaper=5s) or FUNCTION=off", s)
				}
				cfg.Schedules[name] = d
			}
			if cfg.Speedup <= 0 {
				return fmt.Errorf("--speedup must be positive")
			}
			if cfg.WebhookSecret == "" {
				secret, err := devstack.NewWebhookSecret()
				if err != nil {
					return err
				}
				cfg.WebhookSecret = secret
			} else if !strings.HasPrefix(cfg.WebhookSecret, "whsec_") {
				return fmt.Errorf("--webhook-secret must start with whsec_")
			}
			if cfg.RIE == "" {
				cfg.RIE = os.Getenv("LAMBDA_RIE")
			}
			if cfg.RIE == "" {
				return fmt.Errorf("--rie is required (make local installs the pinned emulator into .cache/bin)")
			}
			if cfg.Template == "" {
				tmpl, err := synthesized(cmd, infraDir, stack, noSynth)
				if err != nil {
					return err
				}
				cfg.Template = tmpl
			}
			cfg.Out = cmd.OutOrStdout()
			cfg.LogOut = cmd.OutOrStdout()
			s, err := lambdastack.Start(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			s.Banner(cmd.OutOrStdout())
			return s.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "addr", lambdastack.DefaultAddr, "HTTP API listen address")
	f.StringVar(&cfg.DynamoDBAddr, "dynamodb-addr", "127.0.0.1:0", "embedded DynamoDB listen address (port 0: any free port, printed)")
	f.StringArrayVar(&tokens, "token", nil, "a bearer token and the workspaces it may use, TOKEN=WS1,WS2; repeatable (default: token dev for workspace default)")
	f.StringArrayVar(&cfg.OperatorTokens, "operator-token", nil, "a token that signs in to the console (/console) seeing every workspace; repeatable (the API does not take it)")
	f.StringVar(&cfg.Template, "template", "", "the CloudFormation template to run (default: the stack's template in infra/cdk.out)")
	f.StringVar(&infraDir, "infra", "infra", "the CDK app, synthesized into its cdk.out when that is missing or older than the app")
	f.StringVar(&stack, "stack", "", "the stack to run when the cloud assembly has several")
	f.BoolVar(&noSynth, "no-synth", false, "run infra/cdk.out as it is, even when older than infra/")
	f.StringVar(&cfg.BinDir, "bin-dir", ".cache/local/bin", "where each function's bootstrap for this machine is (<dir>/<function>/bootstrap)")
	f.StringVar(&cfg.RIE, "rie", "", "the aws-lambda-rie binary (default $LAMBDA_RIE)")
	f.StringVar(&cfg.MailDir, "mail-dir", devstack.DefaultMailDir, "local mail sink of the SES v2 stand-in: each email an .eml file")
	f.StringVar(&cfg.WebhookSecret, "webhook-secret", "", "webhook signing secret the Secrets Manager stand-in serves, whsec_… (default generated and printed)")
	f.BoolVar(&cfg.AllowPrivateWebhooks, "allow-private-webhooks", false, "let the drainer's webhooks reach loopback/private addresses (for local receivers)")
	f.Float64Var(&cfg.Speedup, "speedup", 1, "divide every schedule's rate by this")
	f.StringArrayVar(&schedules, "schedule", nil, "FUNCTION=DURATION (or FUNCTION=off): run that function's schedule at this period instead; repeatable")
	f.IntVar(&cfg.MaxInstances, "max-instances", lambdastack.DefaultMaxInstances, "concurrent instances (emulator processes) per function at most")
	f.StringVar(&cfg.LogDir, "log-dir", ".ferry/local/logs", "keep each function's log in DIR/<function>.log (empty: none)")
	f.BoolVar(&cfg.ShowEMF, "show-emf", false, "print the functions' EMF metric lines too (they are always added up for the summary)")
	return cmd
}

// synthesized returns the stack's template in infraDir's cloud assembly,
// synthesizing it first when it is missing or older than the app.
func synthesized(cmd *cobra.Command, infraDir, stack string, noSynth bool) (string, error) {
	assembly := filepath.Join(infraDir, "cdk.out")
	stale, err := lambdastack.AssemblyStale(infraDir, assembly)
	if err != nil {
		return "", err
	}
	if stale && !noSynth {
		fmt.Fprintf(cmd.ErrOrStderr(), "ferry local: synthesizing %s into %s (missing or older than the app)\n", infraDir, assembly)
		if err := lambdastack.Synth(cmd.Context(), infraDir, assembly, nil, cmd.ErrOrStderr()); err != nil {
			return "", err
		}
	}
	return lambdastack.StackTemplate(assembly, stack)
}
