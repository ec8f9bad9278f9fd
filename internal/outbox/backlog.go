package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// backlog is one partition's live rows as the reaper and the operator's
// status read them: the due index (ADMITTED actions, expiring proposals,
// and EXECUTING ones a lagging index still shows) and the rows the claim
// fence's in-flight map names (the actions claims took out of due,
// design.md §3.3).
type backlog struct {
	rows    []Action
	inIndex map[int64]bool // seqs live in the due index or the in-flight map
	// liveOutside holds predecessors outside the backlog read live
	// (readOutsidePredecessors): a proposal without an expiry is in no
	// index, and the lane behind it waits.
	liveOutside map[int64]bool
	// top memoises laneTop: a row's seq -> the seq of the first row of its
	// lane in the backlog.
	top map[int64]int64
	at  map[int64]int // seq -> index in rows
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
// still shows before its claim is replaced by its in-flight row. Then the
// predecessors outside the backlog of lane heads that have waited long
// (readOutsidePredecessors).
func (e *Engine) readBacklog(ctx context.Context, p, maxPages int) (*backlog, error) {
	bl := &backlog{inIndex: map[int64]bool{}, liveOutside: map[int64]bool{}, top: map[int64]int64{}, at: map[int64]int{}}
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
	for i, a := range bl.rows {
		bl.at[a.Seq] = i
	}
	for _, a := range inflight {
		bl.inIndex[a.Seq] = true
		if i, ok := bl.at[a.Seq]; ok {
			bl.rows[i] = a // a lagging index still shows the row before its claim
			continue
		}
		bl.at[a.Seq] = len(bl.rows)
		bl.rows = append(bl.rows, a)
	}
	return bl, e.readOutsidePredecessors(ctx, p, bl)
}

// The predecessor read of readOutsidePredecessors: only for lane heads due
// longer than predecessorCheckAfter (a head the drainer can claim is
// claimed within seconds), at most maxPredecessorChecks per partition and
// read (one eventually consistent BatchGetItem: half a read unit each).
const (
	predecessorCheckAfter = time.Minute
	maxPredecessorChecks  = 25
)

// readOutsidePredecessors reads the predecessors of due lane heads whose
// predecessor is not in the backlog (normally an ended member) and that
// have waited longer than predecessorCheckAfter: a live one (a proposal
// without an expiry is in no index) blocks its lane, as the claim's own
// predecessor read finds (design.md §5 step 3). One hop only: a member
// that ended out of order without a relink in front of a live one is
// taken as ended.
func (e *Engine) readOutsidePredecessors(ctx context.Context, p int, bl *backlog) error {
	now := e.clk.Now()
	var keys []map[string]types.AttributeValue
	asked := map[int64]bool{}
	for i := range bl.rows {
		a := &bl.rows[i]
		if a.LaneKey == "" || a.PrevSeq == 0 || bl.inIndex[a.PrevSeq] || asked[a.PrevSeq] ||
			now.Sub(dueAt(a)) <= predecessorCheckAfter || !isDue(a, now) {
			continue
		}
		if len(keys) == maxPredecessorChecks {
			break
		}
		asked[a.PrevSeq] = true
		keys = append(keys, actionKey(p, a.PrevSeq))
	}
	if len(keys) == 0 {
		return nil
	}
	_, err := e.readRows(ctx, rowsRead{
		keys: keys, maxRounds: 1, eventual: true,
		projection: "sk, #st, #ttl",
		names:      map[string]string{"#st": attrState, "#ttl": attrTTL},
	}, func(seq int64, it map[string]types.AttributeValue) {
		if st := State(getS(it, attrState)); !st.Ended() && !expiredByTTL(it, now) {
			bl.liveOutside[seq] = true
		}
	})
	if err != nil {
		return fmt.Errorf("error reading lane predecessors of partition %d: %w", p, err)
	}
	return nil
}

// dueAt is when a backlog row became due: its next attempt, or, for an
// EXECUTING row, the end of its lease.
func dueAt(a *Action) time.Time {
	if a.State == StateEXECUTING {
		return a.LeaseExpiresAt
	}
	return a.NextAttemptAt
}

// isDue reports whether a backlog row is due now: ADMITTED and its next
// attempt come, or EXECUTING with its lease over.
func isDue(a *Action, now time.Time) bool {
	switch a.State {
	case StateADMITTED, StateEXECUTING:
		return !dueAt(a).After(now)
	}
	return false
}

// blocked reports whether a backlog row waits behind an earlier live
// member of its lane (in the backlog, or read live outside it): the
// drainer cannot claim it before that member ends.
func (bl *backlog) blocked(a *Action) bool {
	return a.LaneKey != "" && a.PrevSeq != 0 && (bl.inIndex[a.PrevSeq] || bl.liveOutside[a.PrevSeq])
}

// laneTop is the seq of the first row of a's lane in the backlog, found
// by following prev links through the backlog's rows: one value per lane.
func (bl *backlog) laneTop(a *Action) int64 {
	var path []int64
	seq, prev := a.Seq, a.PrevSeq
	for {
		if t, ok := bl.top[seq]; ok {
			seq = t
			break
		}
		i, ok := bl.at[prev]
		if prev == 0 || !ok || len(path) > len(bl.rows) {
			break
		}
		path = append(path, seq)
		seq, prev = prev, bl.rows[i].PrevSeq
	}
	bl.top[a.Seq] = seq
	for _, s := range path {
		bl.top[s] = seq
	}
	return seq
}

// dueGauges adds up a partition's due rows into its gauges (design.md §8):
// a due row waiting behind an earlier live member of its lane is blocked
// (BlockedDepth, OldestBlockedAge), any other is claimable (DueDepth,
// OldestDueAge); a lane is stuck when its oldest due row, claimable or
// blocked, has waited longer than StuckAfter.
type dueGauges struct {
	bl         *backlog
	now        time.Time
	stuckAfter time.Duration
	lanes      map[int64]time.Duration // a lane's laneTop -> its oldest due age
}

func newDueGauges(bl *backlog, now time.Time, stuckAfter time.Duration) *dueGauges {
	return &dueGauges{bl: bl, now: now, stuckAfter: stuckAfter, lanes: map[int64]time.Duration{}}
}

// add counts one due row.
func (d *dueGauges) add(a *Action, g *PartitionGauges) {
	age := d.now.Sub(dueAt(a))
	if d.bl.blocked(a) {
		g.BlockedDepth++
		g.OldestBlockedAge = max(g.OldestBlockedAge, age)
	} else {
		g.DueDepth++
		g.OldestDueAge = max(g.OldestDueAge, age)
	}
	if a.LaneKey == "" {
		return
	}
	top := d.bl.laneTop(a)
	if old, ok := d.lanes[top]; !ok || age > old {
		d.lanes[top] = age
	}
}

// finish counts the stuck lanes.
func (d *dueGauges) finish(g *PartitionGauges) {
	for _, age := range d.lanes {
		if age > d.stuckAfter {
			g.StuckLaneHeads++
		}
	}
}
