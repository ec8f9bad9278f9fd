package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ReapResult counts what a reaper run ended, with the backlog gauges.
type ReapResult struct {
	Uncertain, Exhausted, Expired int
	Gauges                        []PartitionGauges
}

// PartitionGauges are one partition's backlog gauges. Rows this build does
// not decode are not counted.
type PartitionGauges struct {
	Partition      int
	DueDepth       int           // ADMITTED actions due now
	ClaimedDepth   int           // EXECUTING actions under a live lease
	StuckLaneHeads int           // laned actions due for longer than StuckAfter
	OldestDueAge   time.Duration // how long the oldest due action has waited
	// InflightUnread counts the claim fence's in-flight entries (ADR 0009)
	// this run did not read: more than it reads per run (oldest lease
	// first), or throttled. A later run reads them.
	InflightUnread int
}

// Reap ends what a lost lease or the calendar makes final, in every
// partition: at-most-once actions whose lease expired after their write
// started (UNCERTAIN, LEASE_LOST_AFTER_WRITE), actions out of attempts
// (FAILED, or UNCERTAIN when their write may have happened;
// ATTEMPTS_EXHAUSTED), and unstarted actions past expires_at (CANCELLED,
// EXPIRED). An idempotent receiver fenced by its claim (ADR 0008) counts as
// started from its claim: with attempts left it is left for a reclaim (a
// resend is harmless), out of attempts it ends UNCERTAIN, never FAILED, as it
// may have been sent. It reads the due index and each partition's in-flight
// map on the claim fence (the actions claims took out of due, ADR 0009), so
// its cost grows with the backlog, not the history.
func (e *Engine) Reap(ctx context.Context) (*ReapResult, error) {
	res := &ReapResult{}
	for p := 0; p < e.cfg.Partitions; p++ {
		// A partition's endings go to one retention journal (ADR 0010).
		jr := e.newJournal("reaper")
		g, err := e.reapPartition(withJournal(ctx, jr), p, res)
		if jerr := jr.flush(context.WithoutCancel(ctx)); err == nil {
			err = jerr
		}
		if err != nil {
			return res, fmt.Errorf("error reaping partition %d: %w", p, err)
		}
		res.Gauges = append(res.Gauges, g)
	}
	return res, nil
}

func (e *Engine) reapPartition(ctx context.Context, p int, res *ReapResult) (PartitionGauges, error) {
	now := e.clk.Now().UTC()
	g := PartitionGauges{Partition: p}
	var rows []Action
	inIndex := map[int64]bool{}
	err := e.eachDuePage(ctx, dueQuery{partition: p}, func(page []dueRow) bool {
		for _, r := range page {
			rows = append(rows, r.a)
			inIndex[r.a.Seq] = true
		}
		return true
	})
	if err != nil {
		return g, err
	}
	// Claimed actions are out of due: the fence's in-flight map names them.
	// The reaper does not hold the fence, so it never writes the map; the
	// entries of what it ends go with the next holder's claim.
	inflight, unread, err := e.inflightRows(ctx, p)
	if err != nil {
		return g, err
	}
	g.InflightUnread = unread
	at := map[int64]int{}
	for i, a := range rows {
		at[a.Seq] = i
	}
	for _, a := range inflight {
		inIndex[a.Seq] = true
		if i, ok := at[a.Seq]; ok {
			rows[i] = a // a lagging index still shows the row before its claim
			continue
		}
		rows = append(rows, a)
	}
	for i := range rows {
		a := &rows[i]
		ad, ok := e.reg.Decodes(a.Kind, a.Variant)
		if !ok {
			continue // rolling upgrade: not ours to count or end
		}
		// A lane's head: its predecessor is not live in the index.
		head := a.LaneKey != "" && (a.PrevSeq == 0 || !inIndex[a.PrevSeq])
		if err := e.reapOne(ctx, a, ad.Spec().Class, now, head, res, &g); err != nil {
			return g, err
		}
	}
	return g, nil
}

