package ddbhttp_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
	"github.com/ferryhq/ferry/internal/ddblocal/paritytest"
)

// TestParityOverHTTP runs the embedded DynamoDB's parity suite through this
// package: an unmodified SDK client, the wire protocol on loopback, the
// handler, and a fresh real engine per case. Whatever the suite asserts of
// the engine in process must hold over the wire too, errors included.
func TestParityOverHTTP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	paritytest.Exercise(ctx, t, func(t *testing.T) paritytest.Client {
		srv := httptest.NewServer(ddbhttp.NewHandler(ddblocal.New()))
		t.Cleanup(srv.Close)
		log := &sdkLog{}
		cfg, err := config.LoadDefaultConfig(ctx,
			config.WithRegion("us-east-1"),
			config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")),
			config.WithLogger(log),
		)
		require.NoError(t, err)
		t.Cleanup(func() { requireNoChecksumComplaints(t, log) })
		return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
			o.BaseEndpoint = aws.String(srv.URL)
			o.HTTPClient = srv.Client()
			o.ClientLogMode = aws.LogRetries
		})
	})
}

// TestParityWireOverHTTP runs the HTTP-layer cases of the parity suite
// (compression, CORS, framing) against the handler on loopback.
func TestParityWireOverHTTP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := httptest.NewServer(ddbhttp.NewHandler(ddblocal.New()))
	t.Cleanup(srv.Close)
	creds := credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"), config.WithCredentialsProvider(creds))
	require.NoError(t, err)
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.HTTPClient = srv.Client()
	})
	paritytest.ExerciseWire(ctx, t, paritytest.Wire{
		URL: srv.URL, HTTPClient: srv.Client(), Credentials: creds, Region: "us-east-1",
		NewClient: func(*testing.T) paritytest.Client { return client },
	})
}
