package ferrytest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ferryhq/ferry"
	"github.com/ferryhq/ferry/ferrytest"
)

// noted is a kind whose adapter only prints what it was asked to do.
type noted struct{}

func (noted) Spec() ferry.KindSpec {
	return ferry.KindSpec{Name: "noted", Class: ferry.IdempotentReceiver}
}

func (noted) Validate(string, json.RawMessage) error { return nil }

func (noted) Execute(_ context.Context, att *ferry.Attempt) ferry.Result {
	fmt.Printf("noted %s\n", att.Action.Payload)
	return ferry.Done("")
}

// Example serves the embedded DynamoDB over HTTP, points an AWS SDK client
// at it, enqueues an action and drains until idle.
func Example() {
	ctx := context.Background()
	clk := ferrytest.NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	srv := ferrytest.NewServer(clk)
	defer srv.Close()

	client := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	reg := ferry.NewRegistry()
	if err := reg.Register(noted{}); err != nil {
		panic(err)
	}
	outbox, err := ferry.New(client, reg, ferry.Config{Table: "ferry", Partitions: 2}, ferry.WithClock(clk))
	if err != nil {
		panic(err)
	}
	if err := outbox.EnsureTable(ctx); err != nil {
		panic(err)
	}
	res, err := outbox.Enqueue(ctx, ferry.EnqueueParams{Kind: "noted", WorkspaceID: "ws", Payload: json.RawMessage(`{"n":1}`)})
	if err != nil {
		panic(err)
	}
	if err := ferrytest.DrainUntilIdle(ctx, outbox); err != nil {
		panic(err)
	}
	a, err := outbox.ActionGet(ctx, res.Action.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(a.State)
	// Output:
	// noted {"n":1}
	// DONE
}
