package lambdafn

import (
	"context"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
)

// Budget decides, from an invocation's deadline, when to stop claiming: an
// attempt started just before the Lambda is frozen would lose its lease, so
// the handler keeps a reserve at the end of the invocation for the attempts
// already started to finish and for releasing what was claimed but not
// started.
type Budget struct {
	// Reserve is kept at the end of the invocation; default 20s. It never
	// takes more than half of the time left.
	Reserve time.Duration
	// Fallback is the time budget when the context has no deadline (tests,
	// ferry dev); default 30s.
	Fallback time.Duration
}

func (b Budget) withDefaults() Budget {
	if b.Reserve <= 0 {
		b.Reserve = 20 * time.Second
	}
	if b.Fallback <= 0 {
		b.Fallback = 30 * time.Second
	}
	return b
}

// ClaimUntil returns when to stop claiming, given ctx's deadline and now.
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
	reserve := min(b.Reserve, left/2)
	return deadline.Add(-reserve)
}
