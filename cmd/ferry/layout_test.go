package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
	"github.com/ferryhq/ferry/internal/operator"
	"github.com/ferryhq/ferry/internal/outbox"
)

// layoutTables serves, on loopback, the tables of TestCommandsRefuseOtherLayouts:
// "users" (an application's own table, not Ferry's), "before" (Ferry's
// layout with a marker from before v0.1.0: an identity, no layout version),
// "older" and "newer" (a layout version below and above outbox.Layout), and
// "ferry" (made by `ferry table create`).
func layoutTables(t *testing.T) (endpoint string, db *ddblocal.DB) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	db = ddblocal.New()
	served := make(chan error, 1)
	go func() { served <- ddbhttp.Serve(ctx, ln, db, nil) }()
	t.Cleanup(func() { stop(); require.NoError(t, <-served) })

	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	_, err = db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String("users"), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
	})
	require.NoError(t, err)
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("users"), Item: map[string]types.AttributeValue{
		"pk": s("user#1"), "sk": s("profile"), "name": s("Ann")}})
	require.NoError(t, err)
	for name, lv := range map[string]string{"before": "", "older": fmt.Sprint(outbox.Layout - 1), "newer": fmt.Sprint(outbox.Layout + 1)} {
		_, err = db.CreateTable(ctx, outbox.TableInput(name))
		require.NoError(t, err)
		marker := map[string]types.AttributeValue{"pk": s("M#table"), "sk": s("M"), "tid": &types.AttributeValueMemberN{Value: "7"},
			"ck": &types.AttributeValueMemberB{Value: bytes.Repeat([]byte{1}, 32)}}
		if lv != "" {
			marker["lv"] = &types.AttributeValueMemberN{Value: lv}
		}
		_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: marker})
		require.NoError(t, err)
	}
	return "http://" + ln.Addr().String(), db
}

// run runs the command line and returns its output and exit code.
func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(""))
	root.SetArgs(args)
	// A command that serves (console, dev) and is not refused stops here
	// instead of running until the test's deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := root.ExecuteContext(ctx)
	if err != nil {
		out.WriteString(err.Error())
	}
	return out.String(), operator.ExitCode(err)
}

func scanAll(t *testing.T, db *ddblocal.DB, table string) []map[string]types.AttributeValue {
	t.Helper()
	out, err := db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table)})
	require.NoError(t, err)
	return out.Items
}

// TestCommandsRefuseOtherLayouts: every operator command (`ferry console`
// too, read-only or not), `ferry table create` and `ferry dev` refuse a table that is not a Ferry table, has no
// layout version, or an older or newer one, with a message naming the
// table, both versions and the docs section, and write nothing to it
// (issue 28 item 7: `ferry partitions --set 8 --yes --table users` wrote
// M#partitions into a plain table and exited 0). `ferry status` prints the
// layout of a table it accepts.
func TestCommandsRefuseOtherLayouts(t *testing.T) {
	t.Parallel()
	endpoint, db := layoutTables(t)
	_, code := run(t, "table", "create", "--dynamodb-endpoint", endpoint, "--table", "ferry")
	require.Zero(t, code)

	want := map[string][]string{
		"users":  {"table users is not a Ferry table", fmt.Sprintf("layout %d", outbox.Layout)},
		"before": {"table before has no layout version", "before v0.1.0"},
		"older":  {fmt.Sprintf("table older has layout %d, older than layout %d", outbox.Layout-1, outbox.Layout)},
		"newer":  {fmt.Sprintf("table newer has layout %d, newer than layout %d", outbox.Layout+1, outbox.Layout)},
	}
	commands := [][]string{
		{"status"},
		{"partitions"},
		{"partitions", "--set", "8", "--yes"},
		{"actions", "list", "--workspace", "default"},
		{"actions", "get", "01m8kjt9g0bvpgyzgh00b1"},
		{"actions", "cancel", "01m8kjt9g0bvpgyzgh00b1", "--yes"},
		{"actions", "admit", "01m8kjt9g0bvpgyzgh00b1", "--yes"},
		{"subjects", "erase", "acct", "--yes"},
		{"console", "--addr", "127.0.0.1:0"},
		{"console", "--addr", "127.0.0.1:0", "--allow-changes"},
	}
	for table, msgs := range want {
		before := scanAll(t, db, table)
		for _, c := range commands {
			args := append(append([]string{}, c...), "--dynamodb-endpoint", endpoint, "--table", table, "--region", "us-east-1")
			out, code := run(t, args...)
			require.Equal(t, operator.ExitLayout, code, "%v on %s: %s", c, table, out)
			require.NotContains(t, out, "login?token=", "%v on %s: the console served", c, table)
			for _, m := range append(msgs, outbox.LayoutDocs) {
				require.Contains(t, out, m, "%v on %s", c, table)
			}
		}
		out, code := run(t, "table", "create", "--dynamodb-endpoint", endpoint, "--table", table)
		require.NotZero(t, code, "table create on %s: %s", table, out)
		require.Contains(t, out, msgs[0])
		out, code = run(t, "dev", "--dynamodb-endpoint", endpoint, "--table", table, "--addr", "127.0.0.1:0", "--mail-dir", t.TempDir())
		require.NotZero(t, code, "dev on %s: %s", table, out)
		require.Contains(t, out, msgs[0])
		require.Equal(t, before, scanAll(t, db, table), "nothing written to %s", table)
	}

	out, code := run(t, "status", "--dynamodb-endpoint", endpoint, "--table", "ferry", "--region", "us-east-1")
	require.Zero(t, code, out)
	require.Contains(t, out, fmt.Sprintf("(layout %d) at", outbox.Layout))
	out, code = run(t, "status", "-o", "json", "--dynamodb-endpoint", endpoint, "--table", "ferry", "--region", "us-east-1")
	require.Zero(t, code, out)
	require.Contains(t, out, fmt.Sprintf(`"layout": %d`, outbox.Layout))
}
