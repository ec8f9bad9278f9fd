package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// childEnv makes the test binary run `ferry` with the arguments in
// FERRY_TEST_ARGS instead of the tests, so a test can start the command as
// a child process (and kill it) without building it.
const childEnv = "FERRY_TEST_CHILD_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(childEnv); args != "" {
		root := newRootCommand()
		root.SetArgs(strings.Fields(args))
		if err := root.ExecuteContext(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "ferry:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var endpointLine = regexp.MustCompile(`Embedded DynamoDB on (http://\S+)`)

// startDynamoDB starts `ferry dynamodb --addr 127.0.0.1:0 --data-dir dir`
// as a child process and returns it with its endpoint.
func startDynamoDB(t *testing.T, dir string) (*exec.Cmd, string) {
	t.Helper()
	return startDynamoDBWith(t, dir, "")
}

// startDynamoDBWith is startDynamoDB with more flags.
func startDynamoDBWith(t *testing.T, dir, flags string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=dynamodb --addr 127.0.0.1:0 --log-level warn --data-dir "+dir+" "+flags)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if m := endpointLine.FindStringSubmatch(sc.Text()); m != nil {
			go func() {
				for sc.Scan() {
				}
			}()
			return cmd, m[1]
		}
	}
	t.Fatalf("ferry dynamodb printed no endpoint: %v", sc.Err())
	return nil, ""
}

func client(t *testing.T, endpoint string) *dynamodb.Client {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("ferry", "ferry", "")))
	require.NoError(t, err)
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
}

// TestDataDirSurvivesKill9: 200 items acknowledged by `ferry dynamodb
// --data-dir` are all there after the process is killed with SIGKILL and
// started again on the same directory.
func TestDataDirSurvivesKill9(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	cmd, endpoint := startDynamoDB(t, dir)
	c := client(t, endpoint)
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String("kill9"), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage},
	})
	require.NoError(t, err)
	require.NoError(t, dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 10 * time.Millisecond }).
		Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("kill9")}, time.Minute))
	const items = 200
	for i := range items {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("kill9"), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: fmt.Sprint("item-", i)}, "n": &types.AttributeValueMemberN{Value: fmt.Sprint(i)}}})
		require.NoError(t, err)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	_, endpoint = startDynamoDB(t, dir)
	c = client(t, endpoint)
	got := map[string]bool{}
	var start map[string]types.AttributeValue
	for {
		out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("kill9"), ExclusiveStartKey: start, ConsistentRead: aws.Bool(true)})
		require.NoError(t, err)
		for _, it := range out.Items {
			got[it["id"].(*types.AttributeValueMemberS).Value] = true
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		start = out.LastEvaluatedKey
	}
	require.Len(t, got, items, "every acknowledged item is back")
	d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("kill9")})
	require.NoError(t, err)
	require.NotNil(t, d.Table.LatestStreamArn, "the table's stream too")
}

// TestDataDirDamageIsRefusedThenSalvaged (issue 28 item 1): one flipped bit
// in the log of `ferry dynamodb --data-dir` stops start-up with a message
// naming the file, the offset and what to do, changing nothing; --salvage
// then starts with every write before the damage and says what it lost.
func TestDataDirDamageIsRefusedThenSalvaged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	cmd, endpoint := startDynamoDB(t, dir)
	c := client(t, endpoint)
	createIDTable(t, c, "damaged")
	for i := range 60 {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("damaged"), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberN{Value: fmt.Sprint(i)}}})
		require.NoError(t, err)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	// XOR 0x40 into the high byte of record 21's length (the table is
	// record 1, item i is record i+2), as the issue did.
	seg := filepath.Join(dir, "wal-0000000000000001.log")
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	off := int64(20) // the segment header
	for range 20 {
		off += 20 + int64(binary.LittleEndian.Uint32(b[off:]))
	}
	b[off+3] ^= 0x40
	require.NoError(t, os.WriteFile(seg, b, 0o644))

	refused := exec.Command(os.Args[0], "-test.run=^$")
	refused.Env = append(os.Environ(), childEnv+"=dynamodb --addr 127.0.0.1:0 --data-dir "+dir)
	out, err := refused.CombinedOutput()
	require.Error(t, err, "start-up on a damaged log must fail: %s", out)
	require.Contains(t, string(out), fmt.Sprintf("wal-0000000000000001.log is damaged at offset %d", off))
	require.Contains(t, string(out), "--salvage")
	after, err := os.ReadFile(seg)
	require.NoError(t, err)
	require.Equal(t, b, after, "a refused start-up changes nothing")

	_, endpoint = startDynamoDBWith(t, dir, "--salvage")
	c = client(t, endpoint)
	sc, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("damaged"), Select: types.SelectCount})
	require.NoError(t, err)
	require.Equal(t, int32(19), sc.Count, "the items before the damaged record")
	aside, err := filepath.Glob(filepath.Join(dir, "salvage-1-*", "wal-0000000000000001.log.from-*"))
	require.NoError(t, err)
	require.Len(t, aside, 1, "the rest of the log is set aside")
}

