package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ferryhq/ferry/internal/sim"
)

// exhaustive runs the exhaustive mode (sim.Explore) and prints, per
// world, what it covered and found; it returns the exit code.
func exhaustive(out io.Writer, opt sim.ExploreOptions, schedule string) int {
	if schedule != "" {
		if len(opt.Worlds) != 1 {
			fmt.Fprintln(os.Stderr, "ferry-sim: -schedule needs exactly one -world")
			return 2
		}
		r := sim.ReplaySchedule(opt.Worlds[0], opt.Broken, schedule)
		out.Write(r.Trace)
		if r.Failed() {
			return 1
		}
		return 0
	}
	start := time.Now()
	opt.Progress = func(s sim.ExploreStats) {
		fmt.Fprintf(os.Stderr, "\r%-8s %9d schedules (%d whole, %d cut, %d asleep) %9d states %s   ",
			s.World, s.Runs, s.Complete, s.Cut, s.Asleep, s.States, time.Since(start).Round(time.Second))
	}
	stats, err := sim.Explore(opt)
	fmt.Fprintln(os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ferry-sim:", err)
		return 2
	}
	code := 0
	total := 0
	fmt.Fprintf(out, "%-8s %10s %10s %10s %10s %10s %9s %9s %10s %s\n", "world", "schedules", "whole", "cut", "asleep", "states", "max-steps", "bounds", "time", "violations")
	for _, s := range stats {
		total += s.Runs
		lim := ""
		if s.Limited {
			lim = " (limit)"
		}
		fmt.Fprintf(out, "%-8s %10d %10d %10d %10d %10d %9d %4df %2dp %10s %d%s\n", s.World, s.Runs, s.Complete, s.Cut, s.Asleep, s.States,
			s.MaxDepth, s.Faults, s.Preempts, s.Elapsed.Round(time.Millisecond), len(s.Violations), lim)
	}
	fmt.Fprintf(out, "%-8s %10d schedules in %s (CPU %s: the time depends on what else runs)\n", "total", total,
		time.Since(start).Round(time.Millisecond), cpuTime().Round(100*time.Millisecond))
	fmt.Fprintln(out, "worlds covered:")
	seen := map[string]bool{}
	for _, s := range stats {
		if !seen[s.World] {
			seen[s.World] = true
			fmt.Fprintf(out, "  %-8s %s\n           processes: %s\n", s.World, s.About, strings.Join(s.Procs, ", "))
		}
	}
	broken := ""
	if opt.Broken != 0 {
		broken = fmt.Sprintf(" -broken %d", uint32(opt.Broken))
	}
	for _, s := range stats {
		for i, v := range s.Violations {
			code = 1
			fmt.Fprintf(out, "VIOLATION world %s: %s: %s\n  schedule: %s\n  replay: go run ./internal/sim/cmd/ferry-sim -exhaustive%s -world %s -schedule %s\n",
				s.World, v.Violation.Check, v.Violation.Msg, v.Schedule, broken, s.World, v.Schedule)
			if i == 0 && len(v.Trace) > 0 {
				fmt.Fprintf(out, "  trace of the first:\n")
				out.Write(v.Trace)
			}
		}
	}
	return code
}
