package outbox

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// slowAdapter's calls with the payload {"slow":true} block until release
// is closed (or the test's watchdog fires); others end Done at once.
type slowAdapter struct {
	release <-chan struct{}
	stop    <-chan struct{}
	clk     *clock.Manual
	advance time.Duration // moved on the clock by every call, when set

	mu       sync.Mutex
	blocked  int // slow calls in progress
	returned int // slow calls that returned
}

func (*slowAdapter) Spec() KindSpec                         { return KindSpec{Name: "s", Class: IdempotentReceiver} }
func (*slowAdapter) Validate(string, json.RawMessage) error { return nil }

func (s *slowAdapter) Execute(_ context.Context, att *Attempt) Result {
	if s.advance > 0 {
		s.clk.Advance(s.advance)
	}
	var p struct{ Slow bool }
	_ = json.Unmarshal(att.Action.Payload, &p)
	if !p.Slow {
		return Done("")
	}
	s.mu.Lock()
	s.blocked++
	s.mu.Unlock()
	select {
	case <-s.release:
	case <-s.stop:
	}
	s.mu.Lock()
	s.blocked--
	s.returned++
	s.mu.Unlock()
	return Done("")
}

func (s *slowAdapter) calls() (blocked, returned int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.blocked, s.returned
}

// zeroSource draws numbers whose low 3 bits are 0, so that IntN of 8 (a
// power of two: the low bits) is always 0; other draws vary.
type zeroSource struct{ n *atomic.Uint64 }

func (z zeroSource) Uint64() uint64 {
	x := z.n.Add(0x9e3779b97f4a7c15)
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return (x ^ (x >> 31)) &^ 7
}

// fairBundle is an engine on the given partitions with slowAdapter.
type fairBundle struct {
	e       *Engine
	clk     *clock.Manual
	s       *slowAdapter
	release chan struct{}
	stop    <-chan struct{}
}

func newFairBundle(t *testing.T, partitions int) *fairBundle {
	t.Helper()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	b := &fairBundle{clk: clk, release: make(chan struct{}), stop: watchdog(t)}
	b.s = &slowAdapter{release: b.release, stop: b.stop, clk: clk}
	t.Cleanup(func() {
		select {
		case <-b.release:
		default:
			close(b.release)
		}
	})
	reg := NewRegistry()
	require.NoError(t, reg.Register(b.s))
	// A sweep of 8 partitions starts at partition 0 (zeroSource) and
	// visits them in order.
	e, err := New(ddblocal.New(ddblocal.WithClock(clk)), clk, reg, Config{Table: "ferry", Partitions: partitions},
		WithRand(rand.New(zeroSource{n: &atomic.Uint64{}})))
	require.NoError(t, err)
	require.NoError(t, e.EnsureTable(context.Background()))
	b.e = e
	return b
}

// enqueue enqueues an action of lane `lane` (in the partition it hashes
// to): slow or not.
func (b *fairBundle) enqueue(t *testing.T, lane string, slow bool) Action {
	t.Helper()
	pl := `{"slow":false}`
	if slow {
		pl = `{"slow":true}`
	}
	r, err := b.e.Enqueue(context.Background(), EnqueueParams{Kind: "s", WorkspaceID: "ws", LaneKey: lane, Payload: []byte(pl)})
	require.NoError(t, err)
	return r.Action
}

// laneIn returns a lane key that starts in partition p.
func laneIn(p, partitions int, prefix string) string {
	for i := 0; ; i++ {
		if k := prefix + "-" + strconv.Itoa(i); LanePartition("ws", k, partitions) == p {
			return k
		}
	}
}

// awaitDone waits until the action is DONE while the slow calls stay
// blocked, and fails when the watchdog fires first.
func (b *fairBundle) awaitDone(t *testing.T, id string) {
	t.Helper()
	for {
		a, err := b.e.ActionGet(context.Background(), id)
		require.NoError(t, err)
		if a.State == StateDONE {
			_, returned := b.s.calls()
			require.Zero(t, returned, "no slow call returned: the action did not wait for one")
			return
		}
		select {
		case <-b.stop:
			t.Fatalf("action %s did not end while the slow calls were blocked (state %s)", id, a.State)
		default:
			time.Sleep(time.Millisecond)
		}
	}
}

// TestSweepIsNotHeldBySlowPartitions is issue 28, item 4 in the engine: a
// sweep probing two partitions at once, with a provider call blocked in
// each of seven partitions, still drains the eighth: a partition whose
// drain runs its claims gives its place to the next one. The sweep starts
// at partition 0, so the fast action's partition comes last.
func TestSweepIsNotHeldBySlowPartitions(t *testing.T) {
	t.Parallel()
	b := newFairBundle(t, 8)
	for p := range 7 {
		b.enqueue(t, laneIn(p, 8, "slow"), true)
	}
	fast := b.enqueue(t, laneIn(7, 8, "fast"), false)
	done := make(chan error, 1)
	go func() {
		_, err := b.e.Sweep(context.Background(), DrainParams{Partitions: 2})
		done <- err
	}()
	b.awaitDone(t, fast.ID)
	close(b.release)
	require.NoError(t, <-done)
}

// TestSlowCallHoldsOnlyItsOwnLaneGroup: in one partition, eight blocked
// provider calls do not keep a ninth action of the same batch waiting:
// every lane group of a batch runs at once by default.
func TestSlowCallHoldsOnlyItsOwnLaneGroup(t *testing.T) {
	t.Parallel()
	b := newFairBundle(t, 1)
	for i := range 8 {
		b.enqueue(t, "slow-"+strconv.Itoa(i), true)
	}
	fast := b.enqueue(t, "fast", false)
	done := make(chan error, 1)
	go func() {
		_, err := b.e.DrainPartition(context.Background(), 0, DrainParams{})
		done <- err
	}()
	b.awaitDone(t, fast.ID)
	close(b.release)
	require.NoError(t, <-done)
}

// TestClaimUntilEndsClaimingNotTheBatch: once ClaimUntil passed, a drain
// claims no further batch (More says work is left); the batch it claimed
// runs to its end.
func TestClaimUntilEndsClaimingNotTheBatch(t *testing.T) {
	t.Parallel()
	b := newFairBundle(t, 1)
	b.s.advance = 10 * time.Second
	var ids []string
	for i := range 5 {
		ids = append(ids, b.enqueue(t, "l-"+strconv.Itoa(i), false).ID)
	}
	until := b.clk.Now().Add(5 * time.Second)
	r, err := b.e.DrainPartition(context.Background(), 0, DrainParams{BatchSize: 2, ClaimUntil: until})
	require.NoError(t, err)
	require.Equal(t, 2, r.Claimed, "one batch: its calls took the clock past ClaimUntil")
	require.Equal(t, 2, r.Ended)
	require.True(t, r.More, "work is left")
	r, err = b.e.DrainPartition(context.Background(), 0, DrainParams{BatchSize: 2})
	require.NoError(t, err)
	require.Equal(t, 3, r.Claimed, "without a bound the rest is claimed")
	for _, id := range ids {
		a, err := b.e.ActionGet(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, StateDONE, a.State)
	}
}
