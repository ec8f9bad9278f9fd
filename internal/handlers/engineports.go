package handlers

import (
	"context"
	"time"

	"github.com/ferryhq/ferry/internal/outbox"
)

// EnginePorts adapts *outbox.Engine to the handlers' ports (Drainer, Reaper,
// Retainer).
type EnginePorts struct {
	Engine *outbox.Engine
	// Owner names this drainer in claim fences (the Lambda log stream, or
	// the host and process of ferry dev). Empty: the engine picks one per
	// drain.
	Owner string
	// Concurrency bounds the lane groups run at once; 0: the engine's default.
	Concurrency int
	// Partitions bounds the partitions a sweep probes at once; 0 or 1: one
	// after another. A partition's drain is a few sequential round trips
	// (claim fence, claim, release) even when nothing is due, so a sweep of
	// every partition is round-trip bound unless they overlap. A partition
	// whose drain claimed actions gives its place to the next while it runs
	// them (outbox.DrainParams.Partitions).
	Partitions int
}

var (
	_ Drainer = EnginePorts{}
	_ Reaper  = EnginePorts{}
)

func (p EnginePorts) params(deadline time.Time) outbox.DrainParams {
	return outbox.DrainParams{Owner: p.Owner, Deadline: deadline, Concurrency: p.Concurrency, Partitions: p.Partitions}
}

func statsOf(r *outbox.DrainResult) DrainStats {
	if r == nil {
		return DrainStats{}
	}
	return DrainStats{Claimed: r.Claimed, Started: r.Started, Ended: r.Ended, Released: r.Released, More: r.More}
}

// Sweep implements Drainer.
func (p EnginePorts) Sweep(ctx context.Context, deadline time.Time) (DrainStats, error) {
	r, err := p.Engine.Sweep(ctx, p.params(deadline))
	return statsOf(r), err
}

// DrainPartition implements Drainer.
func (p EnginePorts) DrainPartition(ctx context.Context, partition int, w DrainWindow) (DrainStats, error) {
	dp := p.params(w.Deadline)
	dp.ClaimUntil = w.ClaimUntil
	r, err := p.Engine.DrainPartition(ctx, partition, dp)
	return statsOf(r), err
}

// PartitionOf implements Drainer.
func (p EnginePorts) PartitionOf(pk string) (int, bool) { return p.Engine.PartitionOf(pk) }

// Reap implements Reaper.
func (p EnginePorts) Reap(ctx context.Context) (ReapStats, error) {
	r, err := p.Engine.Reap(ctx)
	if err != nil {
		return ReapStats{}, err
	}
	st := ReapStats{Uncertain: r.Uncertain, Exhausted: r.Exhausted, Expired: r.Expired}
	for _, g := range r.Gauges {
		st.Backlog = append(st.Backlog, Backlog{
			Partition: g.Partition, DueDepth: g.DueDepth, BlockedDepth: g.BlockedDepth, ClaimedDepth: g.ClaimedDepth,
			StuckLaneHeads: g.StuckLaneHeads, OldestDueAge: g.OldestDueAge, OldestBlockedAge: g.OldestBlockedAge,
		})
	}
	return st, nil
}

var _ Retainer = EnginePorts{}

// Retain implements Retainer.
func (p EnginePorts) Retain(ctx context.Context) (RetainStats, error) {
	r, err := p.Engine.Retain(ctx)
	if err != nil {
		return RetainStats{}, err
	}
	return RetainStats{Deleted: r.Deleted, Trimmed: r.Trimmed}, nil
}
