package handlers

import (
	"context"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
)

// Budget turns an invocation's deadline into the engine's drain deadline.
// The engine starts no attempt that could not finish, inside its write
// margin, before that deadline, and releases what it claimed but did not
// start; the budget keeps a further reserve at the very end of the
// invocation for the last end writes and the fence release, so the Lambda
// is never frozen in the middle of them.
type Budget struct {
	// Reserve is kept at the end of the invocation; default 5s. It never
	// takes more than a quarter of the time left.
	Reserve time.Duration
	// Fallback is the time budget when the context has no deadline (tests,
	// ferry dev); default 30s.
	Fallback time.Duration
}

func (b Budget) withDefaults() Budget {
	if b.Reserve <= 0 {
		b.Reserve = 5 * time.Second
	}
	if b.Fallback <= 0 {
		b.Fallback = 30 * time.Second
	}
	return b
}

// ClaimUntil returns the drain deadline to give the engine, from ctx's
// deadline and now.
func (b Budget) ClaimUntil(ctx context.Context, clk clock.Clock) time.Time {
	b = b.withDefaults()
	now := clk.Now()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = now.Add(b.Fallback)
	}
	left := deadline.Sub(now)
	if left <= 0 {
		return now
	}
	reserve := min(b.Reserve, left/4)
	return deadline.Add(-reserve)
}
