package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckersCatchBrokenEngines runs the simulator against deliberately
// broken variants and requires the named checker to fail on some seed of a
// small range: a checker that cannot fail proves nothing.
func TestCheckersCatchBrokenEngines(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		broken Broken
		check  []string
	}{
		{"NoEpochCondition", BreakEpochCondition, []string{"fencing"}},
		{"NoPredecessorCheck", BreakPredecessorCheck, []string{"lanes"}},
		{"NoClaimFence", BreakClaimFence, []string{"claim-fence"}},
		{"ProviderCalledTwice", BreakProviderTwice, []string{"at-most-once"}},
		{"PayloadKept", BreakKeepPayload, []string{"ended-shape"}},
		{"AcknowledgedButNotWritten", BreakDropPut, []string{"nothing-lost"}},
		{"OldBuildTouchesUnknownRows", BreakOldBuildKnowsAll, []string{"rolling-upgrade"}},
		{"ReaperBlind", BreakReaperBlind, []string{"liveness"}},
		{"ClockSkewBeyondBound", BreakSkewBound, []string{"fence-margin", "fencing", "lanes"}},
		{"ResendAfterAccept", BreakIdemResend, []string{"idempotent-duplicates"}},
		{"ReadBackBlind", BreakReadBackBlind, []string{"exactly-once"}},
		{"NoIdempotencyRecord", BreakNoIdempotencyRecord, []string{"idempotency"}},
		{"JournalDropped", BreakDropJournal, []string{"retention-journal"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var seen []string
			for seed := uint64(1); seed <= 60; seed++ {
				r := Run(Options{Seed: seed, Steps: 300, Broken: tc.broken})
				for _, v := range r.Violations {
					for _, c := range tc.check {
						if v.Check == c {
							require.Contains(t, string(r.Trace), "VIOLATION "+c)
							require.Contains(t, string(r.Trace), "replay: ")
							return
						}
					}
					seen = append(seen, fmt.Sprintf("seed %d %s", seed, v))
				}
			}
			t.Fatalf("no seed made %v fail; other violations: %v", tc.check, seen)
		})
	}
}
