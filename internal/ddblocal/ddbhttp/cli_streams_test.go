package ddbhttp_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
)

// TestAWSCLIReadsStream drives the AWS CLI (when installed) against the
// handler: it creates a table with a NEW_AND_OLD_IMAGES stream, writes,
// and reads the stream from TRIM_HORIZON with `aws dynamodbstreams`.
func TestAWSCLIReadsStream(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("aws")
	if err != nil {
		t.Skip("the AWS CLI is not installed")
	}
	db := ddblocal.New()
	srv := httptest.NewServer(ddbhttp.NewHandler(db))
	t.Cleanup(srv.Close)
	home := t.TempDir()
	run := func(args ...string) map[string]any {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--endpoint-url", srv.URL, "--output", "json")...)
		cmd.Env = append(cliEnv(),
			"AWS_ACCESS_KEY_ID=ferry", "AWS_SECRET_ACCESS_KEY=ferry",
			"AWS_DEFAULT_REGION=us-east-1", "AWS_REGION=us-east-1",
			"AWS_CONFIG_FILE="+filepath.Join(home, "config"), "AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(home, "credentials"),
			"AWS_EC2_METADATA_DISABLED=true")
		out, err := cmd.Output()
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		require.NoError(t, err, "aws %v: %s", args, stderr)
		var m map[string]any
		if len(out) > 0 {
			require.NoError(t, json.Unmarshal(out, &m), string(out))
		}
		return m
	}
	// The table and the writes go through the SDK (each CLI call costs a
	// Python start-up); the stream is read with the CLI only.
	ctx := context.Background()
	_, err = db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("cli_stream"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}})
	require.NoError(t, err)
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("cli_stream"), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "a"}, "v": &types.AttributeValueMemberN{Value: "1"}}})
	require.NoError(t, err)
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("cli_stream"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}},
		UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: "2"}}})
	require.NoError(t, err)
	arn := db.LatestStreamArn("cli_stream")

	streams := run("dynamodbstreams", "list-streams", "--table-name", "cli_stream")["Streams"].([]any)
	require.Len(t, streams, 1)
	require.Equal(t, arn, streams[0].(map[string]any)["StreamArn"])
	desc := run("dynamodbstreams", "describe-stream", "--stream-arn", arn)["StreamDescription"].(map[string]any)
	require.Equal(t, "ENABLED", desc["StreamStatus"])
	shard := desc["Shards"].([]any)[0].(map[string]any)["ShardId"].(string)
	it := run("dynamodbstreams", "get-shard-iterator", "--stream-arn", arn, "--shard-id", shard,
		"--shard-iterator-type", "TRIM_HORIZON")["ShardIterator"].(string)
	got := run("dynamodbstreams", "get-records", "--shard-iterator", it)
	recs := got["Records"].([]any)
	require.Len(t, recs, 2)
	require.NotEmpty(t, got["NextShardIterator"])

	insert := recs[0].(map[string]any)
	require.Equal(t, "INSERT", insert["eventName"])
	require.Equal(t, "aws:dynamodb", insert["eventSource"])
	ddb := insert["dynamodb"].(map[string]any)
	require.Equal(t, map[string]any{"pk": map[string]any{"S": "a"}}, ddb["Keys"])
	require.Equal(t, map[string]any{"pk": map[string]any{"S": "a"}, "v": map[string]any{"N": "1"}}, ddb["NewImage"])
	require.NotContains(t, ddb, "OldImage")
	require.Equal(t, "NEW_AND_OLD_IMAGES", ddb["StreamViewType"])
	require.NotEmpty(t, ddb["SequenceNumber"])
	require.NotEmpty(t, ddb["ApproximateCreationDateTime"])

	modify := recs[1].(map[string]any)
	require.Equal(t, "MODIFY", modify["eventName"])
	ddb = modify["dynamodb"].(map[string]any)
	require.Equal(t, map[string]any{"pk": map[string]any{"S": "a"}, "v": map[string]any{"N": "1"}}, ddb["OldImage"])
	require.Equal(t, map[string]any{"pk": map[string]any{"S": "a"}, "v": map[string]any{"N": "2"}}, ddb["NewImage"])
	require.Greater(t, ddb["SizeBytes"].(float64), float64(0))
}

// cliEnv is the environment without any AWS_ setting of the machine's, so
// the CLI uses the test's dummy credentials and the test's endpoint only.
func cliEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return env
}
