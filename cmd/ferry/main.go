// Command ferry is Ferry's command line: `ferry dev` runs the whole system on
// one machine, `ferry dynamodb` serves the embedded DynamoDB over HTTP, and
// `ferry table create` creates the table at a DynamoDB endpoint.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "ferry:", err)
		stop()
		os.Exit(1)
	}
}
