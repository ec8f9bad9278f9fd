package ddbhttp_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
	"github.com/ferryhq/ferry/internal/ddblocal/paritytest"
)

// TestStreamsParityOverHTTP runs the Streams cases through the handler with
// the SDK's unmodified dynamodb and dynamodbstreams clients on one endpoint.
func TestStreamsParityOverHTTP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	paritytest.ExerciseStreams(ctx, t, func(t *testing.T) paritytest.Clients {
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
		return paritytest.Clients{
			DB: dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
				o.BaseEndpoint = aws.String(srv.URL)
				o.HTTPClient = srv.Client()
			}),
			Streams: dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) {
				o.BaseEndpoint = aws.String(srv.URL)
				o.HTTPClient = srv.Client()
			}),
		}
	})
}
