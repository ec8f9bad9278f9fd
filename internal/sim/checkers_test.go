package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
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
		seeds  uint64 // seeds tried; default 60
		// repartition: run with Options.Repartition (its final checks,
		// ADR 0011).
		repartition bool
	}{
		{"NoEpochCondition", BreakEpochCondition, []string{"fencing"}, 0, false},
		{"NoPredecessorCheck", BreakPredecessorCheck, []string{"lanes"}, 0, false},
		{"NoClaimFence", BreakClaimFence, []string{"claim-fence"}, 0, false},
		{"ProviderCalledTwice", BreakProviderTwice, []string{"at-most-once"}, 0, false},
		{"PayloadKept", BreakKeepPayload, []string{"ended-shape"}, 0, false},
		{"AcknowledgedButNotWritten", BreakDropPut, []string{"nothing-lost"}, 0, false},
		{"OldBuildTouchesUnknownRows", BreakOldBuildKnowsAll, []string{"rolling-upgrade"}, 0, false},
		{"ReaperBlind", BreakReaperBlind, []string{"liveness"}, 0, false},
		// About one seed in 25 catches it (2 of seeds 1-60 before design.md §3.3,
		// 10 of 1-240 after; any engine change moves the runs): try more.
		{"ClockSkewBeyondBound", BreakSkewBound, []string{"fence-margin", "fencing", "lanes"}, 240, false},
		{"ResendAfterAccept", BreakIdemResend, []string{"idempotent-duplicates"}, 0, false},
		{"ReadBackBlind", BreakReadBackBlind, []string{"exactly-once"}, 0, false},
		{"NoIdempotencyRecord", BreakNoIdempotencyRecord, []string{"idempotency"}, 0, false},
		{"JournalDropped", BreakDropJournal, []string{"retention-journal"}, 0, false},
		{"InflightEntriesLost", BreakInflightLost, []string{"tracking"}, 0, false},
		// About one seed in 80 catches it (v0.1.0: seeds 102, 136, 138 of
		// 1-240; after ADR 0019's ends that drop their prev, 136, 138 of
		// 1-240, 6 of 1-480): try more. Issue 27 item 4 makes it common.
		{"DeferralsUnbounded", BreakUnboundedDeferrals, []string{"deferral-bound"}, 240, false},
		{"RecordStripSkipped", BreakSkipRecordStrip, []string{"ended-shape"}, 0, false},
		{"RetiredWithRowsLeft", BreakRetireKeptBlind, []string{"retired-empty"}, 0, true},
		{"TailNamesAnotherPartition", BreakTailLies, []string{"one-tail"}, 0, true},
		// Only a stale tail read (ADR 0017) makes the missing condition
		// matter: the simulator's enqueues run one at a time.
		{"TailPutUnconditioned", BreakTailCondition, []string{"lanes"}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var seen []string
			n := tc.seeds
			if n == 0 {
				n = 60
			}
			for seed := uint64(1); seed <= n; seed++ {
				r := Run(Options{Seed: seed, Steps: 300, Broken: tc.broken, Repartition: tc.repartition})
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

// TestFencingCheckOfClaimFencedCalls pins how the fencing checker judges a
// provider call for an erased row (design.md §5): it passes only for an
// idempotent receiver whose claim of that epoch, by the caller, set the
// fence and committed before the erasure.
func TestFencingCheckOfClaimFencedCalls(t *testing.T) {
	t.Parallel()
	claim := claimRec{owner: "d1", fenced: true, at: 5}
	cases := []struct {
		name   string
		kind   string
		claims map[int64]claimRec
		gone   string
		ok     bool
	}{
		{"ErasedAfterItsClaim", kindIdem, map[int64]claimRec{3: claim}, "erased", true},
		{"ErasedBeforeItsClaim", kindIdem, map[int64]claimRec{3: {owner: "d1", fenced: true, at: 12}}, "erased", false},
		{"ClaimDidNotFence", kindIdem, map[int64]claimRec{3: {owner: "d1", at: 5}}, "erased", false},
		{"NoClaimOfThatEpoch", kindIdem, map[int64]claimRec{2: claim}, "erased", false},
		{"ClaimOfAnotherHolder", kindIdem, map[int64]claimRec{3: {owner: "d2", fenced: true, at: 5}}, "erased", false},
		{"ReadBackKind", kindRB, map[int64]claimRec{3: claim}, "erased", false},
		{"AtMostOnceKind", kindAMO, map[int64]claimRec{3: claim}, "erased", false},
		{"DeletedByRetention", kindIdem, map[int64]claimRec{3: claim}, "deleted by retention", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(Options{Seed: 1, Steps: 1})
			tok := &token{name: "t1", kind: tc.kind, maybeSent: map[string]bool{}}
			w.rows["0-1"] = &row{id: "0-1", tok: tok, gone: tc.gone, goneAt: 10, claims: tc.claims}
			p := &proc{name: "d1@new1", kind: "drainer", owner: "d1", pending: map[*callRec]bool{}}
			w.checkCallStart(p, tok, &outbox.Attempt{Action: outbox.Action{ID: "0-1", Partition: 0, Seq: 1, Epoch: 3}})
			if tc.ok {
				require.Empty(t, w.res.Violations)
				return
			}
			require.Len(t, w.res.Violations, 1)
			require.Equal(t, "fencing", w.res.Violations[0].Check)
		})
	}
}