func (e *Engine) reapOne(ctx context.Context, a *Action, class DeliveryClass, now time.Time, head bool, res *ReapResult, g *PartitionGauges) error {
	var to State
	var reason StopReason
	var c cond
	leaseOver := cond{
		expr:  "#lx <= :rnow",
		names: map[string]string{"#lx": attrLease},
		vals:  map[string]types.AttributeValue{":rnow": avMs(now)},
	}
	wrote := cond{expr: "attribute_exists(#wsa)", names: map[string]string{"#wsa": attrWrite}}
	notWrote := cond{expr: "attribute_not_exists(#wsa)", names: map[string]string{"#wsa": attrWrite}}
	exhausted := cond{expr: "#att >= #max", names: map[string]string{"#att": attrAttempt, "#max": attrMax}}
	switch a.State {
	case StateEXECUTING:
		if a.LeaseExpiresAt.After(now) {
			g.ClaimedDepth++
			return nil
		}
		// The due index does not carry the write fence: read the row.
		full, err := e.getActionItem(ctx, a.ID)
		if err != nil {
			return nil //nolint:nilerr // gone meanwhile: nothing to reap
		}
		cur, _ := decodeAction(full)
		if cur.Epoch != a.Epoch || cur.State != a.State {
			return nil
		}
		*a = cur
		switch {
		case class == AtMostOnce && !a.WriteStartedAt.IsZero():
			to, reason = StateUNCERTAIN, StopLeaseLostAfterWrite
			c = condState(a.State, a.Epoch).and(leaseOver).and(wrote)
		case a.Attempt >= a.MaxAttempts && !a.WriteStartedAt.IsZero():
			// Its fence is set, by its own write or (an idempotent
			// receiver, ADR 0008) by its claim: it may have been sent.
			to, reason = StateUNCERTAIN, StopAttemptsExhausted
			c = condState(a.State, a.Epoch).and(leaseOver).and(wrote).and(exhausted)
		case a.Attempt >= a.MaxAttempts:
			to, reason = StateFAILED, StopAttemptsExhausted
			c = condState(a.State, a.Epoch).and(leaseOver).and(notWrote).and(exhausted)
		case a.WriteStartedAt.IsZero() && !a.ExpiresAt.IsZero() && !a.ExpiresAt.After(now):
			// Its claim was lost before any write: it never started.
			to, reason = StateCANCELLED, StopExpired
			c = condState(a.State, a.Epoch).and(leaseOver).and(notWrote).and(cond{
				expr:  "#xa <= :rnow",
				names: map[string]string{"#xa": attrExpires},
			})
		default:
			e.gaugeDue(a, now, head, g)
			return nil // reclaimable: the drainer takes it
		}
	case StateADMITTED, StatePROPOSED:
		switch {
		case !a.ExpiresAt.IsZero() && !a.ExpiresAt.After(now):
			to, reason = StateCANCELLED, StopExpired
			c = condState(a.State, a.Epoch).and(cond{
				expr:  "#xa <= :rnow",
				names: map[string]string{"#xa": attrExpires},
				vals:  map[string]types.AttributeValue{":rnow": avMs(now)},
			})
		case a.State == StateADMITTED && a.Attempt >= a.MaxAttempts:
			to, reason = StateFAILED, StopAttemptsExhausted
			c = condState(a.State, a.Epoch).and(exhausted)
		case a.State == StateADMITTED && !a.NextAttemptAt.After(now):
			e.gaugeDue(a, now, head, g)
			return nil
		default:
			return nil
		}
	default:
		return nil
	}
	full, err := e.getActionItem(ctx, a.ID)
	if err != nil {
		return nil //nolint:nilerr // gone meanwhile: nothing to reap
	}
	cur, _ := decodeAction(full)
	if cur.Epoch != a.Epoch || cur.State != a.State {
		return nil // moved on since the index proposed it
	}
	// An EXECUTING action whose write fence is set started its attempt, so
	// every earlier member of its lane had ended. One without a fence may be
	// a member claimed behind its lane's head that never started (its
	// drainer died while the head ran): earlier members may still be live.
	inOrder := cur.State == StateEXECUTING && !cur.WriteStartedAt.IsZero()
	_, err = e.end(ctx, &cur, endParams{To: to, Reason: reason, Cond: c, Result: Result{Outcome: outcomeOf(to), StopReason: reason}, InOrder: inOrder})
	if err != nil {
		if isCondFailed(err) {
			return nil
		}
		return err
	}
	switch reason {
	case StopLeaseLostAfterWrite:
		res.Uncertain++
	case StopAttemptsExhausted:
		res.Exhausted++
	case StopExpired:
		res.Expired++
	}
	return nil
}

func (e *Engine) gaugeDue(a *Action, now time.Time, head bool, g *PartitionGauges) {
	due := a.NextAttemptAt
	if a.State == StateEXECUTING {
		due = a.LeaseExpiresAt
	}
	g.DueDepth++
	if age := now.Sub(due); age > g.OldestDueAge {
		g.OldestDueAge = age
	}
	if head && now.Sub(due) > e.cfg.StuckAfter {
		g.StuckLaneHeads++
	}
}

func outcomeOf(s State) Outcome {
	switch s {
	case StateDONE:
		return OutcomeDone
	case StateUNCERTAIN:
		return OutcomeUncertain
	case StateFAILED:
		return OutcomeFailed
	case StateCANCELLED:
		return OutcomeCancelled
	}
	return OutcomeNone
}
