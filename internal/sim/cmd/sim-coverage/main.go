// Command sim-coverage measures how much of the engine (internal/outbox)
// the simulator reaches: it builds ferry-sim with Go's binary coverage,
// runs a fixed seed set in every random mode and a bounded pass of the
// exhaustive mode (every world, at most one fault, no preemption), each
// part into a counter directory of its own, and prints each part's
// statement coverage of internal/outbox, then the whole's by file, every
// function under the bar, and every exported Engine method the runs never
// reached. `make sim-coverage` runs it; docs/design.md §11 keeps the
// figure.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	module = "github.com/ferryhq/ferry"
	engine = module + "/internal/outbox"
)

// parts are the runs of ferry-sim a measure can make, by name: the random
// modes over the seed set, and the exhaustive mode's bounded pass.
var parts = map[string][]string{
	"standard":      nil,
	"repartition":   {"-repartition"},
	"kill-enqueues": {"-kill-enqueues"},
	"exhaustive":    {"-exhaustive"},
}

const partNames = "standard, repartition, kill-enqueues, exhaustive"

func main() {
	dir := flag.String("dir", ".cache/sim-coverage", "where the instrumented binary and its counters go (emptied first)")
	seeds := flag.Int("seeds", 60, "seeds per mode")
	steps := flag.Int("steps", 1000, "steps per seed")
	first := flag.Uint64("first", 1, "the first seed")
	bar := flag.Float64("under", 80, "list the functions whose statement coverage is under this percentage")
	modes := flag.String("modes", "standard,repartition,kill-enqueues,exhaustive", "the parts to run (comma separated: "+partNames+")")
	exFaults := flag.Int("exhaustive-faults", 1, "the exhaustive part: faults per schedule, in every world")
	exPreempts := flag.Int("exhaustive-preemptions", 0, "the exhaustive part: preemptions per schedule, in every world")
	report := flag.Bool("report", false, "only report on the counters already in -dir (no build, no runs)")
	flag.Parse()
	parts["exhaustive"] = []string{"-exhaustive", "-faults", strconv.Itoa(*exFaults), "-preemptions", strconv.Itoa(*exPreempts)}
	if !*report {
		if err := measure(*dir, *first, *seeds, *steps, strings.Split(*modes, ",")); err != nil {
			fmt.Fprintln(os.Stderr, "sim-coverage:", err)
			os.Exit(1)
		}
	}
	unreached, err := writeReport(*dir, *bar)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sim-coverage:", err)
		os.Exit(1)
	}
	if len(failed) > 0 {
		fmt.Printf("violations found in the modes %v (above)\n", failed)
	}
	if unreached > 0 || len(failed) > 0 {
		os.Exit(1)
	}
}

// failed lists the modes whose runs found a violation.
var failed []string

