//go:build otherbuild

// Command ferry-sim-other runs the simulator with another build's engine
// on the older build's host (sim.Options.OtherBuild): the packages
// ferry-othergen wrote under internal/sim/otherbuild/ (design.md §15).
//
//	go run ./internal/sim/cmd/ferry-othergen -ref v0.1.0
//	go run -tags otherbuild ./internal/sim/cmd/ferry-sim-other -seeds 200 -steps 1000
//
// It prints ferry-sim's summary and exits 1 when a checker found a
// violation; -seed replays one seed's trace.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ferryhq/ferry/internal/sim"
	"github.com/ferryhq/ferry/internal/sim/othersim"
)

func main() {
	seeds := flag.Int("seeds", 100, "how many seeds to run")
	first := flag.Uint64("first", 1, "the first seed")
	steps := flag.Int("steps", 500, "steps per seed")
	seed := flag.Uint64("seed", 0, "replay this one seed and print its trace")
	repart := flag.Bool("repartition", false, "change the partition count mid-run (sim.Options.Repartition)")
	flag.Parse()
	opt := sim.Options{Steps: *steps, Repartition: *repart, OtherBuild: othersim.Build}
	if *seed != 0 {
		opt.Seed = *seed
		r := sim.Run(opt)
		os.Stdout.Write(r.Trace)
		if r.Failed() {
			os.Exit(1)
		}
		return
	}
	s := sim.RunManyWith(*first, *seeds, opt, nil)
	s.WriteTable(os.Stdout)
	if s.Violations > 0 {
		fmt.Printf("violations: %d (replay one: go run -tags otherbuild ./internal/sim/cmd/ferry-sim-other -seed N -steps %d)\n", s.Violations, *steps)
		os.Exit(1)
	}
}
