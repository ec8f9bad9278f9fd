// Command ferry-bench measures what a Ferry action costs on DynamoDB
// (internal/bench), prints the tables and writes docs/benchmarks.md and
// docs/benchmarks.png. `make bench` runs it from the repository root.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferryhq/ferry/internal/bench"
)

func main() {
	if len(os.Args) == 4 && os.Args[1] == bench.ChildFlag {
		batch, _ := strconv.Atoi(os.Args[3])
		if err := bench.DrainerChild(context.Background(), os.Args[2], batch); err != nil {
			fmt.Fprintln(os.Stderr, "drainer child:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ferry-bench:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		md          = flag.String("md", "docs/benchmarks.md", "Markdown report to write ('' = none)")
		pngPath     = flag.String("png", "docs/benchmarks.png", "PNG chart to write ('' = none)")
		actions     = flag.Int("actions", 2000, "actions of the steady workloads")
		backlog     = flag.Int("backlog", 100000, "actions of the backlog workload")
		latN        = flag.Int("latency-actions", 3000, "actions of each latency run")
		rate        = flag.Float64("rate", 10, "arrivals per second of the latency runs")
		streamLanes = flag.Int("stream-lanes", 20, "lanes of the laned latency run")
		thrN        = flag.Int("drain-actions", 2000, "backlog of the drain-rate run")
		rie         = flag.String("rie", "", "aws-lambda-rie binary for the emulator timings (default: $LAMBDA_RIE, then PATH, then ~/go/bin)")
		noLambda    = flag.Bool("no-lambda", false, "skip the bootstrap sizes and emulator timings")
		workloads   = flag.String("workloads", "", "comma-separated cost workloads to run (keyless,laned,trickle,keyed,email,batch25,backlog,stranded,listing,console; default all; deferred only when named)")
		consoleN    = flag.Int("console-actions", 100000, "actions in the table of the console's page renders")
		deferFor    = flag.Duration("defer-for", time.Hour, "the deferred workload's wait (every tenth action's first call)")
		costsOnly   = flag.Bool("costs-only", false, "run the cost workloads only (no latency, drain rate, memory, bootstrap sizes or emulator timings)")
		scale       = flag.String("scale", "grid", "scale model: grid (issue 18's rates x partitions), none, or only (the grid alone: printed, and its chart written; no Markdown)")
		scalePNG    = flag.String("scale-png", "docs/scale.png", "the scale model's PNG chart to write ('' = none)")
		sRates      = flag.String("scale-rates", "", "comma-separated arrival rates of the scale grid (default 100,1000,3000,10000)")
		sParts      = flag.String("scale-partitions", "", "comma-separated partition counts of the scale grid (default 16,64,256,1024)")
		sArr        = flag.Int("scale-arrivals", 0, "arrivals per scale point's window (default 12000; window 3 s..20 s)")
		sLanes      = flag.Int("scale-lanes", 0, "scale model: put every action in one of this many lanes (0 = keyless)")
		sTable      = flag.Float64("scale-table-wru", 0, "the table's write quota in the scale model, units a second (default DynamoDB's 40000)")
		hotLane     = flag.String("hot-lane", "run", "enqueues into one lane: run, none, or only (the table alone, printed; no Markdown)")
	)
	flag.Parse()
	ctx := context.Background()
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	res := &bench.Results{Date: time.Now(), Command: "make bench", Uname: sh("uname", "-a"), Nproc: sh("nproc"), GoVersion: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	if flag.NFlag() > 0 {
		res.Command = "go run ./cmd/ferry-bench " + strings.Join(os.Args[1:], " ")
	}
	step := func(s string) { fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), s) }
	grid := bench.DefaultScaleGrid
	if *sRates != "" {
		grid.Rates = nil
		for _, f := range strings.Split(*sRates, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				return fmt.Errorf("-scale-rates: %w", err)
			}
			grid.Rates = append(grid.Rates, v)
		}
	}
	if *sParts != "" {
		grid.Partitions = nil
		for _, f := range strings.Split(*sParts, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("-scale-partitions: %w", err)
			}
			grid.Partitions = append(grid.Partitions, v)
		}
	}
	if *sArr > 0 {
		grid.Arrivals = *sArr
	}
	grid.TableWRU = *sTable
	grid.Lanes = *sLanes
	runScale := func() error {
		pts, err := bench.ScaleGrid(ctx, grid, step)
		res.Scale = pts
		if err != nil || *scalePNG == "" {
			return err
		}
		f, err := os.Create(*scalePNG)
		if err != nil {
			return err
		}
		if err := bench.ScaleChart(f, pts, "Ferry scale model: keyless 1 KB actions, simulated clocks - "+res.Date.UTC().Format("2006-01-02")); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	switch *hotLane {
	case "only":
		pl, err := bench.PayloadFor(ctx, 1024)
		if err != nil {
			return err
		}
		hs, err := bench.HotLanes(ctx, pl, step)
		if err != nil {
			return err
		}
		bench.HotLaneSection(os.Stdout, hs)
		return nil
	case "run", "none":
	default:
		return fmt.Errorf("-hot-lane: want run, none or only, not %q", *hotLane)
	}
	switch *scale {
	case "only":
		if err := runScale(); err != nil {
			return err
		}
		bench.ScaleSection(os.Stdout, res.Scale)
		return nil
	case "grid", "none":
	default:
		return fmt.Errorf("-scale: want grid, none or only, not %q", *scale)
	}

	step("calibrating a 1 KB action")
	pl, err := bench.PayloadFor(ctx, 1024)
	if err != nil {
		return err
	}
	res.PayloadSize = pl
	step("cost workloads")
	var only []string
	if *workloads != "" {
		only = strings.Split(*workloads, ",")
	}
	res.Costs, err = bench.AllCosts(ctx, bench.CostOptions{Payload: pl, Actions: *actions, Backlog: *backlog, Only: only, DeferFor: *deferFor}, func(s string) { step("  " + s) })
	if err != nil {
		return err
	}
	if len(only) == 0 || slices.Contains(only, "listing") {
		step("  listing")
		if res.Listings, err = bench.Listings(ctx, bench.CostOptions{Payload: pl}); err != nil {
			return err
		}
	}
	if len(only) == 0 || slices.Contains(only, "console") {
		step("  console pages")
		if res.Console, err = bench.ConsolePages(ctx, bench.CostOptions{Payload: pl, Backlog: *consoleN}, step); err != nil {
			return err
		}
	}
	if *costsOnly {
		res.Notes = append(res.Notes, "Cost workloads only (-costs-only): no latency, drain rate, memory, bootstrap or emulator figures.")
		return write(res, *md, *pngPath)
	}
	if *backlog < 100000 {
		res.Notes = append(res.Notes, fmt.Sprintf("The backlog workload was scaled down to %d actions (-backlog); the issue asks for 100,000.", *backlog))
	}
	for _, run := range []struct {
		stream bool
		lanes  int
	}{{true, 0}, {false, 0}, {true, *streamLanes}} {
		step(fmt.Sprintf("latency (stream=%v, lanes=%d)", run.stream, run.lanes))
		l, c, err := bench.StreamRun(ctx, run.stream, *latN, *rate, pl, 8, run.lanes)
		if err != nil {
			return err
		}
		res.Latency = append(res.Latency, l)
		if run.stream {
			// What the wake-up model's actions cost: one or two actions per
			// drain at this rate, so the per-drain writes show.
			res.StreamCosts = append(res.StreamCosts, c)
		}
	}
	step("drain rate per partition (real 5 ms per call)")
	t, err := bench.ThroughputRun(ctx, *thrN, 25, 4, pl)
	if err != nil {
		return err
	}
	res.Throughput = &t
	if *hotLane == "run" {
		if res.HotLane, err = bench.HotLanes(ctx, pl, step); err != nil {
			return err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	for _, b := range []int{25, 99} {
		step(fmt.Sprintf("drainer memory, batch %d", b))
		m, err := bench.MemoryRun(ctx, exe, 2000, b, pl)
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("Drainer memory at batch %d not measured: %v", b, err))
			continue
		}
		res.Memory = append(res.Memory, m)
	}
	if !*noLambda {
		step("bootstrap sizes")
		bs, err := bench.BootstrapSizes(ctx, root)
		if err != nil {
			res.Notes = append(res.Notes, "Bootstrap sizes not measured: "+err.Error())
		}
		bin := findRIE(*rie)
		if bin == "" {
			res.Notes = append(res.Notes, "Emulator timings not measured: aws-lambda-rie not found (set LAMBDA_RIE).")
		} else if len(bs) > 0 {
			step("emulator timings (internal/emulatortest)")
			var tail string
			bs, tail, err = bench.EmulatorTimes(ctx, root, bin, bs)
			if err != nil {
				res.Notes = append(res.Notes, "Emulator timings not measured: "+err.Error()+".")
				fmt.Fprintln(os.Stderr, tail)
			}
		}
		res.Bootstraps = bs
	} else {
		res.Notes = append(res.Notes, "Bootstrap sizes and emulator timings skipped (-no-lambda).")
	}

	if *scale == "grid" {
		step("scale model (simulated clocks)")
		if err := runScale(); err != nil {
			return err
		}
	}

	return write(res, *md, *pngPath)
}

// write prints the report and writes it (and its chart) where asked.
func write(res *bench.Results, md, pngPath string) error {
	var buf bytes.Buffer
	res.Markdown(&buf)
	fmt.Print(buf.String())
	if md != "" {
		if err := os.WriteFile(md, buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if pngPath != "" {
		f, err := os.Create(pngPath)
		if err != nil {
			return err
		}
		if err := bench.Chart(f, res.Costs, "Ferry: write request units per delivered action (1 KB actions) - "+res.Date.UTC().Format("2006-01-02")); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

func sh(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func findRIE(flagVal string) string {
	for _, c := range []string{flagVal, os.Getenv("LAMBDA_RIE")} {
		if c != "" {
			return c
		}
	}
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, "go", "bin", "aws-lambda-rie")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}
