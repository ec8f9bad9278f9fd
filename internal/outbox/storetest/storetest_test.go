package storetest_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
	"github.com/ferryhq/ferry/internal/outbox/storetest"
)

var start = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func TestEmbedded(t *testing.T) {
	t.Parallel()
	storetest.Exercise(context.Background(), t, func(t *testing.T) storetest.Backend {
		clk := clock.NewManual(start)
		return storetest.Backend{DB: ddblocal.New(ddblocal.WithClock(clk)), Clock: clk, Table: "ferry"}
	})
}

func TestEmbeddedOverHTTP(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("short: the in-process run covers the protocols")
	}
	storetest.Exercise(context.Background(), t, func(t *testing.T) storetest.Backend {
		clk := clock.NewManual(start)
		ctx, cancel := context.WithCancel(context.Background())
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() { done <- ddbhttp.Serve(ctx, ln, ddblocal.New(ddblocal.WithClock(clk)), nil) }()
		t.Cleanup(func() { cancel(); <-done })
		return storetest.Backend{DB: client(t, "http://"+ln.Addr().String()), Clock: clk, Table: "ferry"}
	})
}

var runID = fmt.Sprintf("ferry-test-%d", time.Now().UnixNano())
var tables atomic.Int64

// TestEndpoint runs the suite against FERRY_DYNAMODB_TEST_ENDPOINT (a real
// DynamoDB or any compatible endpoint), a fresh table per test.
func TestEndpoint(t *testing.T) {
	t.Parallel()
	ep := os.Getenv("FERRY_DYNAMODB_TEST_ENDPOINT")
	if ep == "" {
		t.Skip("FERRY_DYNAMODB_TEST_ENDPOINT is not set")
	}
	db := client(t, ep)
	storetest.Exercise(context.Background(), t, func(t *testing.T) storetest.Backend {
		name := fmt.Sprintf("%s-%d", runID, tables.Add(1))
		t.Cleanup(func() {
			_, _ = db.DeleteTable(context.WithoutCancel(context.Background()), &dynamodb.DeleteTableInput{TableName: &name})
		})
		return storetest.Backend{DB: db, Clock: clock.NewManual(time.Now().UTC().Truncate(time.Second)), Table: name, IndexLag: 2 * time.Second}
	})
}

func client(t *testing.T, endpoint string) *dynamodb.Client {
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("ferry", "ferry", "")),
	)
	require.NoError(t, err)
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
}
