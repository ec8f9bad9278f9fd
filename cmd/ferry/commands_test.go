package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/operator"
)

// TestFlags pins the command line of API.md: names and defaults.
func TestFlags(t *testing.T) {
	t.Parallel()
	root := newRootCommand()
	find := func(args ...string) map[string]string {
		cmd, _, err := root.Find(args)
		require.NoError(t, err)
		flags := map[string]string{}
		for _, name := range []string{"addr", "token", "partitions", "lease", "write-margin", "retry-base", "clock-skew", "max-deferrals", "max-defer-time", "poll",
			"dynamodb-endpoint", "table", "mail-dir", "allow-private-webhooks", "webhook-secret", "ses", "data-dir"} {
			if f := cmd.Flags().Lookup(name); f != nil {
				flags[name] = f.DefValue
			}
		}
		return flags
	}

	require.Equal(t, map[string]string{
		"addr": "127.0.0.1:8080", "token": "[]", "partitions": "4", "lease": "5m0s", "write-margin": "1m0s",
		"retry-base": "1s", "clock-skew": "0s", "max-deferrals": "50", "max-defer-time": "24h0m0s", "poll": "250ms", "dynamodb-endpoint": "", "table": "ferry", "mail-dir": "./.ferry/mail",
		"allow-private-webhooks": "false", "webhook-secret": "", "ses": "false", "data-dir": "",
	}, find("dev"))
	require.Equal(t, map[string]string{"addr": "127.0.0.1:8000", "data-dir": ""}, find("dynamodb"))
	dyn, _, err := root.Find([]string{"dynamodb"})
	require.NoError(t, err)
	for name, def := range map[string]string{"unprocessed-rate": "0", "throttle-rate": "0", "chaos-seed": "1", "table-status-delay": "1s"} {
		require.Equal(t, def, dyn.Flags().Lookup(name).DefValue, name)
	}
	require.Equal(t, map[string]string{"dynamodb-endpoint": "", "table": "ferry"}, find("table", "create"))
}

func TestDevRefusesBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"dev", "--token", "nobody"},
		{"dev", "--write-margin", "10m"},
		{"dev", "--webhook-secret", "plain"},
		{"dev", "--partitions", "-1"},
		{"dev", "--lease", "5s", "--write-margin", "1s", "--clock-skew", "2s"},
		{"dev", "--max-deferrals", "-1"},
		{"dev", "--max-defer-time", "1ms"},
	} {
		root := newRootCommand()
		root.SetArgs(args)
		require.Error(t, root.Execute(), "%v", args)
	}
}

// TestDevRefusesZeroesAndRepeatedTokens is issue 28 item 11: `ferry dev
// --token t=a --token t=b` went on with both (and `ferry local` kept the
// first), and a zero typed for --partitions, --max-deferrals, --retry-base
// or --poll was taken for the default. Each is refused before anything
// starts, exit 2, naming the flag; the engine's settings with the
// engine's own rule (outbox.Config.Validate).
func TestDevRefusesZeroesAndRepeatedTokens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--token", "t=a", "--token", "t=b"}, `--token: token "t" is given twice ("t=a" and "t=b"); give it once with all its workspaces, e.g. --token t=a,b`},
		{[]string{"--partitions", "0"}, "--partitions must be between 1 and 1024, got 0"},
		{[]string{"--max-deferrals", "0"}, "--max-deferrals must be between 1 and 10000, got 0"},
		{[]string{"--retry-base", "0"}, "--retry-base must be positive, got 0s"},
		{[]string{"--poll", "0"}, "--poll must be positive, got 0s"},
		{[]string{"--lease", "0"}, "--lease must be at least 1s, got 0s"},
		{[]string{"--write-margin", "0"}, "--write-margin must be positive, got 0s"},
		{[]string{"--max-defer-time", "0"}, "--max-defer-time (0s) cannot be shorter than --retry-base (1s)"},
		{[]string{"--retry-base", "20m"}, "the longest retry backoff (15m0s) cannot be shorter than --retry-base (20m0s)"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		root := newRootCommand()
		root.SetArgs(append([]string{"dev", "--addr", "127.0.0.1:0", "--mail-dir", t.TempDir(), "--log-level", "error"}, tc.args...))
		root.SetOut(io.Discard)
		err := root.ExecuteContext(ctx)
		cancel()
		require.EqualError(t, err, tc.want, "%v", tc.args)
		require.Equal(t, operator.ExitUsage, operator.ExitCode(err), "%v", tc.args)
	}
	root := newRootCommand()
	root.SetArgs([]string{"local", "--token", "t=a", "--token", "t=b,c"})
	err := root.Execute()
	require.EqualError(t, err, `--token: token "t" is given twice ("t=a" and "t=b,c"); give it once with all its workspaces, e.g. --token t=a,b,c`)
	require.Equal(t, operator.ExitUsage, operator.ExitCode(err))
}

