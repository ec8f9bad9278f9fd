package sim

import (
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// Summary adds up the results of many seeds.
type Summary struct {
	Seeds      int
	Steps      int
	Faults     map[string]int
	Actions    map[string]int
	Ops        map[string]int
	Violations int
	Failed     []*Result // the failing seeds, in seed order
}

// RunMany runs seeds first..first+n-1 with the given steps on every core,
// calling progress (from one goroutine at a time) after each seed.
func RunMany(first uint64, n, steps int, broken Broken, progress func(done int)) *Summary {
	return RunManyWith(first, n, Options{Steps: steps, Broken: broken}, progress)
}

// RunManyWith is RunMany with every Options field but the seed from base
// (Options.Repartition, for instance).
func RunManyWith(first uint64, n int, base Options, progress func(done int)) *Summary {
	s := &Summary{Faults: map[string]int{}, Actions: map[string]int{}, Ops: map[string]int{}}
	var mu sync.Mutex
	next := first
	end := first + uint64(n)
	var wg sync.WaitGroup
	done := 0
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next >= end {
					mu.Unlock()
					return
				}
				seed := next
				next++
				mu.Unlock()
				opt := base
				opt.Seed = seed
				r := Run(opt)
				mu.Lock()
				s.add(r)
				done++
				if progress != nil {
					progress(done)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(s.Failed, func(i, j int) bool { return s.Failed[i].Seed < s.Failed[j].Seed })
	return s
}

func (s *Summary) add(r *Result) {
	s.Seeds++
	s.Steps += r.Steps
	for k, v := range r.Faults {
		s.Faults[k] += v
	}
	for k, v := range r.Actions {
		s.Actions[k] += v
	}
	for k, v := range r.Ops {
		s.Ops[k] += v
	}
	s.Violations += len(r.Violations)
	if r.Failed() {
		r.Trace = nil // keep memory flat; replay the seed for its trace
		s.Failed = append(s.Failed, r)
	}
}

// WriteTable writes the summary as a plain table.
func (s *Summary) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "%-48s %10d\n", "seeds", s.Seeds)
	fmt.Fprintf(w, "%-48s %10d\n", "steps", s.Steps)
	section := func(title string, m map[string]int) {
		fmt.Fprintf(w, "%s\n", title)
		for _, k := range sortedKeys(m) {
			if strings.HasPrefix(k, "x.") {
				continue
			}
			fmt.Fprintf(w, "  %-46s %10d\n", k, m[k])
		}
	}
	section("steps by kind", s.Ops)
	section("faults injected by class", s.Faults)
	section("actions by end state", s.Actions)
	fmt.Fprintf(w, "%-48s %10d\n", "invariant violations", s.Violations)
	for _, r := range s.Failed {
		for _, v := range r.Violations {
			fmt.Fprintf(w, "  seed %d %s\n", r.Seed, v)
		}
		fmt.Fprintf(w, "  replay: %s\n", r.Replay())
	}
}
