// Command ferry-sim runs the deterministic simulator over many seeds and
// prints a summary table; with -seed it replays one seed and prints its
// trace. `make sim SEEDS=N STEPS=M` runs it.
package main

import (
	"flag"
	"fmt"
	"os"
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
	flag.Parse()
	if *seed != 0 {
		r := sim.Run(sim.Options{Seed: *seed, Steps: *steps, Broken: sim.Broken(*broken), Repartition: *repart})
		os.Stdout.Write(r.Trace)
		if r.Failed() {
			os.Exit(1)
		}
		return
	}
	start := time.Now()
	s := sim.RunManyWith(*first, *seeds, sim.Options{Steps: *steps, Broken: sim.Broken(*broken), Repartition: *repart},
		func(done int) { bar(done, *seeds, start) })
	fmt.Fprintln(os.Stderr)
	s.WriteTable(os.Stdout)
	fmt.Printf("%-48s %10s\n", "wall time", time.Since(start).Round(time.Millisecond))
	if s.Violations > 0 {
		os.Exit(1)
	}
}

func bar(done, total int, start time.Time) {
	const width = 40
	n := done * width / max(total, 1)
	fmt.Fprintf(os.Stderr, "\r[%s%s] %d/%d seeds %s", strings.Repeat("#", n), strings.Repeat(".", width-n), done, total,
		time.Since(start).Round(time.Second))
}
