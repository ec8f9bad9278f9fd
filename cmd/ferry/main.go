// Command ferry is Ferry's command line: `ferry dev` runs the whole system on
// one machine, `ferry dynamodb` serves the embedded DynamoDB over HTTP,
// `ferry table create` creates the table at a DynamoDB endpoint, the
// operator's commands (`ferry status`, `ferry actions`, `ferry subjects`)
// read and act on any Ferry table, and `ferry version` (or `ferry
// --version`) says which build it is. The exit code is operator.ExitCode's.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ferryhq/ferry/internal/operator"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "ferry:", operator.Message(err))
		stop()
		os.Exit(operator.ExitCode(err))
	}
}
