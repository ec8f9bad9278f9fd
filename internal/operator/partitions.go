package operator

import (
	"context"
	"fmt"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Partitions runs `ferry partitions`: it prints the table's partition map
// (the count for new lanes and keyless actions, and how many partitions
// may hold live or any rows, ADR 0011) and, with set > 0 and after
// confirmation, makes set the count, live, for every function of the table
// within 30 seconds (until a deploy of another `partitions`).
func (s *Session) Partitions(ctx context.Context, set int) error {
	if set != 0 {
		if set < 1 || set > outbox.MaxPartitionCount {
			return fail(ExitUsage, "--set %d: want 1 to %d", set, outbox.MaxPartitionCount)
		}
		before, err := s.Engine.PartitionLayout(ctx)
		if err != nil {
			return classify(err)
		}
		// What it costs, before anything is asked or done (--yes too).
		fmt.Fprintln(s.Err, outbox.PartitionCountCost(before.Live, set))
		if err := s.confirm(fmt.Sprintf("Make %d the partition count of table %s (now %d)? Lanes with live actions keep their partition until they drain", set, s.Target.Table, before.Count)); err != nil {
			return err
		}
		if err := s.Engine.PartitionsSet(ctx, set); err != nil {
			return classify(err)
		}
	}
	l, err := s.Engine.PartitionLayout(ctx)
	if err != nil {
		return classify(err)
	}
	if s.JSON {
		return writeJSON(s.Out, map[string]any{"table": s.Target.Table, "count": l.Count, "live": l.Live, "kept": l.Kept,
			"recorded": l.Recorded, "dynamodb": s.Meter.Usage()})
	}
	s.printf("table %s%s: count %d (new lanes and keyless actions), live %d, kept %d", s.Target.Table, where(s.Target), l.Count, l.Live, l.Kept)
	if !l.Recorded {
		s.printf(" (no count recorded yet: the deployment's --partitions)")
	}
	s.printf("\n")
	s.usageLine()
	return nil
}
