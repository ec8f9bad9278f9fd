package sim

import (
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestRepartitionIsCaughtByTheCheckers changes the partition count mid-run
// (Options.Repartition: a rolling deploy of a new count, up and down) and
// requires the checkers to catch what that breaks today: docs/deploy.md
// says to drain to an empty backlog before a change of partitions, and ADR
// 0011 (proposed) is the design that would make it safe. When that lands,
// this test turns into its judge: it then requires no violation.
func TestRepartitionIsCaughtByTheCheckers(t *testing.T) {
	seeds, steps := uint64(40), 400
	if raceEnabled {
		seeds = 8 // the race detector slows the simulation about tenfold
	}
	found := map[string]int{}
	failed := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		r := Run(Options{Seed: seed, Steps: steps, Repartition: true})
		if r.Ops["repartition"] == 0 {
			t.Fatalf("seed %d: no repartition step in %d steps", seed, steps)
		}
		if r.Failed() {
			failed++
			for _, v := range r.Violations {
				found[v.Check]++
			}
		}
	}
	var checks []string
	for c, n := range found {
		checks = append(checks, c+"="+strconv.Itoa(n))
	}
	sort.Strings(checks)
	t.Logf("%d of %d seeds with a live change of partitions broke an invariant: %s", failed, seeds, strings.Join(checks, " "))
	if failed == 0 {
		t.Fatalf("no checker caught a live change of partitions in %d seeds: either the engine supports it now (ADR 0011: make this test require 0 violations) or the driver does not change anything", seeds)
	}
}
