// Command ferry-sim runs the deterministic simulator over many seeds and
// prints a summary table; with -seed it replays one seed and prints its
// trace. `make sim SEEDS=N STEPS=M` runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ferryhq/ferry/internal/sim"
)

func main() {
	seeds := flag.Int("seeds", 100, "how many seeds to run")
	first := flag.Uint64("first", 1, "the first seed")
	steps := flag.Int("steps", 500, "steps per seed")
	seed := flag.Uint64("seed", 0, "replay this one seed and print its trace")
	broken := flag.Uint("broken", 0, "run a deliberately broken variant (sim.Broken bits), to see a checker fail")
	repart := flag.Bool("repartition", false, "change the partition count mid-run: rolling deploys of new counts, up and down (sim.Options.Repartition, ADR 0011)")
	exh := flag.Bool("exhaustive", false, "explore every schedule of small worlds within bounds (sim.Explore): a table of schedules and worlds covered")
	worlds := flag.String("world", "", "with -exhaustive: the worlds to explore, comma separated (default all: "+strings.Join(sim.ExploreWorlds(), ", ")+")")
	faults := flag.Int("faults", -1, "with -exhaustive: faults per schedule (crash, lost answer, conflict storm); -1: each world's own")
	preempts := flag.Int("preemptions", -1, "with -exhaustive: preemptions per schedule; -1: each world's own")
	limit := flag.Int("limit", 0, "with -exhaustive: stop a world after this many schedules (0: none)")
	schedule := flag.String("schedule", "", "with -exhaustive and one -world: replay this schedule and print its trace")
	killEnq := flag.Bool("kill-enqueues", false, "kill enqueue processes between their DynamoDB calls (sim.Options.KillEnqueues)")
	mutants := flag.Bool("mutants", false, "run every planted bug (sim.Variants) on -seeds seeds from -first, each in the mode it needs, and print guard -> variant -> seeds caught")
	only := flag.String("variant", "", "with -mutants: run only the variants of these names (comma separated)")
	flag.Parse()
	if *exh {
		opt := sim.ExploreOptions{MaxFaults: *faults, MaxPreemptions: *preempts, Limit: *limit, Broken: sim.Broken(*broken)}
		if *worlds != "" {
			opt.Worlds = strings.Split(*worlds, ",")
		}
		os.Exit(exhaustive(os.Stdout, opt, *schedule))
	}
	if *mutants {
		os.Exit(runMutants(*first, *seeds, *steps, *only))
	}
	if *seed != 0 {
		r := sim.Run(sim.Options{Seed: *seed, Steps: *steps, Broken: sim.Broken(*broken), Repartition: *repart, KillEnqueues: *killEnq})
		os.Stdout.Write(r.Trace)
		if r.Failed() {
			os.Exit(1)
		}
		return
	}
	start := time.Now()
	s := sim.RunManyWith(*first, *seeds, sim.Options{Steps: *steps, Broken: sim.Broken(*broken), Repartition: *repart, KillEnqueues: *killEnq},
		func(done int) { bar(done, *seeds, start) })
	fmt.Fprintln(os.Stderr)
	s.WriteTable(os.Stdout)
	fmt.Printf("%-48s %10s\n", "wall time", time.Since(start).Round(time.Millisecond))
	if s.Violations > 0 {
		os.Exit(1)
	}
}

// runMutants prints the catch table of the planted bugs; it fails when a
// variant is caught in fewer than 16 of 20 seeds (or the same share of
// another count), the bar of issue 27.
func runMutants(first uint64, seeds, steps int, only string) int {
	vs := sim.Variants
	if only != "" {
		vs = nil
		for _, v := range sim.Variants {
			if slices.Contains(strings.Split(only, ","), v.Name) {
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 {
			fmt.Fprintf(os.Stderr, "ferry-sim: -variant %q names no variant of sim.Variants\n", only)
			return 2
		}
	}
	start := time.Now()
	rates := sim.CatchRates(vs, first, seeds, steps, func(done, total int) { bar(done, total, start) })
	fmt.Fprintln(os.Stderr)
	fmt.Printf("planted bugs: seeds %d..%d, %d steps each\n", first, first+uint64(seeds)-1, steps)
	sim.WriteCatchTable(os.Stdout, rates)
	fmt.Printf("%-48s %10s\n", "wall time", time.Since(start).Round(time.Millisecond))
	weak := 0
	for _, r := range rates {
		if r.Caught*20 < r.Seeds*16 {
			weak++
		}
	}
	if weak > 0 {
		fmt.Printf("%d variants caught in fewer than 16 of 20 seeds\n", weak)
		return 1
	}
	return 0
}

func bar(done, total int, start time.Time) {
	const width = 40
	n := done * width / max(total, 1)
	fmt.Fprintf(os.Stderr, "\r[%s%s] %d/%d seeds %s", strings.Repeat("#", n), strings.Repeat(".", width-n), done, total,
		time.Since(start).Round(time.Second))
}
