// Command drainer is the drainer Lambda function: EventBridge schedules
// sweep every partition, DynamoDB Streams batches wake the partitions they
// name. The handler is handlers.DrainerHandler; main only wires.
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
	rt, err := coldstart.New(ctx, "drainer", os.Getenv)
	if err == nil {
		err = rt.CheckTable(ctx) // a table of another layout is refused
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "drainer: refusing to start:", err)
		os.Exit(1)
	}
	h := &handlers.DrainerHandler{Engine: rt.Ports, Clock: rt.Clock, Log: rt.Log, Metrics: rt.Obs, WriteMargin: rt.Engine.Config().WriteMargin}
	lambda.StartWithOptions(h.Invoke, lambda.WithEnableSIGTERM(func() { _ = rt.Obs.Flush() }))
}
