package devstack

import (
	"context"
	"fmt"

	"github.com/ferryhq/ferry/internal/outbox"
)

// EnsureTable creates the engine's table, its indexes and TTL when missing.
func EnsureTable(ctx context.Context, e *outbox.Engine) error {
	if err := e.EnsureTable(ctx); err != nil {
		return fmt.Errorf("error creating the table: %w", err)
	}
	return nil
}
