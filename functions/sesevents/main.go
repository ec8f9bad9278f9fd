// Command sesevents is the SES events Lambda function: an EventBridge rule
// on the default bus hands it each SES event (Send, Delivery, Bounce,
// Complaint, Reject, DeliveryDelay) of a Ferry email, published by the
// configuration set's EventBridge event destination, and it records the
// event as delivery evidence beside the email's action. The handler is
// handlers.SESEventsHandler; main only wires.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ferryhq/ferry/internal/coldstart"
	"github.com/ferryhq/ferry/internal/handlers"
)

func main() {
	ctx := context.Background()
	rt, err := coldstart.New(ctx, "sesevents", os.Getenv)
	if err == nil {
		err = rt.CheckTable(ctx) // a table of another layout is refused
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sesevents: refusing to start:", err)
		os.Exit(1)
	}
	h := &handlers.SESEventsHandler{Engine: rt.Engine, Obs: rt.Obs, Log: rt.Log, Clock: rt.Clock,
		ConfigurationSet: strings.TrimSpace(os.Getenv(coldstart.EnvSESConfigurationSet))}
	lambda.StartWithOptions(h.Invoke, lambda.WithEnableSIGTERM(func() { _ = rt.Obs.Flush() }))
}