// TestDataDirOfTheFirstFormatIsRefused: a --data-dir written by a build
// before 0.1.0 (a log segment of the first format, no MANIFEST) stops
// `ferry dynamodb` and `ferry dev` with a message naming the file and
// saying to start with an empty directory; the directory is left as it
// was, salvage or not.
func TestDataDirOfTheFirstFormatIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seg := filepath.Join(dir, "wal-0000000000000001.log")
	old := []byte("FDDBWAL1") // a first-format segment with no record yet
	require.NoError(t, os.WriteFile(seg, old, 0o644))
	for _, args := range []string{
		"dynamodb --addr 127.0.0.1:0 --data-dir " + dir,
		"dynamodb --addr 127.0.0.1:0 --salvage --data-dir " + dir,
		"dev --addr 127.0.0.1:0 --data-dir " + dir,
	} {
		// A build that reads the directory serves on it: stop it after a while.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		refused := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		refused.Env = append(os.Environ(), childEnv+"="+args)
		out, err := refused.CombinedOutput()
		require.Error(t, err, "%s: start-up on a directory of the first format must fail: %s", args, out)
		require.NoError(t, ctx.Err(), "%s: it started serving: %s", args, out)
		cancel()
		require.Contains(t, string(out), "--data-dir: ddblocal: wal-0000000000000001.log was written by a build of ferry before 0.1.0", args)
		require.Contains(t, string(out), "Start with an empty directory", args)
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, ents, 1, "%s: nothing is written beside it", args)
		after, err := os.ReadFile(seg)
		require.NoError(t, err)
		require.Equal(t, old, after, "%s: a refused start-up changes nothing", args)
	}
}

// TestDataDirSecondProcessIsRefused (issue 28 item 11): a second `ferry
// dynamodb` on a directory in use exits with a message naming it, even
// after the LOCK file earlier versions locked is deleted.
func TestDataDirSecondProcessIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	startDynamoDB(t, dir)
	if err := os.Remove(filepath.Join(dir, "LOCK")); err != nil {
		require.ErrorIs(t, err, os.ErrNotExist)
	}
	second := exec.Command(os.Args[0], "-test.run=^$")
	second.Env = append(os.Environ(), childEnv+"=dynamodb --addr 127.0.0.1:0 --data-dir "+dir)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = second.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = second.Process.Kill()
		<-done
		t.Fatalf("a second ferry dynamodb started on a directory in use: %s", out)
	}
	require.Error(t, err, "%s", out)
	require.Contains(t, string(out), "the data directory "+dir+" is in use by another process")
}

// createIDTable creates a table keyed by a number "id" and waits until it
// is ACTIVE.
func createIDTable(t *testing.T, c *dynamodb.Client, name string) {
	t.Helper()
	ctx := context.Background()
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	require.NoError(t, err)
	require.NoError(t, dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 10 * time.Millisecond }).
		Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute))
}
