// Command retention is the retention Lambda function, run on an EventBridge
// schedule: it deletes ended actions whose TTL passed but DynamoDB has not
// removed yet, and trims past the row cap. The handler is
// handlers.RetentionHandler; main only wires.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ferryhq/ferry/internal/coldstart"
	"github.com/ferryhq/ferry/internal/handlers"
)

func main() {
	ctx := context.Background()
	rt, err := coldstart.New(ctx, "retention", os.Getenv)
	if err == nil {
		err = rt.CheckTable(ctx) // a table of another layout is refused
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "retention: refusing to start:", err)
		os.Exit(1)
	}
	h := &handlers.RetentionHandler{Engine: rt.Ports, Obs: rt.Obs, Log: rt.Log}
	lambda.StartWithOptions(h.Invoke, lambda.WithEnableSIGTERM(func() { _ = rt.Obs.Flush() }))
}
