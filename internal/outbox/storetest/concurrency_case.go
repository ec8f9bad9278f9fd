package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// endCounter is an Observer that counts ends per action.
type endCounter struct {
	outbox.NopObserver
	mu    sync.Mutex
	ended map[string]int
}

func (c *endCounter) ActionEnded(a *outbox.Action, _ outbox.Outcome, _ outbox.StopReason) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended[rowKey(a.Partition, a.Seq)]++
}

func (c *endCounter) isEnded(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ended[id] > 0
}

func (c *endCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ended)
}

var _ = register("ConcurrentEnqueueAndDrainers", func(ctx context.Context, t *testing.T, nb NewBackend) {
	const (
		enqueuers  = 4
		perEnq     = 12
		drainers   = 3
		partitions = 2
	)
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Partitions = partitions; c.BatchSize = 5 })
	obs := &endCounter{ended: map[string]int{}}
	e, err := outbox.New(tb.b.DB, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg, outbox.WithObserver(obs))
	require.NoError(t, err)

	var mu sync.Mutex
	var violations []string
	busy := map[string]string{} // lane -> action in its provider call
	tb.rec.OnExecute = func(att *outbox.Attempt) {
		a := att.Action
		if a.LaneKey == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		lane := a.WorkspaceID + "/" + a.LaneKey
		if other, ok := busy[lane]; ok && other != a.ID {
			violations = append(violations, fmt.Sprintf("lane %s: %s runs while %s does", lane, a.ID, other))
		}
		if a.PrevSeq != 0 && !obs.isEnded(rowKey(a.Partition, a.PrevSeq)) {
			violations = append(violations, fmt.Sprintf("lane %s: %s runs before its predecessor ended", lane, a.ID))
		}
		busy[lane] = a.ID
	}
	tb.rec.OnExecuteDone = func(att *outbox.Attempt) {
		mu.Lock()
		defer mu.Unlock()
		delete(busy, att.Action.WorkspaceID+"/"+att.Action.LaneKey)
	}
	scripts := []Script{{}, {Do: []string{"retry", "done"}}, {Do: []string{"failed"}}, {}}
	amoScripts := []Script{{}, {Do: []string{"error"}}, {Do: []string{"panic"}}}
	kinds := []string{KindIdem, KindIdem, KindIdem, KindAMO}
	var enqMu sync.Mutex
	lanes := map[string][]outbox.Action{}
	var all []outbox.Action
	amo := map[string]bool{}

	var wg sync.WaitGroup
	done := make(chan struct{})
	for g := range enqueuers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perEnq {
				p := outbox.EnqueueParams{Kind: kinds[i%len(kinds)], WorkspaceID: "ws", Payload: Payload(scripts[(i+g)%len(scripts)])}
				if p.Kind == KindAMO {
					// An at-most-once adapter answers Retry only with proof that
					// nothing left; these never do: each call may have reached.
					p.Payload = Payload(amoScripts[(i+g)%len(amoScripts)])
				}
				if i%3 != 0 {
					p.LaneKey = fmt.Sprintf("lane-%d-%d", g, i%2)
				}
				if i%5 == 0 {
					p.IdempotencyKey = fmt.Sprintf("key-%d-%d", g, i)
				}
				r, err := e.Enqueue(ctx, p)
				if err != nil {
					t.Errorf("enqueue: %v", err)
					return
				}
				enqMu.Lock()
				all = append(all, r.Action)
				if p.LaneKey != "" {
					lanes[p.LaneKey] = append(lanes[p.LaneKey], r.Action)
				}
				if p.Kind == KindAMO {
					amo[r.Action.ID] = true
				}
				enqMu.Unlock()
			}
		}()
	}
	var dwg sync.WaitGroup
	drainRound := func(d int) {
		for p := range partitions {
			if _, err := e.DrainPartition(ctx, (p+d)%partitions, outbox.DrainParams{Owner: fmt.Sprintf("drainer-%d", d), Concurrency: 2}); err != nil {
				t.Errorf("drain: %v", err)
			}
		}
	}
	for d := range drainers {
		dwg.Add(1)
		go func() {
			defer dwg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				drainRound(d)
			}
		}()
	}
	wg.Wait()
	close(done)
	dwg.Wait()
	total := enqueuers * perEnq
	require.Len(t, all, total)
	for round := 0; obs.count() < total && round < 40; round++ {
		tb.b.Clock.Advance(tb.cfg.RetryCap + tb.cfg.Lease)
		tb.settled()
		var rw sync.WaitGroup
		for d := range drainers {
			rw.Add(1)
			go func() { defer rw.Done(); drainRound(d) }()
		}
		rw.Wait()
	}
	require.Empty(t, violations)
	for _, a := range all {
		got := tb.get(t, a.ID)
		require.True(t, got.State.Ended(), "%s is %s", a.ID, got.State)
		require.Equal(t, 1, obs.ended[rowKey(a.Partition, a.Seq)], "%s ended exactly once", a.ID)
		if amo[a.ID] {
			require.LessOrEqual(t, tb.rec.Execs(a.ID), 1, "at most once")
		}
	}
	// Each lane's first provider call of an action comes after the last of
	// its predecessor in enqueue order.
	order := tb.rec.Order()
	for lane, acts := range lanes {
		for i := 1; i < len(acts); i++ {
			prevLast := lastIndexOf(order, "exec:"+acts[i-1].ID)
			first := indexOf(order, "exec:"+acts[i].ID)
			if first >= 0 && prevLast >= 0 {
				require.Less(t, prevLast, first, "lane %s out of order", lane)
			}
		}
	}
})
