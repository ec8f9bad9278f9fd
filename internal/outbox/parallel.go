package outbox

import "sync"

// Parallel runs f(0), …, f(n-1), at most limit of them at once, and
// returns when every call has returned. A call may give its place to the
// next one before it returns by calling the free it is handed (the first
// call counts, later ones do nothing): a sweep's partition drain frees its
// place once it has claimed (DrainParams.Started). The engine hands it the
// work it may do at once: a drain's lane groups, a sweep's partitions, a
// claim's updates of its groups (only n > 1 and limit > 1: otherwise the
// calls run one after another in the caller's goroutine).
type Parallel func(n, limit int, f func(i int, free func()))

// WithParallel sets how the engine runs work it may do at once. The
// default runs each call on a goroutine of its own (one whose adapter
// call exits the goroutine ends only that call); the simulator
// (internal/sim) passes one that interleaves them on its own schedule, so
// that a seed replays exactly whatever the concurrency.
func WithParallel(run Parallel) Option { return func(e *Engine) { e.par = run } }

// each calls f(0..n-1), up to limit at once (Parallel).
func (e *Engine) each(n, limit int, f func(i int)) {
	e.eachFreeing(n, limit, func(i int, _ func()) { f(i) })
}

// eachFreeing calls f(0..n-1), up to limit at once, where a call may give
// its place to the next before it returns (Parallel).
func (e *Engine) eachFreeing(n, limit int, f func(i int, free func())) {
	if e.par != nil {
		if limit <= 1 || n <= 1 {
			for i := range n {
				f(i, func() {})
			}
			return
		}
		e.par(n, min(limit, n), f)
		return
	}
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		free := sync.OnceFunc(func() { <-sem })
		wg.Go(func() {
			defer free()
			f(i, free)
		})
	}
	wg.Wait()
}
