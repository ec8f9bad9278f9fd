package devstack

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/console"
	"github.com/ferryhq/ferry/internal/outbox"
)

// partitionDrainer is what the local drainer needs of the engine.
type partitionDrainer interface {
	DrainPartition(ctx context.Context, partition int, p outbox.DrainParams) (*outbox.DrainResult, error)
	LivePartitions(ctx context.Context) (int, error)
}

// drainProbes is how many partitions the local drainer probes at once
// (fence take, claim): a partition whose drain claimed actions gives its
// place to the next while it runs them.
const drainProbes = 8

// drainLoop is the local drainer. Each partition is drained by its own
// goroutine, at once when it is woken (and again when woken meanwhile), so
// a slow provider in one partition never delays another's (design.md §6);
// every poll interval it wakes every live partition as a backstop (for
// retries and deferrals that come due, and for wake-ups it missed).
type drainLoop struct {
	engine partitionDrainer
	owner  string
	clk    clock.Clock
	poll   time.Duration
	pass   time.Duration // how long one pass may claim
	log    *slog.Logger
	probes chan struct{}

	mu      sync.Mutex
	pending map[int]bool // woken, not drained since
	busy    map[int]bool // a goroutine is draining it
	wake    chan struct{}
	workers sync.WaitGroup
	// passes counts completed partition drains (tests wait on it through
	// Passes).
	passes   uint64
	passDone *sync.Cond
	// sweeps: the last drains that claimed something or failed, newest
	// last (the console's partitions page).
	sweeps []console.Sweep
}

// keptSweeps bounds the drains the loop remembers.
const keptSweeps = 20

func newDrainLoop(engine partitionDrainer, owner string, clk clock.Clock, poll, pass time.Duration, log *slog.Logger) *drainLoop {
	l := &drainLoop{engine: engine, owner: owner, clk: clk, poll: poll, pass: pass, log: log,
		probes: make(chan struct{}, drainProbes), pending: map[int]bool{}, busy: map[int]bool{}, wake: make(chan struct{}, 1)}
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

// Run drains until ctx is done. Drains in progress when ctx ends run to
// their end (their attempts finish; claimed but unstarted actions are
// released by the engine), so a stop never abandons an attempt in its
// provider call.
func (l *drainLoop) Run(ctx context.Context) {
	ticker := time.NewTicker(l.poll)
	defer ticker.Stop()
	defer l.workers.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
		case <-ticker.C:
			l.wakeAll(ctx)
		}
		l.dispatch(ctx)
	}
}

// wakeAll marks every partition that may hold a live row.
func (l *drainLoop) wakeAll(ctx context.Context) {
	n, err := l.engine.LivePartitions(ctx)
	if err != nil {
		l.log.Warn("sweep failed", slog.Any("error", err))
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := range n {
		l.pending[p] = true
	}
}

// dispatch starts a drain of every woken partition not being drained; a
// partition being drained is drained again when its drain ends.
func (l *drainLoop) dispatch(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := range l.pending {
		if l.busy[p] {
			continue
		}
		delete(l.pending, p)
		l.busy[p] = true
		l.workers.Go(func() { l.work(ctx, p) })
	}
}

// work drains partition p until it is not woken again meanwhile.
func (l *drainLoop) work(ctx context.Context, p int) {
	for {
		l.drain(ctx, p)
		l.mu.Lock()
		l.passes++
		l.passDone.Broadcast()
		again := l.pending[p] && ctx.Err() == nil
		delete(l.pending, p)
		if !again {
			delete(l.busy, p)
		}
		l.mu.Unlock()
		if !again {
			return
		}
	}
}

// drain drains partition p until nothing is due there or its pass is
// over. It is detached from the stop signal: stopping ends the loop
// between drains, never inside an attempt. It takes a probe place until it
// has claimed actions.
func (l *drainLoop) drain(ctx context.Context, p int) {
	rec := console.Sweep{At: l.clk.Now(), Partitions: []int{p}}
	defer func() { l.remember(rec) }()
	until := l.clk.Now().Add(l.pass)
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*l.pass+time.Minute)
	defer cancel()
	for {
		l.probes <- struct{}{}
		free := sync.OnceFunc(func() { <-l.probes })
		r, err := l.engine.DrainPartition(pctx, p, outbox.DrainParams{Owner: l.owner, Deadline: until, Started: free})
		free()
		if r != nil {
			rec.Claimed, rec.Ended = rec.Claimed+r.Claimed, rec.Ended+r.Ended
		}
		if err != nil {
			l.log.Warn("draining partition failed", slog.Int("partition", p), slog.Any("error", err))
			rec.Err = err.Error()
			return
		}
		if !r.More || r.Claimed == 0 || ctx.Err() != nil || !l.clk.Now().Before(until) {
			return
		}
	}
}

// remember keeps a drain that claimed something or failed (an idle drain
// every poll would push out everything else).
func (l *drainLoop) remember(rec console.Sweep) {
	if rec.Claimed == 0 && rec.Err == "" {
		return
	}
	rec.Took = l.clk.Now().Sub(rec.At)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.sweeps) >= keptSweeps {
		l.sweeps = l.sweeps[1:]
	}
	l.sweeps = append(l.sweeps, rec)
}

// Sweeps returns the last drains that claimed something or failed, newest
// first.
func (l *drainLoop) Sweeps() []console.Sweep {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]console.Sweep, 0, len(l.sweeps))
	for i := len(l.sweeps) - 1; i >= 0; i-- {
		out = append(out, l.sweeps[i])
	}
	return out
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

// Passes returns how many passes (partition drains) have completed.
func (l *drainLoop) Passes() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.passes
}
