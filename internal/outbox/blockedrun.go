package outbox

import (
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The blocked run at the front of the due index (ADR 0012 part 3, design.md
// §3.3, §5 step 2). A lane whose head is stranded (claimed by a drainer that
// died, its lease running) keeps its members at the front of the due index;
// every claim would read them all again before the rows behind them. The
// claim that finds such a run remembers it in the fence row: `blk` = {`sk`:
// the due sort key of the run's last row, `until`: the earliest lease end of
// what blocks it}. Until then claims read the index after `sk`.
//
// A run is remembered only when every row of it, from the very first row
// of the index, is a candidate this claim dropped because a predecessor is
// EXECUTING under a lease that has not ended (the stranded head, directly
// or through the members before it), and its last row is due before now
// less the clock skew bound and the write margin: rows that enter the
// index later are due at their writer's now (enqueue, admit, retry, defer,
// Reread), never at or before `sk`, and the margin covers the index's lag
// (a row written a moment ago that the index does not show yet). The holder's own release of a claimed action puts it back
// at its old due time: when that is at or before `sk`, the holder drops
// `blk` with its next fence write. What may still land at or before `sk`
// (a release by a drainer that lost the fence, a written-first keyed
// enqueue finished late) waits at most until `until`.

const attrBlocked = "blk" // FENCE: the blocked run at the front of due, {sk, until}

// blockedRun is a remembered blocked run; the zero value is none.
type blockedRun struct {
	sk    string    // the due sort key of the run's last row
	until time.Time // when the run's blocking lease ends
}

func (b blockedRun) usable(now time.Time) bool { return b.sk != "" && b.until.After(now) }

func (b blockedRun) item() types.AttributeValue {
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		"sk": avS(b.sk), "until": avMs(b.until),
	}}
}

// decodeBlocked reads a fence row's blocked run.
func decodeBlocked(it map[string]types.AttributeValue) blockedRun {
	m, ok := it[attrBlocked].(*types.AttributeValueMemberM)
	if !ok {
		return blockedRun{}
	}
	return blockedRun{sk: getS(m.Value, "sk"), until: getMs(m.Value, "until")}
}

// blkWrite is what the holder's next fence write does to `blk`: set it,
// remove it, or nothing.
type blkWrite struct {
	set  *blockedRun
	drop bool
}

// blocked is the run claims of this hold may read past now: the one this
// hold remembered, else the row's.
func (h *fenceHold) blocked(now time.Time) (blockedRun, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.blk
	if h.blkSet != nil {
		b = *h.blkSet
	}
	if h.blkDrop || !b.usable(now) {
		return blockedRun{}, false
	}
	return b, true
}

// remember records a blocked run for the holder's next fence write.
func (h *fenceHold) remember(b blockedRun) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.blkSet, h.blkDrop = &b, false
}

// releasedAt tells the hold that one of its actions went back into the
// due index at sort key sk: a run remembered at or after sk must go, or
// claims would read past the action.
func (h *fenceHold) releasedAt(sk string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.blk
	if h.blkSet != nil {
		b = *h.blkSet
	}
	if b.sk != "" && sk <= b.sk {
		h.blkSet, h.blkDrop = nil, true
	}
}

// blkPending is the hold's pending write to `blk`.
func (h *fenceHold) blkPending() blkWrite {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.blkSet != nil {
		b := *h.blkSet
		return blkWrite{set: &b}
	}
	return blkWrite{drop: h.blkDrop && h.blk.sk != ""}
}

// wroteBlk updates the hold after a fence write with w landed.
func (h *fenceHold) wroteBlk(w blkWrite) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case w.set != nil:
		h.blk = *w.set
		if h.blkSet != nil && *h.blkSet == *w.set {
			h.blkSet = nil
		}
	case w.drop:
		h.blk = blockedRun{}
		h.blkDrop = false
	}
}

// render adds w to an update expression's SET and REMOVE parts.
func (w blkWrite) render(set, rm []string, names map[string]string, vals map[string]types.AttributeValue) ([]string, []string) {
	switch {
	case w.set != nil:
		names["#blk"], vals[":blk"] = attrBlocked, w.set.item()
		set = append(set, "#blk = :blk")
	case w.drop:
		names["#blk"] = attrBlocked
		rm = append(rm, "#blk")
	}
	return set, rm
}

// joinUpdate renders an update expression from its SET and REMOVE parts.
func joinUpdate(set, rm []string) string {
	s := ""
	if len(set) > 0 {
		s = "SET " + strings.Join(set, ", ")
	}
	if len(rm) > 0 {
		if s != "" {
			s += " "
		}
		s += "REMOVE " + strings.Join(rm, ", ")
	}
	return s
}

// dueMark is one row the claim's due read returned, in index order: its
// seq, due time and sort key, and whether it became a candidate.
type dueMark struct {
	seq  int64
	due  time.Time
	sk   string
	kept bool
}

// rememberBlockedRun finds the blocked run at the front of the due index
// in what a claim read from the front (marks, in index order) and
// remembers it in the hold when it is long enough to be worth it: at least
// two batches' worth of rows that every claim would otherwise read again.
//
// Rows due before now less the clock skew bound and the write margin are
// all in the index by now (the firm part of the run); a row due later may
// still enter it at or before the run's last key (a write in flight, the
// index's lag). A firm run of two batches is remembered until its blocking
// lease ends. A run that is long enough only with its young rows is
// remembered until every row due at or before its last key must be in the
// index too (its last row's due time plus the bound), or its lease ends,
// whichever is first: then a claim reads it from the front once more and,
// the run now firm, remembers it until the lease ends. A row that entered
// the young run late waits at most until then (ADR 0012 part 3, amended).
func (e *Engine) rememberBlockedRun(r *claimRun, marks []dueMark) {
	bound := e.cfg.ClockSkew + e.cfg.WriteMargin
	newest := r.now.Add(-bound)
	var run, firm blockedRun
	var last time.Time // the due time of the run's last row
	n, nFirm := 0, 0
	for _, m := range marks {
		u, ok := r.blockedUntil[m.seq]
		if !m.kept || !ok || !u.After(r.now) {
			break
		}
		if run.until.IsZero() || u.Before(run.until) {
			run.until = u
		}
		run.sk, last = m.sk, m.due
		n++
		if m.due.Before(newest) {
			firm, nFirm = run, n
		}
	}
	switch {
	case nFirm >= 2*r.limit:
		r.h.remember(firm)
	case n >= 2*r.limit:
		// Every row due at or before last is in the index once last is
		// older than the bound: from last + bound + 1 ms on.
		if visible := last.Add(bound + time.Millisecond); visible.Before(run.until) {
			run.until = visible
		}
		if run.until.After(r.now) {
			r.h.remember(run)
		}
	}
}

// untilOf is when what blocks a lane behind pred can end: pred's lease when
// it was read EXECUTING under a running lease, or what blocks pred when it
// is itself a dropped candidate. ok is false when not known (an ADMITTED
// predecessor, a reclaim not taken): such a lane is not remembered.
func (r *claimRun) untilOf(pred int64) (time.Time, bool) {
	if pred == 0 {
		return time.Time{}, false
	}
	if u, ok := r.leaseOf[pred]; ok {
		return u, true
	}
	u, ok := r.blockedUntil[pred]
	return u, ok
}

// dueOrNow is the earliest due time a released action can go back into
// the due index at: the due time it was claimed at, or now.
func dueOrNow(a Action, now time.Time) time.Time {
	if a.NextAttemptAt.IsZero() || a.NextAttemptAt.After(now) {
		return now
	}
	return a.NextAttemptAt
}