// measure builds the instrumented ferry-sim into dir and runs each part
// with its counters written to dir/counters/<part>.
func measure(dir string, first uint64, seeds, steps int, modes []string) error {
	for _, m := range modes {
		if _, ok := parts[m]; !ok {
			return fmt.Errorf("unknown part %q (%s)", m, partNames)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "counters"), 0o755); err != nil {
		return err
	}
	bin := filepath.Join(dir, "ferry-sim")
	build := exec.Command("go", "build", "-cover", "-covermode=atomic",
		"-coverpkg="+engine+","+module+"/internal/sim/cmd/ferry-sim", "-o", bin, "./internal/sim/cmd/ferry-sim")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	for _, m := range modes {
		counters := filepath.Join(dir, "counters", m)
		if err := os.MkdirAll(counters, 0o755); err != nil {
			return err
		}
		args := append([]string(nil), parts[m]...)
		if m != "exhaustive" {
			args = append(args, "-first", strconv.FormatUint(first, 10), "-seeds", strconv.Itoa(seeds), "-steps", strconv.Itoa(steps))
		}
		fmt.Fprintf(os.Stderr, "ferry-sim %s\n", strings.Join(args, " "))
		start := time.Now()
		run := exec.Command(bin, args...)
		run.Env = append(os.Environ(), "GOCOVERDIR="+counters)
		out, err := run.Output()
		if m == "exhaustive" {
			// Its table: schedules and worlds covered.
			os.Stderr.Write(out)
		}
		if err != nil {
			// The coverage counts all the same; the violations are
			// printed and make the command fail at its end.
			os.Stdout.Write(out)
			failed = append(failed, m)
			continue
		}
		fmt.Fprintf(os.Stderr, "  %s: 0 violations, %s\n", m, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// block is one basic block of the profile.
type block struct {
	file             string
	startL, endL     int
	stmts, hit, line int
}

// fn is one function of the engine's source and its statements.
type fn struct {
	file, name     string
	line, endLine  int
	exported       bool // an exported method of *Engine
	stmts, reached int
}

// writeReport prints each part's coverage (the counter directories under
// dir/counters), then the whole's by file; it returns how many exported
// Engine methods no part reached.
func writeReport(dir string, bar float64) (int, error) {
	ents, err := os.ReadDir(filepath.Join(dir, "counters"))
	if err != nil {
		return 0, err
	}
	var dirs []string
	fmt.Printf("%-22s %6s %8s %7s\n", "part", "stmts", "reached", "%")
	for _, d := range ents {
		if !d.IsDir() {
			continue
		}
		p := filepath.Join(dir, "counters", d.Name())
		dirs = append(dirs, p)
		blocks, err := profile(p, filepath.Join(dir, "profile-"+d.Name()+".txt"))
		if err != nil {
			return 0, err
		}
		n, r := 0, 0
		for _, b := range blocks {
			n += b.stmts
			if b.hit > 0 {
				r += b.stmts
			}
		}
		fmt.Printf("%-22s %6d %8d %6.1f%%\n", d.Name(), n, r, pct(r, n))
	}
	fmt.Println()
	if len(dirs) == 0 {
		return 0, fmt.Errorf("no counters in %s", filepath.Join(dir, "counters"))
	}
	blocks, err := profile(strings.Join(dirs, ","), filepath.Join(dir, "profile.txt"))
	if err != nil {
		return 0, err
	}
	fns, err := engineFuncs("internal/outbox")
	if err != nil {
		return 0, err
	}
	for _, b := range blocks {
		var in *fn
		for _, f := range fns[b.file] {
			if b.startL >= f.line && b.endL <= f.endLine {
				in = f
				break
			}
		}
		if in == nil {
			// A function literal outside any function (a package-level
			// var): counted under its file.
			in = &fn{file: b.file, name: "(package level)"}
			fns[b.file] = append(fns[b.file], in)
		}
		in.stmts += b.stmts
		if b.hit > 0 {
			in.reached += b.stmts
		}
	}
	return writeTable(fns, bar), nil
}

// profile writes the engine's statement profile of the counter
// directories in (comma separated) to prof and reads it.
func profile(in, prof string) ([]block, error) {
	tf := exec.Command("go", "tool", "covdata", "textfmt", "-i", in, "-pkg", engine, "-o", prof)
	tf.Stderr = os.Stderr
	if err := tf.Run(); err != nil {
		return nil, fmt.Errorf("covdata textfmt: %w", err)
	}
	return readProfile(prof)
}

func readProfile(path string) ([]block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Blocks appear once per counter file: keep the largest count.
	seen := map[string]*block{}
	var order []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "mode:") {
			continue
		}
		// file.go:L.C,L.C stmts count
		colon := strings.LastIndex(line, ":")
		fields := strings.Fields(line[colon+1:])
		if colon < 0 || len(fields) != 3 {
			return nil, fmt.Errorf("%s: bad line %q", path, line)
		}
		var b block
		b.file = filepath.Base(line[:colon])
		se := strings.Split(fields[0], ",")
		b.startL, _ = strconv.Atoi(strings.Split(se[0], ".")[0])
		b.endL, _ = strconv.Atoi(strings.Split(se[1], ".")[0])
		b.stmts, _ = strconv.Atoi(fields[1])
		b.hit, _ = strconv.Atoi(fields[2])
		k := line[:colon] + ":" + fields[0]
		if o, ok := seen[k]; ok {
			o.hit = max(o.hit, b.hit)
			continue
		}
		seen[k] = &b
		order = append(order, k)
	}
	out := make([]block, 0, len(order))
	for _, k := range order {
		out = append(out, *seen[k])
	}
	return out, sc.Err()
}

// engineFuncs parses the engine's source (tests excluded) for its
// functions, by file.
func engineFuncs(dir string) (map[string][]*fn, error) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	out := map[string][]*fn{}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			name, engineMethod := fd.Name.Name, false
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				recv := recvName(fd.Recv.List[0].Type)
				engineMethod = recv == "*Engine"
				name = recv + "." + name
			}
			out[filepath.Base(p)] = append(out[filepath.Base(p)], &fn{file: filepath.Base(p), name: name,
				line: fset.Position(fd.Pos()).Line, endLine: fset.Position(fd.End()).Line,
				exported: engineMethod && fd.Name.IsExported()})
		}
	}
	return out, nil
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return "*" + recvName(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return recvName(t.X)
	}
	return "?"
}

func pct(n, d int) float64 {
	if d == 0 {
		return 100
	}
	return 100 * float64(n) / float64(d)
}

// writeTable writes the report and returns how many exported Engine methods
// no run reached.
func writeTable(fns map[string][]*fn, bar float64) int {
	files := make([]string, 0, len(fns))
	for f := range fns {
		files = append(files, f)
	}
	sort.Strings(files)
	total, reached := 0, 0
	var under, unreached []*fn
	fmt.Printf("%-22s %6s %8s %7s\n", "file (function group)", "stmts", "reached", "%")
	for _, f := range files {
		s, r := 0, 0
		for _, x := range fns[f] {
			s += x.stmts
			r += x.reached
			if x.stmts > 0 && pct(x.reached, x.stmts) < bar {
				under = append(under, x)
			}
			if x.exported && x.reached == 0 {
				unreached = append(unreached, x)
			}
		}
		total += s
		reached += r
		if s > 0 {
			fmt.Printf("%-22s %6d %8d %6.1f%%\n", f, s, r, pct(r, s))
		}
	}
	fmt.Printf("\nfunctions under %.0f%% of their statements:\n", bar)
	for _, x := range under {
		fmt.Printf("  %-16s %-44s %4d/%-4d %5.1f%%\n", fmt.Sprintf("%s:%d", x.file, x.line), x.name, x.reached, x.stmts, pct(x.reached, x.stmts))
	}
	fmt.Printf("\nexported Engine methods never reached: %d\n", len(unreached))
	for _, x := range unreached {
		fmt.Printf("  %s:%d %s\n", x.file, x.line, x.name)
	}
	fmt.Printf("\ninternal/outbox: %d of %d statements reached by the simulator (all parts): %.1f%%\n", reached, total, pct(reached, total))
	return len(unreached)
}
