package outbox

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A hold's remembered blocked run (ADR 0012 part 3) goes when one of its
// actions goes back into the due index at or before the run's last key, and
// stays for one that goes back after it; what the next fence write does
// follows.
func TestBlockedRunDroppedByAReleaseInsideIt(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	run := blockedRun{sk: timeSK(now.Add(-time.Hour), 40), until: now.Add(time.Minute)}

	h := newFenceHold(0, "me", 1, nil)
	h.blk = run // as read from the fence row
	got, ok := h.blocked(now)
	require.True(t, ok)
	require.Equal(t, run, got)
	require.Equal(t, blkWrite{}, h.blkPending(), "nothing to write: the row has it")

	h.releasedAt(timeSK(now.Add(-time.Hour), 41)) // after the run
	_, ok = h.blocked(now)
	require.True(t, ok)

	h.releasedAt(timeSK(now.Add(-2*time.Hour), 7)) // inside the run
	_, ok = h.blocked(now)
	require.False(t, ok, "claims read from the front again")
	w := h.blkPending()
	require.True(t, w.drop)
	set, rm := w.render(nil, nil, map[string]string{}, nil)
	require.Empty(t, set)
	require.Equal(t, []string{"#blk"}, rm)
	h.wroteBlk(w)
	require.Equal(t, blkWrite{}, h.blkPending())

	// A run this hold remembers is written, and expires by itself.
	h.remember(run)
	w = h.blkPending()
	require.NotNil(t, w.set)
	h.wroteBlk(w)
	require.Equal(t, run, h.blk)
	_, ok = h.blocked(run.until)
	require.False(t, ok, "not past its until")
}

func TestNextSKIsTheSmallestKeyAfter(t *testing.T) {
	at := time.UnixMilli(1_780_000_000_123)
	sk := timeSK(at, 41)
	require.Equal(t, timeSK(at, 42), nextSK(sk))
	require.Greater(t, nextSK(sk), sk)
	require.Less(t, nextSK(sk), timeSK(at.Add(time.Millisecond), 0))
}
