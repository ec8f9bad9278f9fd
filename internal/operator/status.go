package operator

import (
	"context"
	"strconv"
	"time"

	"github.com/ferryhq/ferry/internal/outbox"
)

// StatusParams are the options of `ferry status`.
type StatusParams struct {
	// Since starts the count of ended actions; zero: today (UTC midnight).
	Since time.Time
	// MaxDuePages and MaxEndedRows bound the reads per partition
	// (outbox.StatusParams).
	MaxDuePages, MaxEndedRows int
}

// partitionJSON is one partition's line of `ferry status -o json`.
// Due and OldestDueAge count what the drainer could claim now; Blocked
// and OldestBlockedAge the due actions waiting behind an earlier live
// member of their lane (outbox.PartitionGauges).
type partitionJSON struct {
	Partition        *int           `json:"partition,omitempty"`
	Due              int            `json:"due"`
	Blocked          int            `json:"blocked"`
	Claimed          int            `json:"claimed"`
	LeaseExpired     int            `json:"lease_expired"`
	Waiting          int            `json:"waiting"`
	StuckLaneHeads   int            `json:"stuck_lane_heads"`
	OldestDueAge     float64        `json:"oldest_due_age_seconds"`
	OldestBlockedAge float64        `json:"oldest_blocked_age_seconds"`
	Inflight         int            `json:"inflight_entries"`
	InflightUnread   int            `json:"inflight_unread"`
	Ended            map[string]int `json:"ended"`
	Truncated        bool           `json:"truncated"`
}

func newPartitionJSON(ps outbox.PartitionStatus, total bool) partitionJSON {
	j := partitionJSON{
		Due: ps.DueDepth, Blocked: ps.BlockedDepth, Claimed: ps.ClaimedDepth, LeaseExpired: ps.LeaseExpired, Waiting: ps.Waiting,
		StuckLaneHeads: ps.StuckLaneHeads, OldestDueAge: ps.OldestDueAge.Seconds(), OldestBlockedAge: ps.OldestBlockedAge.Seconds(),
		Inflight: ps.Inflight, InflightUnread: ps.InflightUnread, Ended: ps.Ended, Truncated: ps.Truncated,
	}
	if !total {
		p := ps.Partition
		j.Partition = &p
	}
	if j.Ended == nil {
		j.Ended = map[string]int{}
	}
	return j
}

// endedColumns are the ended counts `ferry status` shows, in order.
var endedColumns = []string{"DONE", "UNCERTAIN", "FAILED", "CANCELLED", "ERASED"}

// Status runs `ferry status`: per partition and in total, the backlog the
// reaper's gauges measure (due, blocked behind their lane, claimed, stuck
// lanes, oldest due and blocked ages),
// the lease-expired and waiting actions, the claim fences' in-flight
// entries, and the actions ended since p.Since by outcome. It only reads,
// a bounded amount per partition (outbox.Engine.StatusGet).
func (s *Session) Status(ctx context.Context, p StatusParams) error {
	since := p.Since
	if since.IsZero() {
		now := s.Clock.Now().UTC()
		since = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	}
	st, err := s.Engine.StatusGet(ctx, outbox.StatusParams{EndedSince: since, MaxDuePages: p.MaxDuePages, MaxEndedRows: p.MaxEndedRows})
	if err != nil {
		return classify(err)
	}
	layout, err := s.Engine.TableLayout(ctx)
	if err != nil {
		return classify(err)
	}
	if s.JSON {
		parts := make([]partitionJSON, 0, len(st.Partitions))
		for _, ps := range st.Partitions {
			parts = append(parts, newPartitionJSON(ps, false))
		}
		return writeJSON(s.Out, map[string]any{
			"table": s.Target.Table, "layout": layout, "at": st.At.Format(time.RFC3339), "ended_since": since.Format(time.RFC3339),
			"partitions": parts, "total": newPartitionJSON(st.Total, true), "dynamodb": s.Meter.Usage(),
		})
	}
	header := []string{"PARTITION", "DUE", "BLOCKED", "CLAIMED", "LEASE-EXPIRED", "WAITING", "STUCK-HEADS", "OLDEST-DUE", "OLDEST-BLOCKED", "IN-FLIGHT"}
	for _, c := range endedColumns {
		header = append(header, c)
	}
	row := func(name string, ps outbox.PartitionStatus) []string {
		r := []string{name, strconv.Itoa(ps.DueDepth), strconv.Itoa(ps.BlockedDepth), strconv.Itoa(ps.ClaimedDepth), strconv.Itoa(ps.LeaseExpired),
			strconv.Itoa(ps.Waiting), strconv.Itoa(ps.StuckLaneHeads), age(ps.OldestDueAge), age(ps.OldestBlockedAge), strconv.Itoa(ps.Inflight)}
		for _, c := range endedColumns {
			r = append(r, strconv.Itoa(ps.Ended[c]))
		}
		if ps.Truncated {
			r[0] += "*"
		}
		return r
	}
	var rows [][]string
	for _, ps := range st.Partitions {
		rows = append(rows, row(strconv.Itoa(ps.Partition), ps))
	}
	rows = append(rows, row("total", st.Total))
	s.printf("table %s%s (layout %d) at %s; ended counts since %s\n\n", s.Target.Table, where(s.Target), layout, when(st.At), when(since))
	if err := table(s.Out, header, rows); err != nil {
		return err
	}
	if st.Total.Truncated {
		s.printf("\n* a read bound was reached: these counts are lower bounds (--max-due-pages, --max-ended-rows)\n")
	}
	if st.Total.InflightUnread > 0 {
		s.printf("\n%d in-flight entries were not read (the reaper reads them on later runs)\n", st.Total.InflightUnread)
	}
	s.usageLine()
	return nil
}
