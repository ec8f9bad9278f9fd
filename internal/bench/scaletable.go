package bench

import (
	"fmt"
	"io"
	"time"
)

// ScaleTable writes the scale model's points as a Markdown table.
func ScaleTable(w io.Writer, pts []ScalePoint) {
	fmt.Fprintln(w, "| rate /s | partitions | shards | window | sustained /s | p50 | p99 | not called | backlog growth /s | throttled (key, table) | SDK-failed calls | stream invocations (n, mean, p99, most at once) | sweep | WRU / action | RRU / action | $ / M actions: DynamoDB | Lambda | total | first bottleneck |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---|")
	for _, pt := range pts {
		p := pt.Params
		p99 := fmtDur(pt.P99)
		p50 := fmtDur(pt.P50)
		sweep := "-"
		if pt.SweepInvocations > 0 {
			sweep = pt.SweepMax.Round(10 * time.Millisecond).String()
			if pt.SweepUnfinished {
				sweep = "> " + sweep
			}
		}
		key := pt.ThrottledBy["P#"] + pt.ThrottledBy["D#"]
		fmt.Fprintf(w, "| %.0f | %d | %d | %s | %.0f | %s | %s | %d | %+.0f | %d, %d | %d | %d, %s, %s, %d | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n",
			p.Rate, p.Partitions, pt.Shards, p.Window, pt.Sustained, p50, p99, pt.Undelivered, pt.BacklogGrowth,
			key, pt.ThrottledBy["table"], pt.FailedCalls,
			pt.StreamInvocations, pt.StreamMean.Round(time.Millisecond), pt.StreamP99.Round(time.Millisecond), pt.StreamPeak, sweep,
			pt.WRU, pt.RRU, pt.Cost.DynamoDB, pt.Cost.LambdaGBs+pt.Cost.LambdaReqs, pt.Cost.Total(), pt.Bottleneck)
	}
}

func fmtDur(d time.Duration) string {
	if d == time.Duration(1<<63-1) {
		return "∞"
	}
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// ScaleSection writes the scale table with what the model is and how its
// columns read.
func ScaleSection(w io.Writer, pts []ScalePoint) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	what := "keyless 1 KB webhook actions"
	if len(pts) > 0 && pts[0].Params.Lanes > 0 {
		what = fmt.Sprintf("laned 1 KB webhook actions (each in one of %d lanes of one workspace, drawn uniformly)", pts[0].Params.Lanes)
	}
	dp := ScaleParams{}.withDefaults()
	if len(pts) > 0 {
		dp = pts[0].Params
	}
	conc := "every lane group of a claimed batch at once"
	if dp.Concurrency > 0 {
		conc = fmt.Sprintf("%d lane groups at once", dp.Concurrency)
	}
	p("The scale model (`bench.ScaleRun`; docs/scale.md) runs the real engine against the embedded DynamoDB on simulated clocks: %s arrive as a Poisson process through enqueue function instances (Lambda scales them out); every DynamoDB call takes %s, every provider call %s; writes are throttled once a partition key (base table `P#n`, due index `D#n`) took %.0f write units in the last second or the table %.0f (the SDK's standard retryer: 3 attempts, jittered exponential backoff); the stream has one shard per physical partition (write rate at 500 WRU/s each, at least 4, at most the partition count) and Lambda runs up to %d batches per shard at once (the stack's parallelization factor; batch %d, batching window %s, polled every %s), each batch one drainer invocation that drains every partition it names at once, claiming for %s; the schedule sweeps every partition every %s (%d probed at once, a partition that claimed giving its place to the next) and the reaper runs as often; each drain runs %s. Measured over a window after a 2 s warm-up, then 5 s without arrivals. Prices: %s",
		what, CallLatency, CallLatency, KeyWRU, tableWRU(pts), dp.Parallelization, dp.StreamBatch, dp.StreamWindow, StreamPoll, dp.StreamBudget, dp.Schedule, dp.SweepPartitions, conc, priceNote)
	p("")
	p("![delivered share and p99 by rate and partition count](scale.png)")
	p("")
	ScaleTable(w, pts)
	p("")
	p("Columns: *sustained* = provider calls started in the window per second; *p50/p99* = enqueue start to first provider call of the window's arrivals (∞ when more than 1%% or 50%% got none); *not called* = window arrivals without a provider call by the end; *backlog growth* = least-squares slope of acknowledged-but-not-called actions, sampled every 250 ms; *throttled* = attempts DynamoDB refused (partition keys, table quota); *SDK-failed* = calls that failed after the retries; *stream invocations* = the window's count, mean and p99 duration, and the most running at once during the run (each one Lambda execution); *sweep* = the window's sweep duration; units and dollars per delivered action, the sweep's and reaper's scaled to one per minute.")
}

func tableWRU(pts []ScalePoint) float64 {
	if len(pts) > 0 {
		return pts[0].Params.TableWRU
	}
	return TableWRU
}
