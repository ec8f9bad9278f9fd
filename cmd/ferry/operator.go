package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/operator"
	"github.com/ferryhq/ferry/internal/outbox"
)

// operatorFlags are the flags every operator command shares: which table,
// how to reach it, and how to answer.
type operatorFlags struct {
	target operator.Target
	output string
	yes    bool
	// connect builds the session; tests replace it to use an embedded
	// DynamoDB and a manual clock.
	connect func(ctx context.Context, t operator.Target) (*operator.Session, error)
	// envErr is a default from the environment (FERRY_PARTITIONS,
	// FERRY_RETENTION) that does not read; refused when a command runs.
	envErr error
}

func envOr(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}

func (o *operatorFlags) register(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	partitions, err := strconv.Atoi(envOr("FERRY_PARTITIONS", strconv.Itoa(outbox.DefaultPartitions)))
	if err != nil {
		o.envErr = fmt.Errorf("FERRY_PARTITIONS %q: want a whole number (or pass --partitions)", os.Getenv("FERRY_PARTITIONS"))
	}
	retention, err := time.ParseDuration(envOr("FERRY_RETENTION", outbox.DefaultRetention.String()))
	if err != nil {
		o.envErr = fmt.Errorf("FERRY_RETENTION %q: want a duration such as 720h (or pass --retention)", os.Getenv("FERRY_RETENTION"))
	}
	f.StringVar(&o.target.Table, "table", envOr("FERRY_TABLE", outbox.DefaultTable), "the Ferry table (default $FERRY_TABLE or ferry)")
	f.StringVar(&o.target.Region, "region", "", "AWS region (default: the AWS configuration's)")
	f.StringVar(&o.target.Profile, "profile", "", "AWS shared configuration profile (default: the AWS configuration's)")
	f.StringVar(&o.target.Endpoint, "dynamodb-endpoint", os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), "a DynamoDB endpoint instead of AWS's, e.g. ferry dynamodb or DynamoDB Local (default $AWS_ENDPOINT_URL_DYNAMODB)")
	f.IntVar(&o.target.Partitions, "partitions", partitions, "the deployment's partitions, FERRY_PARTITIONS (ferry dev: 4)")
	f.DurationVar(&o.target.Retention, "retention", retention, "the deployment's retention, FERRY_RETENTION")
	f.StringVarP(&o.output, "output", "o", "table", "output: table or json")
	f.BoolVar(&o.yes, "yes", false, "answer yes to confirmations (cancel, admit, erase)")
}

// session connects for one command and applies the output flags.
func (o *operatorFlags) session(cmd *cobra.Command) (*operator.Session, error) {
	if o.output != "table" && o.output != "json" {
		return nil, &operator.Error{Code: operator.ExitUsage, Err: fmt.Errorf("--output %q: want table or json", o.output)}
	}
	flags := cmd.Flags()
	if o.envErr != nil && !(flags.Changed("partitions") && flags.Changed("retention")) {
		return nil, &operator.Error{Code: operator.ExitUsage, Err: o.envErr}
	}
	name := "--dynamodb-endpoint"
	if !flags.Changed("dynamodb-endpoint") {
		name = "AWS_ENDPOINT_URL_DYNAMODB"
	}
	if err := checkEndpoint(name, o.target.Endpoint); err != nil {
		return nil, err
	}
	connect := o.connect
	if connect == nil {
		connect = func(ctx context.Context, t operator.Target) (*operator.Session, error) {
			db, err := operator.Client(ctx, t)
			if err != nil {
				return nil, err
			}
			s, err := operator.NewSession(ctx, db, clock.System{}, t)
			if err != nil {
				return nil, err
			}
			s.Interactive = operator.IsTerminal(os.Stdin) && operator.IsTerminal(os.Stderr)
			return s, nil
		}
	}
	s, err := connect(cmd.Context(), o.target)
	if err != nil {
		return nil, err
	}
	s.Out, s.Err = cmd.OutOrStdout(), cmd.ErrOrStderr()
	s.In = cmd.InOrStdin()
	s.JSON, s.Yes = o.output == "json", o.yes
	return s, nil
}

// args checks a command's argument count as a usage error.
func args(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if len(a) != n {
			return &operator.Error{Code: operator.ExitUsage, Err: fmt.Errorf("%s takes %s", cmd.CommandPath(), names)}
		}
		return nil
	}
}

