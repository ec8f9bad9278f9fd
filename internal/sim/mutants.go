package sim

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
)

// Variant is one planted bug: a Broken bit, the guard of design.md §11 it
// removes, the checkers that must catch it, and the mode it needs.
type Variant struct {
	Name   string // the name TestCheckersCatchBrokenEngines runs it under
	Broken Broken
	Guard  string   // the guard of design.md §11 it removes
	Checks []string // a violation of one of these catches it
	// Repartition: the variant needs Options.Repartition (its final
	// checks, ADR 0011).
	Repartition bool
}

// Variants lists every planted bug, one per guard of design.md §11;
// `make sim-mutants` prints how many fresh seeds catch each.
var Variants = []Variant{
	{"NoEpochCondition", BreakEpochCondition, "4 fencing: epoch and owner on every holder write", []string{"fencing"}, false},
	{"NoPredecessorCheck", BreakPredecessorCheck, "3 lanes: the claim's predecessor check", []string{"lanes"}, false},
	{"NoClaimFence", BreakClaimFence, "4 fencing: the partition's claim fence", []string{"claim-fence"}, false},
	{"ProviderCalledTwice", BreakProviderTwice, "2 at most once: one call per at-most-once action", []string{"at-most-once"}, false},
	{"PayloadKept", BreakKeepPayload, "10 privacy: an ended action keeps no payload", []string{"ended-shape"}, false},
	{"AcknowledgedButNotWritten", BreakDropPut, "1 nothing lost: an acknowledged enqueue is written", []string{"nothing-lost"}, false},
	{"OldBuildTouchesUnknownRows", BreakOldBuildKnowsAll, "8 rolling upgrades: a build touches only rows it decodes", []string{"rolling-upgrade"}, false},
	{"ReaperBlind", BreakReaperBlind, "1 nothing lost: the reaper finds expired leases", []string{"liveness"}, false},
	{"ClockSkewBeyondBound", BreakSkewBound, "7 fence margin: clock skew within its bound", []string{"fence-margin", "fencing", "lanes"}, false},
	{"ResendAfterAccept", BreakIdemResend, "6 idempotent receiver: no resend without an ambiguity", []string{"idempotent-duplicates"}, false},
	{"ReadBackBlind", BreakReadBackBlind, "2 exactly once: the read-back before a resend", []string{"exactly-once"}, false},
	{"NoIdempotencyRecord", BreakNoIdempotencyRecord, "6 idempotency: the idempotency record", []string{"idempotency"}, false},
	{"JournalDropped", BreakDropJournal, "§3.6 journal covers every end", []string{"retention-journal"}, false},
	{"InflightEntriesLost", BreakInflightLost, "§3.3 in-flight map", []string{"tracking"}, false},
	{"DeferralsUnbounded", BreakUnboundedDeferrals, "§7.2 bounded deferrals", []string{"deferral-bound"}, false},
	{"RecordStripSkipped", BreakSkipRecordStrip, "10 privacy: the record's copy stripped at the end", []string{"ended-shape"}, false},
	{"RetiredWithRowsLeft", BreakRetireKeptBlind, "§3.12 a partition retires only when empty", []string{"retired-empty"}, true},
	{"TailNamesAnotherPartition", BreakTailLies, "§3.12 one tail per lane, naming its members' partition", []string{"one-tail", "lanes", "listing"}, true},
	{"TailPutUnconditioned", BreakTailCondition, "3 lanes: the enqueue's conditioned tail put", []string{"lanes", "listing"}, false},
	{"AdmitFromAnyState", BreakAdmitAnyState, "state machine: a transition names the state it leaves", []string{"ended-final", "fencing", "bad-input"}, false},
	{"AdmittedOutOfDue", BreakDueKeysDropped, "§3.3 an ADMITTED action is in the due index", []string{"admitted-in-due"}, false},
	{"CallerItemsWithoutAction", BreakItemsWithoutAction, "1 nothing lost: the caller's transaction holds its action (§4.5)", []string{"caller-tx", "nothing-lost"}, false},
	{"EvidenceOutlivesErasure", BreakEvidenceKept, "10 privacy: evidence goes with its action (§3.9)", []string{"evidence"}, false},
	{"ListingSkipsAnEntry", BreakListingSkips, "listing: every action listed exactly once (§3.11)", []string{"listing"}, false},
}

// Caught reports whether r found a violation of one of v's checkers.
func (v Variant) Caught(r *Result) bool {
	for _, x := range r.Violations {
		if slices.Contains(v.Checks, x.Check) {
			return true
		}
	}
	return false
}

// CatchRate is how many seeds of a range caught one variant.
type CatchRate struct {
	Variant Variant
	Seeds   int
	Caught  int // by one of its checkers
	Other   int // by another checker only
}

// CatchRates runs every variant on seeds first..first+n-1 of steps steps
// each (in the mode it needs) on every core, calling progress after each
// run, and returns how many seeds caught each.
func CatchRates(vs []Variant, first uint64, n, steps int, progress func(done, total int)) []CatchRate {
	out := make([]CatchRate, len(vs))
	type job struct {
		i    int
		seed uint64
	}
	jobs := make(chan job)
	var mu sync.Mutex
	var wg sync.WaitGroup
	done := 0
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				v := vs[j.i]
				r := Run(Options{Seed: j.seed, Steps: steps, Broken: v.Broken, Repartition: v.Repartition})
				mu.Lock()
				out[j.i].Seeds++
				switch {
				case v.Caught(r):
					out[j.i].Caught++
				case r.Failed():
					out[j.i].Other++
				}
				done++
				if progress != nil {
					progress(done, len(vs)*n)
				}
				mu.Unlock()
			}
		}()
	}
	for i, v := range vs {
		out[i].Variant = v
		for s := range uint64(n) {
			jobs <- job{i, first + s}
		}
	}
	close(jobs)
	wg.Wait()
	return out
}

// WriteCatchTable writes the table guard -> variant -> seeds caught.
func WriteCatchTable(w io.Writer, rates []CatchRate) {
	fmt.Fprintf(w, "%-58s %-28s %-12s %7s %6s\n", "guard (design.md §11)", "variant", "mode", "caught", "other")
	for _, c := range rates {
		mode := "standard"
		if c.Variant.Repartition {
			mode = "repartition"
		}
		fmt.Fprintf(w, "%-58s %-28s %-12s %3d/%-3d %6d\n", c.Variant.Guard, c.Variant.Name, mode, c.Caught, c.Seeds, c.Other)
	}
}
