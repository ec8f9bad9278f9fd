package ddbhttp_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
)

func TestServeUntilContextDone(t *testing.T) {
	t.Parallel()
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	b := &fakeBackend{respond: func(op string, in any) (any, error) {
		if op == "GetItem" {
			return &dynamodb.GetItemOutput{Item: in.(*dynamodb.GetItemInput).Key}, nil
		}
		return nil, nil
	}}
	done := make(chan error, 1)
	go func() { done <- ddbhttp.Serve(ctx, ln, b, nil) }()

	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")))
	require.NoError(t, err)
	transport := &http.Transport{}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String("http://" + ln.Addr().String())
		o.HTTPClient = &http.Client{Transport: transport}
	})

	// Many concurrent callers on one handler, each getting its own answer.
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			k := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("k%d", i)}}
			out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: k})
			if err != nil {
				errs <- err
				return
			}
			if got := out.Item["pk"].(*types.AttributeValueMemberS).Value; got != fmt.Sprintf("k%d", i) {
				errs <- fmt.Errorf("caller %d got %s", i, got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, b.Calls(), 32)

	// Connections the transport dialed but never used would hold a graceful
	// shutdown for its whole grace period.
	transport.CloseIdleConnections()
	cancel()
	require.NoError(t, <-done, "Serve returns nil once its context is done")
}

func TestListenAndServeRefusesBadAddress(t *testing.T) {
	t.Parallel()
	err := ddbhttp.ListenAndServe(context.Background(), "127.0.0.1:-1", &fakeBackend{}, nil)
	require.ErrorContains(t, err, "127.0.0.1:-1")
}