func newOperatorCommands(o *operatorFlags) []*cobra.Command {
	return []*cobra.Command{newStatusCommand(o), newActionsCommand(o), newSubjectsCommand(o), newPartitionsCommand(o), newConsoleCommand(o)}
}

func newPartitionsCommand(o *operatorFlags) *cobra.Command {
	var set string
	cmd := &cobra.Command{
		Use:   "partitions",
		Short: "Show the table's partition map; --set N changes the partition count live",
		Long: `Prints the table's partition map (ADR 0011): the count new lanes and keyless
actions use, and how many partitions may still hold live actions (live) or
any action rows (kept). With --set N (after confirmation, or --yes) N
becomes the count: every function of the table takes it within 30 seconds,
lanes with live actions stay in their partition until they drain, and the
reaper retires emptied partitions above the count. It stands until a
deploy of another partitions setting.`,
		Args: args(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			n := 0
			if cmd.Flags().Changed("set") {
				var err error
				if n, err = parsePartitionCount(set); err != nil {
					return &operator.Error{Code: operator.ExitUsage, Err: err}
				}
			}
			s, err := o.session(cmd)
			if err != nil {
				return err
			}
			return s.Partitions(cmd.Context(), n)
		},
	}
	cmd.Flags().StringVar(&set, "set", "", fmt.Sprintf("make this the partition count (1 to %d, decimal)", outbox.MaxPartitionCount))
	return cmd
}

// parsePartitionCount reads --set strictly: decimal digits only (no sign,
// no 0x, 0o or 0b prefix, no underscores), from 1 to the engine's bound.
func parsePartitionCount(v string) (int, error) {
	if v == "" || strings.Trim(v, "0123456789") != "" {
		return 0, fmt.Errorf("--set %q: want a partition count, a decimal number from 1 to %d", v, outbox.MaxPartitionCount)
	}
	n, err := strconv.Atoi(v) // digits only: an error is an overflow
	switch {
	case err == nil && n == 0:
		return 0, fmt.Errorf("--set %s: a table needs at least one partition; want 1 to %d (without --set, ferry partitions only shows the map)", v, outbox.MaxPartitionCount)
	case err != nil || n > outbox.MaxPartitionCount:
		return 0, fmt.Errorf("--set %s: at most %d partitions (every sweep of the drainer and every reaper run visits each one)", v, outbox.MaxPartitionCount)
	}
	return n, nil
}

func newStatusCommand(o *operatorFlags) *cobra.Command {
	var p operator.StatusParams
	var since string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Per partition and in total: backlog, blocked lanes, claimed, oldest due age, stuck lanes, in-flight entries, ended today by outcome",
		Long: `Reads, without writing, what the reaper's gauges measure for every partition
and in total — due actions (the drainer could claim them now) and blocked ones
(due, but waiting behind an earlier live member of their lane), claimed,
lease-expired and waiting ones, stuck lanes, the oldest due and blocked ages,
the claim fences' in-flight entries — and the
actions ended since --since (default: today, UTC) by outcome. Its reads are
bounded per partition (--max-due-pages, --max-ended-rows); it prints the
DynamoDB read units it used.`,
		Args: args(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return &operator.Error{Code: operator.ExitUsage, Err: err}
				}
				p.Since = t
			}
			s, err := o.session(cmd)
			if err != nil {
				return err
			}
			return s.Status(cmd.Context(), p)
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "count endings since this time: RFC 3339, or a duration ago such as 24h (default: today, UTC)")
	cmd.Flags().IntVar(&p.MaxDuePages, "max-due-pages", outbox.DefaultStatusDuePages, "due-index pages read per partition (1 MB each)")
	cmd.Flags().IntVar(&p.MaxEndedRows, "max-ended-rows", outbox.DefaultStatusEndedRows, "ended rows read per partition")
	return cmd
}

// parseSince reads --since: an RFC 3339 time, or a duration before now.
func parseSince(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("--since %q: want an RFC 3339 time or a duration such as 24h", v)
}

