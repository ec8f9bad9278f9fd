package devstack

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferryhq/ferry/internal/outbox"
)

// EnsureTable creates the engine's table, its indexes, TTL and layout
// marker when missing; a table of another layout is refused as the engine
// refuses it (outbox.LayoutError).
func EnsureTable(ctx context.Context, e *outbox.Engine) error {
	err := e.EnsureTable(ctx)
	if err != nil && !errors.Is(err, outbox.ErrLayout) {
		return fmt.Errorf("error creating the table: %w", err)
	}
	return err
}
