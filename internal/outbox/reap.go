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

// PartitionGauges are one partition's backlog gauges (design.md §8). Rows
// this build does not decode are not counted.
type PartitionGauges struct {
	Partition int
	// DueDepth counts the actions the drainer could claim now: due
	// (ADMITTED and their next attempt come, or EXECUTING with their lease
	// over) and not waiting behind an earlier live member of their lane.
	DueDepth int
	// BlockedDepth counts the due actions waiting behind an earlier live
	// member of their lane (retrying, deferred, running, or a proposal):
	// they cannot be claimed before it ends.
	BlockedDepth int
	ClaimedDepth int // EXECUTING actions under a live lease
	// StuckLaneHeads counts the lanes whose oldest due member (the head,
	// or one blocked behind it) has been due longer than StuckAfter: a
	// head that does not end (retries, deferrals), or is not claimed.
	StuckLaneHeads int
	// OldestDueAge is how long the oldest claimable action has waited
	// (DueDepth's): growing, the drainer is not keeping up.
	OldestDueAge time.Duration
	// OldestBlockedAge is how long the oldest blocked action has waited
	// (BlockedDepth's): growing, a lane is held by its head.
	OldestBlockedAge time.Duration
	// InflightUnread counts the claim fence's in-flight entries (design.md §3.3)
	// this run did not read: more than it reads per run (oldest lease
	// first), or throttled. A later run reads them.
	InflightUnread int
}

