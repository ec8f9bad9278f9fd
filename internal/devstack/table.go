package devstack

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferryhq/ferry/internal/lambdafn"
	"github.com/ferryhq/ferry/internal/outbox"
)

// EnsureTable creates the engine's table, its indexes and TTL when missing.
func EnsureTable(ctx context.Context, e *outbox.Engine) error {
	et, ok := any(e).(interface{ EnsureTable(context.Context) error })
	if !ok {
		return errors.New("the engine cannot create its table yet (outbox.Engine.EnsureTable is missing)")
	}
	if err := et.EnsureTable(ctx); err != nil {
		return fmt.Errorf("error creating the table: %w", err)
	}
	return nil
}

// retainerOf returns the engine's retention pass when this build has one.
func retainerOf(e *outbox.Engine) (lambdafn.Retainer, bool) {
	return nil, false
}