func newActionsCommand(o *operatorFlags) *cobra.Command {
	actions := &cobra.Command{Use: "actions", Short: "List, read, cancel or admit actions"}
	var lp operator.ListParams
	var state string
	list := &cobra.Command{
		Use:   "list",
		Short: "List actions (every workspace unless --workspace), filtered by state, lane, subject or kind; paged",
		Long: `Lists actions one page at a time (--limit, then --cursor from the previous
page). With --subject it reads the subject index, with --lane the lane's
partition (lane order), with --workspace alone the workspace index (oldest
first): each costs what it lists. Without --workspace it scans the table (key
order), which costs what the table holds. It prints the rows it examined and
the read units.`,
		Args: args(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			lp.State = outbox.State(strings.ToUpper(state))
			s, err := o.session(cmd)
			if err != nil {
				return err
			}
			return s.List(cmd.Context(), lp)
		},
	}
	f := list.Flags()
	f.StringVar(&lp.WorkspaceID, "workspace", "", "only this workspace")
	f.StringVar(&state, "state", "", "only this state: PROPOSED, ADMITTED, EXECUTING, DONE, UNCERTAIN, FAILED, CANCELLED")
	f.StringVar(&lp.LaneKey, "lane", "", "only this lane (with --workspace)")
	f.StringVar(&lp.SubjectID, "subject", "", "only this subject (with --workspace)")
	f.StringVar(&lp.Kind, "kind", "", "only this kind")
	f.IntVar(&lp.Limit, "limit", 50, "actions per page (at most 1000)")
	f.StringVar(&lp.Cursor, "cursor", "", "the page after the one that printed this cursor")
	f.IntVar(&lp.MaxRows, "max-rows", outbox.DefaultFindRows, "rows examined at most for one page")

	one := func(use, short string, run func(s *operator.Session, cmd *cobra.Command, id string) error) *cobra.Command {
		return &cobra.Command{
			Use: use + " ID", Short: short, Args: args(1, "one action id"),
			RunE: func(cmd *cobra.Command, a []string) error {
				s, err := o.session(cmd)
				if err != nil {
					return err
				}
				return run(s, cmd, a[0])
			},
		}
	}
	get := one("get", "The action, its lane neighbours, its latest attempt, and what to enqueue again once ended",
		func(s *operator.Session, cmd *cobra.Command, id string) error { return s.Get(cmd.Context(), id) })
	cancel := one("cancel", "Cancel a PROPOSED or ADMITTED action that has not started (asks first unless --yes)",
		func(s *operator.Session, cmd *cobra.Command, id string) error { return s.Cancel(cmd.Context(), id) })
	admit := one("admit", "Admit a PROPOSED action: it becomes due now (asks first unless --yes)",
		func(s *operator.Session, cmd *cobra.Command, id string) error { return s.Admit(cmd.Context(), id) })
	retry := one("retry", "There is no retry: an ended action never changes. Says what the application must enqueue again",
		func(s *operator.Session, cmd *cobra.Command, id string) error { return s.Retry(cmd.Context(), id) })
	actions.AddCommand(list, get, cancel, admit, retry)
	return actions
}

func newSubjectsCommand(o *operatorFlags) *cobra.Command {
	subjects := &cobra.Command{Use: "subjects", Short: "Erase a subject's actions"}
	var p operator.EraseParams
	erase := &cobra.Command{
		Use:   "erase SUBJECT",
		Short: "Erase a subject's actions, idempotency records and delivery evidence (every workspace unless --workspace)",
		Long: `Counts the subject's actions by state (and stops there with --dry-run), asks
(unless --yes), then erases them with the engine's erasure, showing progress
on a terminal. Without --workspace it finds the workspaces holding the subject
by scanning the subject index (keys only).`,
		Args: args(1, "one subject id"),
		RunE: func(cmd *cobra.Command, a []string) error {
			p.SubjectID = a[0]
			p.AllWorkspaces = !cmd.Flags().Changed("workspace")
			s, err := o.session(cmd)
			if err != nil {
				return err
			}
			return s.Erase(cmd.Context(), p)
		},
	}
	erase.Flags().StringVar(&p.WorkspaceID, "workspace", "", "erase in this workspace only (default: every workspace)")
	erase.Flags().BoolVar(&p.DryRun, "dry-run", false, "count what would be erased; erase nothing")
	subjects.AddCommand(erase)
	return subjects
}