// Reap ends what a lost lease or the calendar makes final, in every
// partition: at-most-once actions whose lease expired after their write
// started (UNCERTAIN, LEASE_LOST_AFTER_WRITE), actions out of attempts
// (FAILED, or UNCERTAIN when their write may have happened;
// ATTEMPTS_EXHAUSTED), and unstarted actions past expires_at (CANCELLED,
// EXPIRED). An idempotent receiver fenced by its claim (design.md §5) counts as
// started from its claim: with attempts left it is left for a reclaim (a
// resend is harmless), out of attempts it ends UNCERTAIN, never FAILED, as it
// may have been sent. It reads the due index and each partition's in-flight
// map on the claim fence (the actions claims took out of due, design.md §3.3), so
// its cost grows with the backlog, not the history.
func (e *Engine) Reap(ctx context.Context) (*ReapResult, error) {
	res := &ReapResult{}
	// A deploy of another Config.Partitions becomes the count (ADR 0011 §2).
	if err := e.applyPartitions(ctx); err != nil {
		return res, err
	}
	_, live, err := e.partitionCounts(ctx)
	if err != nil {
		return res, err
	}
	for p := 0; p < live; p++ {
		// A partition's endings go to one retention journal (design.md §3.6).
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
	return res, e.retirePartitions(ctx)
}

func (e *Engine) reapPartition(ctx context.Context, p int, res *ReapResult) (PartitionGauges, error) {
	now := e.clk.Now().UTC()
	g := PartitionGauges{Partition: p}
	bl, err := e.readBacklog(ctx, p, 0)
	if err != nil {
		return g, err
	}
	g.InflightUnread = bl.unread
	due := newDueGauges(bl, now, e.cfg.StuckAfter)
	rows := bl.rows
	for i := range rows {
		a := &rows[i]
		ad, ok := e.reg.Decodes(a.Kind, a.Variant)
		if !ok {
			continue // rolling upgrade: not ours to count or end
		}
		if err := e.reapOne(ctx, reapRow{a: a, class: ad.Spec().Class, due: due}, now, res, &g); err != nil {
			return g, err
		}
	}
	due.finish(&g)
	return g, nil
}

// reapRow is one row a reaper run judges: the action as the index or the
// in-flight map shows it, its kind's delivery class, and the partition's
// gauges of due rows.
type reapRow struct {
	a     *Action
	class DeliveryClass
	due   *dueGauges
}

// reapVerdict is how the reaper ends an action: its final state and stop
// reason, and the condition the end write carries.
type reapVerdict struct {
	to     State
	reason StopReason
	cond   cond
}

// reapOne ends one row when a lost lease or the calendar makes it final
// (design.md §8), and counts it in the gauges otherwise.
func (e *Engine) reapOne(ctx context.Context, r reapRow, now time.Time, res *ReapResult, g *PartitionGauges) error {
	var v reapVerdict
	var ok bool
	switch r.a.State {
	case StateEXECUTING:
		if r.a.LeaseExpiresAt.After(now) {
			g.ClaimedDepth++
			return nil
		}
		// The due index does not carry the write fence: read the row.
		full, err := e.getRow(ctx, r.a.Partition, r.a.Seq)
		if err != nil {
			return nil //nolint:nilerr // gone meanwhile: nothing to reap
		}
		cur, _ := decodeAction(full)
		if cur.Epoch != r.a.Epoch || cur.State != r.a.State {
			return nil
		}
		*r.a = cur
		if v, ok = reapLeaseLost(r.a, r.class, now); !ok {
			r.due.add(r.a, g)
			return nil // reclaimable: the drainer takes it
		}
	case StateADMITTED, StatePROPOSED:
		if v, ok = reapWaiting(r.a, now); !ok {
			if r.a.State == StateADMITTED && !r.a.NextAttemptAt.After(now) {
				r.due.add(r.a, g)
			}
			return nil
		}
	default:
		return nil
	}
	return e.reapEnd(ctx, r.a, v, res)
}

// reapLeaseLost judges an EXECUTING action whose lease is over, as its row
// reads; ok is false when a drainer may reclaim it.
func reapLeaseLost(a *Action, class DeliveryClass, now time.Time) (reapVerdict, bool) {
	leaseOver := cond{
		expr:  "#lx <= :rnow",
		names: map[string]string{"#lx": attrLease},
		vals:  map[string]types.AttributeValue{":rnow": avMs(now)},
	}
	wrote := cond{expr: "attribute_exists(#wsa)", names: map[string]string{"#wsa": attrWrite}}
	notWrote := cond{expr: "attribute_not_exists(#wsa)", names: map[string]string{"#wsa": attrWrite}}
	exhausted := cond{expr: "#att >= #max", names: map[string]string{"#att": attrAttempt, "#max": attrMax}}
	base := condState(a.State, a.Epoch).and(leaseOver)
	switch {
	case class == AtMostOnce && !a.WriteStartedAt.IsZero():
		return reapVerdict{StateUNCERTAIN, StopLeaseLostAfterWrite, base.and(wrote)}, true
	case a.Attempt >= a.MaxAttempts && !a.WriteStartedAt.IsZero():
		// Its fence is set, by its own write or (an idempotent receiver,
		// design.md §5) by its claim: it may have been sent.
		return reapVerdict{StateUNCERTAIN, StopAttemptsExhausted, base.and(wrote).and(exhausted)}, true
	case a.Attempt >= a.MaxAttempts:
		return reapVerdict{StateFAILED, StopAttemptsExhausted, base.and(notWrote).and(exhausted)}, true
	case a.WriteStartedAt.IsZero() && !a.ExpiresAt.IsZero() && !a.ExpiresAt.After(now):
		// Its claim was lost before any write: it never started.
		return reapVerdict{StateCANCELLED, StopExpired, base.and(notWrote).and(cond{
			expr:  "#xa <= :rnow",
			names: map[string]string{"#xa": attrExpires},
		})}, true
	}
	return reapVerdict{}, false
}

// reapWaiting judges an ADMITTED or PROPOSED action: expired, or out of
// attempts; ok is false when it stays.
func reapWaiting(a *Action, now time.Time) (reapVerdict, bool) {
	switch {
	case !a.ExpiresAt.IsZero() && !a.ExpiresAt.After(now):
		return reapVerdict{StateCANCELLED, StopExpired, condState(a.State, a.Epoch).and(cond{
			expr:  "#xa <= :rnow",
			names: map[string]string{"#xa": attrExpires},
			vals:  map[string]types.AttributeValue{":rnow": avMs(now)},
		})}, true
	case a.State == StateADMITTED && a.Attempt >= a.MaxAttempts:
		exhausted := cond{expr: "#att >= #max", names: map[string]string{"#att": attrAttempt, "#max": attrMax}}
		return reapVerdict{StateFAILED, StopAttemptsExhausted, condState(a.State, a.Epoch).and(exhausted)}, true
	}
	return reapVerdict{}, false
}

// reapEnd writes the reaper's end of an action, unless it moved on since it
// was read, and counts it.
func (e *Engine) reapEnd(ctx context.Context, a *Action, v reapVerdict, res *ReapResult) error {
	full, err := e.getRow(ctx, a.Partition, a.Seq)
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
	// A member fenced by its claim behind its group's head (`wsh`, ADR
	// 0015) may not have started: not in order either.
	inOrder := cur.State == StateEXECUTING && !cur.WriteStartedAt.IsZero() && getN(full, attrWriteHead) == 0
	_, err = e.end(ctx, &cur, endParams{To: v.to, Reason: v.reason, Cond: v.cond, Result: Result{Outcome: outcomeOf(v.to), StopReason: v.reason}, InOrder: inOrder})
	if err != nil {
		if isCondFailed(err) {
			return nil
		}
		return err
	}
	switch v.reason {
	case StopLeaseLostAfterWrite:
		res.Uncertain++
	case StopAttemptsExhausted:
		res.Exhausted++
	case StopExpired:
		res.Expired++
	}
	return nil
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
