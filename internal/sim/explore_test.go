package sim

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExhaustiveShort is the exhaustive mode's CI budget: every world with
// no fault and no preemption (every order of its processes, each run to
// its end), and the hole and erase worlds with one fault anywhere. The
// full run is make sim-exhaustive.
func TestExhaustiveShort(t *testing.T) {
	if raceEnabled {
		t.Skip("the exhaustive mode replays thousands of schedules; sim-ci runs it without -race")
	}
	for _, c := range []struct {
		worlds    []string
		faults    int
		preempts  int
		schedules int // at least
	}{
		{nil, 0, 0, 300},
		{[]string{"hole", "erase", "held"}, 1, 0, 1500},
	} {
		stats, err := Explore(ExploreOptions{Worlds: c.worlds, MaxFaults: c.faults, MaxPreemptions: c.preempts})
		require.NoError(t, err)
		runs := 0
		for _, s := range stats {
			runs += s.Runs
			require.Positive(t, s.Complete, "world %s: no schedule ran to its end", s.World)
			require.False(t, s.Limited)
			for _, v := range s.Violations {
				t.Errorf("world %s: %s\nreplay: go run ./internal/sim/cmd/ferry-sim -exhaustive -world %s -schedule %s\n%s",
					s.World, v.Violation, s.World, v.Schedule, v.Trace)
			}
			t.Logf("%-7s %dF %dP: %d schedules (%d whole, %d cut, %d asleep), %d states, %s",
				s.World, s.Faults, s.Preempts, s.Runs, s.Complete, s.Cut, s.Asleep, s.States, s.Elapsed)
		}
		require.GreaterOrEqual(t, runs, c.schedules)
	}
}

// TestExhaustiveFindsTheChainCut: with held lane members given their TTL
// (the engine before ADR 0019), the hole world's exploration finds the
// deletion that cuts the lane's chain while its head is a proposal —
// issue 27's lane-order hole — within its first couple of thousand
// schedules.
func TestExhaustiveFindsTheChainCut(t *testing.T) {
	if raceEnabled {
		t.Skip("sim-ci runs it without -race")
	}
	stats, err := Explore(ExploreOptions{Worlds: []string{"hole"}, MaxFaults: -1, MaxPreemptions: -1, Broken: BreakHeldTTL, Limit: 5000})
	require.NoError(t, err)
	require.NotEmpty(t, stats[0].Violations, "the chain cut was not found in %d schedules", stats[0].Runs)
	v := stats[0].Violations[0]
	require.Equal(t, "lanes", v.Violation.Check, "%s", v.Violation)
	require.Contains(t, v.Violation.Msg, "the lane's chain is cut")
	t.Logf("found after %d schedules: %s (schedule %s)", stats[0].Runs, v.Violation, v.Schedule)
	// The schedule replays to the same violation.
	r := ReplaySchedule("hole", BreakHeldTTL, v.Schedule)
	require.True(t, r.Failed())
	require.Equal(t, v.Violation.Msg, r.Violations[0].Msg)
	require.True(t, bytes.Equal(r.Trace, ReplaySchedule("hole", BreakHeldTTL, v.Schedule).Trace), "a replay is deterministic")
	// The real engine holds the member: the same schedule breaks nothing.
	require.False(t, ReplaySchedule("hole", 0, v.Schedule).Failed())
}

// TestHeldListingOutlivesAPausedEnder replays the schedule of world hole
// that the exhaustive mode found once retention ran past its clock step:
// the reaper lists a member it is about to hold (H#), pauses past the
// retention period before its end, and retention meets the listing with
// the row still live. It deleted the listing, and the held end that
// landed after it was listed nowhere, kept for good (retention-journal);
// now retention lists the live row again.
func TestHeldListingOutlivesAPausedEnder(t *testing.T) {
	const schedule = "0,0,0,0,0,0,0,0,0,0,0,0s,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1,2,2,2,2,2,2,2,0,0,3,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4"
	r := ReplaySchedule("hole", 0, schedule)
	for _, v := range r.Violations {
		t.Errorf("%s", v)
	}
	require.Contains(t, string(r.Trace), "retain         > DeleteItem P#0/H#", "retention met the listing")
	require.Contains(t, string(r.Trace), "reap: uncertain 0 exhausted 0 expired 1", "the reaper's end landed after it")
}
