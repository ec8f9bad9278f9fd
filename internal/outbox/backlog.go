package outbox

import (
	"context"
)

// backlog is one partition's live rows as the reaper and the operator's
// status read them: the due index (ADMITTED actions, expiring proposals,
// and EXECUTING ones a lagging index still shows) and the rows the claim
// fence's in-flight map names (the actions claims took out of due,
// design.md §3.3).
type backlog struct {
	rows    []Action
	inIndex map[int64]bool // seqs live in the due index or the in-flight map
	// inflight counts the entries of the fence's in-flight map.
	inflight int
	// unread counts in-flight entries not read (see inflightRows).
	unread int
	// truncated: the read of the due index stopped at its page bound, so
	// the index may hold more.
	truncated bool
}

// readBacklog reads partition p's backlog: up to maxPages pages of the due
// index (0: every page), then the in-flight rows. A row a lagging index
// still shows before its claim is replaced by its in-flight row.
func (e *Engine) readBacklog(ctx context.Context, p, maxPages int) (backlog, error) {
	bl := backlog{inIndex: map[int64]bool{}}
	pages := 0
	err := e.eachDuePage(ctx, dueQuery{partition: p}, func(page []dueRow) bool {
		for _, r := range page {
			bl.rows = append(bl.rows, r.a)
			bl.inIndex[r.a.Seq] = true
		}
		pages++
		if maxPages > 0 && pages >= maxPages {
			// The bound was reached (the index may hold nothing more).
			bl.truncated = true
			return false
		}
		return true
	})
	if err != nil {
		return bl, err
	}
	// Claimed actions are out of due: the fence's in-flight map names them.
	// Neither the reaper nor the status holds the fence, so neither writes
	// the map; the entries of what the reaper ends go with the next
	// holder's claim.
	inflight, entries, unread, err := e.inflightRows(ctx, p)
	if err != nil {
		return bl, err
	}
	bl.inflight, bl.unread = entries, unread
	at := map[int64]int{}
	for i, a := range bl.rows {
		at[a.Seq] = i
	}
	for _, a := range inflight {
		bl.inIndex[a.Seq] = true
		if i, ok := at[a.Seq]; ok {
			bl.rows[i] = a // a lagging index still shows the row before its claim
			continue
		}
		bl.rows = append(bl.rows, a)
	}
	return bl, nil
}

// laneHead reports whether a backlog row is the head of its lane: its
// predecessor is not live in the backlog.
func (bl *backlog) laneHead(a *Action) bool {
	return a.LaneKey != "" && (a.PrevSeq == 0 || !bl.inIndex[a.PrevSeq])
}
