package ddblocal_test

import (
	"context"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/ddblocal/paritytest"
)

// TestStreamsParityInProcess runs the Streams cases against the engine.
func TestStreamsParityInProcess(t *testing.T) {
	t.Parallel()
	paritytest.ExerciseStreams(context.Background(), t, func(t *testing.T) paritytest.Clients {
		db := ddblocal.New()
		return paritytest.Clients{DB: db, Streams: db}
	})
}

// TestStreamsParityEndpoint runs the Streams cases against the endpoint in
// FERRY_DYNAMODB_TEST_ENDPOINT (its Streams API at
// FERRY_DYNAMODB_STREAMS_TEST_ENDPOINT, default the same), skipped when
// unset.
func TestStreamsParityEndpoint(t *testing.T) {
	endpoint := os.Getenv("FERRY_DYNAMODB_TEST_ENDPOINT")
	if endpoint == "" {
		t.Skip("FERRY_DYNAMODB_TEST_ENDPOINT is not set")
	}
	streamsEndpoint := os.Getenv("FERRY_DYNAMODB_STREAMS_TEST_ENDPOINT")
	if streamsEndpoint == "" {
		streamsEndpoint = endpoint
	}
	ctx := context.Background()
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("ferry", "ferry", "")))
	require.NoError(t, err)
	clients := paritytest.Clients{
		DB:      dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) }),
		Streams: dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) { o.BaseEndpoint = aws.String(streamsEndpoint) }),
	}
	paritytest.ExerciseStreams(ctx, t, func(t *testing.T) paritytest.Clients { return clients })
}
