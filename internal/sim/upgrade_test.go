package sim

import (
	"testing"
)

// TestUpgradeBesideOlderBuildsBreaksNothing runs the deploy of ADR 0011 on
// a table an older build wrote (Options.Upgrade: a model of the build
// before ADR 0011 enqueues laned actions beside the new build until the
// deploy ends) and requires no violation. Before the new build started
// lanes with their tails where the older one looks (tailShared), most of
// these seeds broke lane order: seed 40 at 400 steps (`ferry-sim -seed 40
// -steps 400 -upgrade` on main bb688e6): 0-9 of lane w1/c, started by the
// older build behind no member, ran while 0-1, which a new build had
// started with its own tail item, was live.
func TestUpgradeBesideOlderBuildsBreaksNothing(t *testing.T) {
	seeds, steps := uint64(40), 400
	if raceEnabled {
		seeds = 8 // the race detector slows the simulation about tenfold
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		r := Run(Options{Seed: seed, Steps: steps, Upgrade: true})
		if r.Failed() {
			t.Fatalf("seed %d: %v\nreplay: go run ./internal/sim/cmd/ferry-sim -seed %d -steps %d -upgrade", seed, r.Violations, seed, steps)
		}
	}
	// The model runs, and a run takes the migration to its end.
	r := Run(Options{Seed: 40, Steps: 1000, Upgrade: true})
	if r.Failed() {
		t.Fatalf("seed 40: %v", r.Violations)
	}
	if r.Faults["build.pre_adr0011_enqueue"] == 0 || r.Faults["upgrade.tails_own"] != 1 {
		t.Fatalf("seed 40: older-build enqueues %d, tails own %d", r.Faults["build.pre_adr0011_enqueue"], r.Faults["upgrade.tails_own"])
	}
}
