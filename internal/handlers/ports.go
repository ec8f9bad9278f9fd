package handlers

import (
	"context"
	"time"
)

// DrainStats is what one drain pass did.
type DrainStats struct {
	Claimed, Started, Ended, Released int
	// More is true when the pass stopped with due work left (batch full or
	// deadline reached).
	More bool
}

// DrainWindow bounds one partition's drain: nothing is started that could
// not finish (inside the write margin) before Deadline, and no batch is
// claimed once ClaimUntil has passed (zero: until Deadline).
type DrainWindow struct {
	Deadline, ClaimUntil time.Time
}

// Drainer is the part of the engine the drainer handler uses.
type Drainer interface {
	// Sweep drains every partition. Nothing is started that could not
	// finish (inside the write margin) before deadline.
	Sweep(ctx context.Context, deadline time.Time) (DrainStats, error)
	// DrainPartition drains one partition within w.
	DrainPartition(ctx context.Context, partition int, w DrainWindow) (DrainStats, error)
	// PartitionOf maps a stream record's "pk" to its partition.
	PartitionOf(pk string) (int, bool)
}

// Backlog is one partition's backlog as the reaper measures it
// (outbox.PartitionGauges): DueDepth and OldestDueAge count what the
// drainer could claim, BlockedDepth and OldestBlockedAge what waits behind
// an earlier live member of its lane.
type Backlog struct {
	Partition, DueDepth, BlockedDepth, ClaimedDepth, StuckLaneHeads int
	OldestDueAge, OldestBlockedAge                                  time.Duration
}

// ReapStats is what one reaper pass did and saw.
type ReapStats struct {
	Uncertain, Exhausted, Expired int
	Backlog                       []Backlog
}

// Reaper is the part of the engine the reaper handler uses.
type Reaper interface {
	Reap(ctx context.Context) (ReapStats, error)
}

// RetainStats is what one retention pass deleted.
type RetainStats struct {
	Deleted, Trimmed int
}

// Retainer is the part of the engine the retention handler uses.
type Retainer interface {
	Retain(ctx context.Context) (RetainStats, error)
}
