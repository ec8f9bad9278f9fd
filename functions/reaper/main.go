// Command reaper is the reaper Lambda function, run on an EventBridge
// schedule: it ends what lost leases make unrecoverable, cancels expired
// actions and writes the backlog gauges. The handler is
// handlers.ReaperHandler; main only wires.
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
	rt, err := coldstart.New(ctx, "reaper", os.Getenv)
	if err == nil {
		err = rt.CheckTable(ctx) // a table of another layout is refused
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "reaper: refusing to start:", err)
		os.Exit(1)
	}
	h := &handlers.ReaperHandler{Engine: rt.Ports, Obs: rt.Obs, Log: rt.Log}
	lambda.StartWithOptions(h.Invoke, lambda.WithEnableSIGTERM(func() { _ = rt.Obs.Flush() }))
}