// TestFlagMessagesArePlain is issue 28 item 13: a flag that does not read
// answered with Go's internals (`strconv.ParseInt: parsing "abc": invalid
// syntax`), and --dynamodb-endpoint notaurl with the SDK's `Post
// "/notaurl": unsupported protocol scheme ""`. Each says what the flag
// takes, exit 2, before anything is called.
func TestFlagMessagesArePlain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dev", "--partitions", "abc"}, `--partitions "abc": want a whole number`},
		{[]string{"status", "--partitions", "1.5"}, `--partitions "1.5": want a whole number`},
		{[]string{"dev", "--lease", "5x"}, `--lease "5x": want a duration such as 250ms, 30s, 5m or 1h30m`},
		{[]string{"dynamodb", "--throttle-rate", "x"}, `--throttle-rate "x": want a number such as 0.25`},
		{[]string{"dynamodb", "--chaos-seed", "-1"}, `--chaos-seed "-1": want a whole number, 0 or more`},
		{[]string{"actions", "list", "--yes=maybe"}, `--yes "maybe": want true or false`},
		{[]string{"dev", "--dynamodb-endpoint", "notaurl"}, `--dynamodb-endpoint "notaurl": want the endpoint's URL, such as http://127.0.0.1:8000 (ferry dynamodb's default)`},
		{[]string{"table", "create", "--dynamodb-endpoint", "127.0.0.1:8000"}, `--dynamodb-endpoint "127.0.0.1:8000": want the endpoint's URL, such as http://127.0.0.1:8000 (ferry dynamodb's default)`},
		{[]string{"status", "--dynamodb-endpoint", "notaurl"}, `--dynamodb-endpoint "notaurl": want the endpoint's URL, such as http://127.0.0.1:8000 (ferry dynamodb's default)`},
	} {
		root := newRootCommand()
		root.SetArgs(tc.args)
		root.SetOut(io.Discard)
		err := root.Execute()
		require.EqualError(t, err, tc.want, "%v", tc.args)
		require.Equal(t, operator.ExitUsage, operator.ExitCode(err), "%v", tc.args)
	}
}

// TestBareStatusSaysHowToReachATable: `ferry status` with no region and
// no endpoint said only "no AWS region"; it says how to name a deployed
// table and a local one (issue 28 item 13). Not parallel: it clears the
// AWS environment.
func TestBareStatusSaysHowToReachATable(t *testing.T) {
	for _, v := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ENDPOINT_URL_DYNAMODB"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	root := newRootCommand()
	root.SetArgs([]string{"status"})
	err := root.Execute()
	require.EqualError(t, err, "no AWS region: for a deployed table pass --region or set AWS_REGION (or name a profile that has one with --profile); "+
		"for a local one pass --dynamodb-endpoint (ferry dynamodb's address, e.g. http://127.0.0.1:8000)")
	require.Equal(t, operator.ExitUsage, operator.ExitCode(err))
}

// TestTableCreateNamesItsTable: `ferry table create --table NAME` creates
// NAME at the endpoint, whether the endpoint comes from the flag or from
// AWS_ENDPOINT_URL_DYNAMODB's default (the check of the endpoint's form
// once shadowed the table's name).
func TestTableCreateNamesItsTable(t *testing.T) {
	t.Parallel()
	endpoint := startTable(t) // creates "ferry"
	out, code := runFerry(t, "table", "create", "--dynamodb-endpoint", endpoint, "--table", "orders")
	require.Equal(t, operator.ExitOK, code, out)
	require.Contains(t, out, `table "orders" is ready at `+endpoint)
	out, code = runFerry(t, "status", "--dynamodb-endpoint", endpoint, "--table", "orders", "-o", "json")
	require.Equal(t, operator.ExitOK, code, out)
}
