package devstack

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/handlers"
)

// drainLoop is the local drainer: it drains the partitions it is woken for at
// once, and sweeps every partition each poll interval as a backstop (for
// retries and deferrals that come due, and for wake-ups it missed).
type drainLoop struct {
	engine handlers.Drainer
	clk    clock.Clock
	poll   time.Duration
	pass   time.Duration // how long one pass may claim
	log    *slog.Logger

	mu      sync.Mutex
	pending map[int]bool
	wake    chan struct{}
	// passes counts completed passes (tests wait on it through Passes).
	passes   uint64
	passDone *sync.Cond
}

func newDrainLoop(engine handlers.Drainer, clk clock.Clock, poll, pass time.Duration, log *slog.Logger) *drainLoop {
	l := &drainLoop{engine: engine, clk: clk, poll: poll, pass: pass, log: log,
		pending: map[int]bool{}, wake: make(chan struct{}, 1)}
	l.passDone = sync.NewCond(&l.mu)
	return l
}

// Wake asks for the given partitions to be drained now.
func (l *drainLoop) Wake(partitions ...int) {
	l.mu.Lock()
	for _, p := range partitions {
		l.pending[p] = true
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Run drains until ctx is done. A pass in progress when ctx ends runs to its
// end (its attempts finish; claimed but unstarted actions are released by
// the engine), so a stop never abandons an attempt in its provider call.
func (l *drainLoop) Run(ctx context.Context) {
	ticker := time.NewTicker(l.poll)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
			l.drainPending(ctx)
		case <-ticker.C:
			l.sweep(ctx)
		}
	}
}

func (l *drainLoop) takePending() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	ps := make([]int, 0, len(l.pending))
	for p := range l.pending {
		ps = append(ps, p)
	}
	clear(l.pending)
	sort.Ints(ps)
	return ps
}

// passContext detaches a pass from the stop signal: stopping ends the loop
// between passes, never inside an attempt.
func (l *drainLoop) passContext(ctx context.Context) (context.Context, time.Time, context.CancelFunc) {
	until := l.clk.Now().Add(l.pass)
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*l.pass+time.Minute)
	return pctx, until, cancel
}

func (l *drainLoop) drainPending(ctx context.Context) {
	for _, p := range l.takePending() {
		if ctx.Err() != nil {
			break
		}
		pctx, until, cancel := l.passContext(ctx)
		for {
			st, err := l.engine.DrainPartition(pctx, p, until)
			if err != nil {
				l.log.Warn("draining partition failed", slog.Int("partition", p), slog.Any("error", err))
				break
			}
			if !st.More || st.Claimed == 0 || ctx.Err() != nil || !l.clk.Now().Before(until) {
				break
			}
		}
		cancel()
	}
	l.donePass()
}

func (l *drainLoop) sweep(ctx context.Context) {
	pctx, until, cancel := l.passContext(ctx)
	defer cancel()
	if _, err := l.engine.Sweep(pctx, until); err != nil {
		l.log.Warn("sweep failed", slog.Any("error", err))
	}
	l.donePass()
}

func (l *drainLoop) donePass() {
	l.mu.Lock()
	l.passes++
	l.mu.Unlock()
	l.passDone.Broadcast()
}

// WaitPasses blocks until more than n passes have completed or ctx is done,
// and returns the count it saw.
func (l *drainLoop) WaitPasses(ctx context.Context, n uint64) uint64 {
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.passDone.Broadcast()
	})
	defer stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.passes <= n && ctx.Err() == nil {
		l.passDone.Wait()
	}
	return l.passes
}

// Passes returns how many passes (wake-ups and sweeps) have completed.
func (l *drainLoop) Passes() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.passes
}
