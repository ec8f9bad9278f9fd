package ddblocal_test

import (
	"context"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/ddblocal/paritytest"
)

// TestParityInProcess runs the parity suite against the engine itself, a
// fresh engine per case.
func TestParityInProcess(t *testing.T) {
	t.Parallel()
	paritytest.Exercise(context.Background(), t, func(t *testing.T) paritytest.Client {
		return ddblocal.New()
	})
}

// TestParityEndpoint runs the parity suite against the DynamoDB endpoint in
// FERRY_DYNAMODB_TEST_ENDPOINT (DynamoDB Local, the engine's HTTP face in
// another process, or AWS), and is skipped when it is unset.
func TestParityEndpoint(t *testing.T) {
	endpoint := os.Getenv("FERRY_DYNAMODB_TEST_ENDPOINT")
	if endpoint == "" {
		t.Skip("FERRY_DYNAMODB_TEST_ENDPOINT is not set")
	}
	ctx := context.Background()
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("ferry", "ferry", "")))
	require.NoError(t, err)
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
	paritytest.Exercise(ctx, t, func(t *testing.T) paritytest.Client { return client })
	paritytest.ExerciseWire(ctx, t, paritytest.Wire{URL: endpoint, Credentials: cfg.Credentials, Region: region,
		NewClient: func(*testing.T) paritytest.Client { return client }})
}
