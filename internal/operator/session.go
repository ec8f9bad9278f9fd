package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/coldstart"
	"github.com/ferryhq/ferry/internal/outbox"
)

// Target is the table a command works on and how to reach it.
type Target struct {
	Table      string // --table
	Region     string // --region (default: the AWS configuration's)
	Profile    string // --profile (default: the AWS configuration's)
	Endpoint   string // --dynamodb-endpoint (DynamoDB Local, ferry dynamodb)
	Partitions int    // --partitions: the deployment's FERRY_PARTITIONS
	// Retention is the deployment's FERRY_RETENTION: a cancel stamps the
	// ended action's TTL from it, and ferry status finds today's endings
	// through it.
	Retention time.Duration
}

// Client builds the DynamoDB client for t: the default AWS credential
// chain (environment, shared files with --profile, SSO, instance roles),
// with t.Region and t.Endpoint when set. An endpoint without credentials
// anywhere (a local DynamoDB) gets placeholder ones, which local DynamoDBs
// accept.
func Client(ctx context.Context, t Target) (*dynamodb.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, LoadOptions(t)...)
	if err != nil {
		return nil, &Error{Code: ExitUsage, Err: fmt.Errorf("error loading the AWS configuration (--profile %q): %w", t.Profile, err)}
	}
	if t.Endpoint != "" {
		if cfg.Region == "" {
			cfg.Region = "us-east-1"
		}
		// A local DynamoDB takes any credentials; the chain is only asked
		// when some were named, so that it never goes looking on the
		// instance metadata service.
		if t.Profile == "" && os.Getenv("AWS_PROFILE") == "" && os.Getenv("AWS_ACCESS_KEY_ID") == "" {
			cfg.Credentials = credentials.NewStaticCredentialsProvider("ferry", "ferry", "")
		}
	}
	if cfg.Region == "" {
		return nil, fail(ExitUsage, "no AWS region: for a deployed table pass --region or set AWS_REGION (or name a profile that has one with --profile); "+
			"for a local one pass --dynamodb-endpoint (ferry dynamodb's address, e.g. http://127.0.0.1:8000)")
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if t.Endpoint != "" {
			o.BaseEndpoint = aws.String(t.Endpoint)
		}
		// The command says what failed (Message); the SDK's own lines
		// (a checksum warning when something other than DynamoDB
		// answers) are noise beside it.
		o.Logger = logging.Nop{}
		// Every attempt's error is kept: with a retry quota, an endpoint
		// that failed for a while answers "retry quota exceeded" instead.
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.RateLimiter = ratelimit.None })
	}), nil
}

// Session is one command's connection to its table: the engine over a
// metered client, and where its output goes.
type Session struct {
	Engine *outbox.Engine
	Meter  *Meter
	Clock  clock.Clock
	Target Target

	Out io.Writer // results (a table, or JSON with -o json)
	Err io.Writer // prompts, progress, notes
	In  io.Reader // answers to prompts
	// JSON selects JSON output.
	JSON bool
	// Yes answers every confirmation prompt with yes.
	Yes bool
	// Interactive: In and Err are a terminal, so a prompt can be answered
	// and a progress bar redrawn.
	Interactive bool
}

// NewSession checks the table and builds the engine for t over db. It
// fails when the table does not exist (ExitNotFound), is not a Ferry table
// of this build's layout (ExitLayout), or has partitions
// beyond t.Partitions (ExitUsage: the deployment's FERRY_PARTITIONS must be
// given), naming what is wrong.
func NewSession(ctx context.Context, db outbox.DynamoDB, clk clock.Clock, t Target) (*Session, error) {
	m := NewMeter(db)
	reg, err := coldstart.Registry(aws.Config{}, clk, func(string) string { return "" })
	if err != nil {
		return nil, err
	}
	e, err := outbox.New(m, clk, reg, outbox.Config{Table: t.Table, Partitions: t.Partitions, Retention: t.Retention})
	if err != nil {
		return nil, &Error{Code: ExitUsage, Err: err}
	}
	if _, err := m.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(t.Table)}); err != nil {
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) {
			return nil, fail(ExitNotFound, "table %q not found%s (--table)", t.Table, where(t))
		}
		return nil, classify(fmt.Errorf("error reading table %q%s: %w", t.Table, where(t), err))
	}
	// Before anything else: a table that is not a Ferry table of this
	// build's layout is refused, and nothing is written (design.md §3.10).
	if err := e.LayoutCheck(ctx); err != nil {
		return nil, classify(err)
	}
	// The partition map, once a reaper recorded a count in it, says which
	// partitions hold rows (ADR 0011); the engine reads it itself.
	layout, err := e.PartitionLayout(ctx)
	if err != nil {
		return nil, classify(fmt.Errorf("error reading table %q: %w", t.Table, err))
	}
	if !layout.Recorded {
		if err := checkPartitions(ctx, m, e, t); err != nil {
			return nil, err
		}
	}
	return &Session{Engine: e, Meter: m, Clock: clk, Target: t, Out: os.Stdout, Err: os.Stderr, In: os.Stdin}, nil
}

// checkPartitions refuses a table with more partitions than the engine was
// given (a table whose partition map records no count yet).
func checkPartitions(ctx context.Context, m *Meter, e *outbox.Engine, t Target) error {
	// Actions live under P#<partition>; a row of partition N (its seq
	// counter) means the deployment has more partitions than given.
	p := e.Partitions()
	out, err := m.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(t.Table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("P#%d", p)}, "sk": &types.AttributeValueMemberS{Value: "SEQ"},
		},
		ProjectionExpression: aws.String("pk"),
	})
	if err != nil {
		return classify(fmt.Errorf("error reading table %q: %w", t.Table, err))
	}
	if len(out.Item) > 0 {
		return fail(ExitUsage, "table %q has partitions beyond %d: pass the deployment's FERRY_PARTITIONS as --partitions", t.Table, p)
	}
	return nil
}

func where(t Target) string {
	switch {
	case t.Endpoint != "":
		return " at " + t.Endpoint
	case t.Region != "":
		return " in " + t.Region
	}
	return ""
}

// IsTerminal reports whether f is a character device (a terminal).
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// confirm asks question on Err and reads the answer from In; --yes
// answers yes. Without a terminal to ask on it refuses (ExitNotConfirmed),
// so a script never hangs on a prompt.
func (s *Session) confirm(question string) error {
	if s.Yes {
		return nil
	}
	if !s.Interactive {
		return fail(ExitNotConfirmed, "%s: not confirmed (no terminal to ask on; pass --yes)", question)
	}
	fmt.Fprintf(s.Err, "%s [y/N] ", question)
	var answer string
	_, _ = fmt.Fscanln(s.In, &answer)
	if a := strings.ToLower(strings.TrimSpace(answer)); a == "y" || a == "yes" {
		return nil
	}
	return fail(ExitNotConfirmed, "%s: not confirmed", question)
}

// LoadOptions are the AWS configuration options of t (its region and
// profile, when set): the table's client and any other client of the same
// account (the console's CloudWatch) load them alike.
func LoadOptions(t Target) []func(*config.LoadOptions) error {
	var opts []func(*config.LoadOptions) error
	if t.Region != "" {
		opts = append(opts, config.WithRegion(t.Region))
	}
	if t.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(t.Profile))
	}
	return opts
}
