package outbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// endParams describes how an action ends.
type endParams struct {
	To     State
	Reason StopReason
	Ref    string
	Cond   cond
	Result Result
	// InOrder: the action was claimed, so every earlier member of its lane
	// had ended; its predecessor link is dropped, and a claim of its
	// successor need not look further back (see lanewalk.go).
	InOrder bool
}

// retentionOf is how long an ended action of a kind is kept.
func (e *Engine) retentionOf(kind string) time.Duration {
	r := e.cfg.Retention
	if ad, ok := e.reg.Lookup(kind); ok {
		r = max(r, ad.Spec().Retention)
	}
	return r
}

// end writes the end of an action (design.md §7.1): terminal state, stop
// reason, ended time and TTL; the payload and the due index keys go. The
// ending is then recorded in the retention journal of ctx (a batch's), or
// in a journal item of its own (design.md §3.6). The ended hook's items and
// the relink of a lane member ending out of order (design.md §7.3) go in
// the same transaction; with none of them the end is a single conditional
// UpdateItem. The lane tail of the lane's last live member is deleted after
// the end lands (design.md §3.4). An action with an idempotency key has its
// record stripped and given its TTL right after the end lands, never before
// (design.md §3.5). A refused condition comes back as an error for which
// isCondFailed is true.
func (e *Engine) end(ctx context.Context, a *Action, p endParams) (*Action, error) {
	if !p.To.Ended() {
		return nil, fmt.Errorf("outbox: end to non-terminal state %s", p.To)
	}
	w := e.endWriteOf(a, p)
	hooks, err := e.endedHookItems(ctx, a, p)
	if err != nil {
		return nil, err
	}
	lane := &endLane{a: a, inOrder: p.InOrder, items: hooks, hooks: len(hooks), relinkAt: -1}
	if err := e.endLaneItems(ctx, lane, true); err != nil {
		return nil, err
	}
	writeErr, err := e.endSend(ctx, w, lane)
	if err != nil {
		return nil, err
	}
	if writeErr == nil && a.IdempotencyKey != "" {
		// The end landed: the action is over for good, and only now does
		// its record lose its copy of the action and get its TTL (after the
		// row's, design.md §3.5). Written before the end, a TTL could pass
		// while the action lived on after a holder died between the two
		// writes and nothing ran for longer than the TTL (sim seed 1597), or
		// after a cancel died there (its PROPOSED action is never
		// reclaimed); the record then expired under a live action and a
		// resend with the key made a second one (invariant 6).
		e.idemExpire(context.WithoutCancel(ctx), a, w.expiry.Add(idemTTLSlack+e.cfg.ClockSkew))
	}
	// Retention finds ended rows through the journal (design.md §3.6), not
	// an index entry per row. A failed end is journaled too: its write may
	// have landed though no answer said so (an ambiguous try whose
	// read-back failed), and listing a row that did not end costs retention
	// one skipped read, while missing one leaves it to TTL. A held end was
	// listed before it was written (lanehold.go).
	if !lane.journaled {
		e.journalEnd(ctx, a.Partition, a.Seq, w.retention, w.expiry)
	}
	if writeErr != nil {
		if isCondFailed(writeErr) {
			return nil, writeErr
		}
		return nil, fmt.Errorf("error ending action %s as %s: %w", a.ID, p.To, writeErr)
	}
	// Observed as the state it ended in: a Retry at the last attempt ended
	// FAILED, and the metric's Outcome (which the FAILED and UNCERTAIN
	// alarms read) says so.
	e.obs.ActionEnded(&w.ended, outcomeOf(p.To), p.Reason)
	return &w.ended, nil
}

// endWrite is the end's own write of the action row, and the action as it
// is once ended.
type endWrite struct {
	a         *Action
	to        State
	now       time.Time
	retention time.Duration
	expiry    time.Time
	upd       string
	cond      cond
	ended     Action
}

// endWriteOf builds the end's update of the action row: its condition is
// p.Cond and it sets the terminal state, stop reason, ended time, TTL and
// reference; it removes the payload, the due keys, the owner and the lease
// (and the predecessor link of an action ended in lane order).
func (e *Engine) endWriteOf(a *Action, p endParams) endWrite {
	now := e.clk.Now().UTC()
	w := endWrite{a: a, to: p.To, now: now, retention: e.retentionOf(a.Kind)}
	w.expiry = now.Add(w.retention)
	w.ended = *a
	w.ended.State, w.ended.StopReason, w.ended.EndedAt = p.To, p.Reason, now
	w.ended.Payload, w.ended.LeaseExpiresAt, w.ended.Owner = nil, time.Time{}, ""
	if p.Ref != "" {
		w.ended.ReadbackRef = p.Ref
	}
	set := "SET #st = :st, #sr = :sr, #ea = :ea, #ttl = :ttl"
	names := map[string]string{
		"#st": attrState, "#sr": attrStop, "#ea": attrEnded, "#ttl": attrTTL,
		"#pl": attrPayload, "#dpk": attrDuePK, "#dsk": attrDueSK, "#own": attrOwner, "#lx": attrLease,
	}
	vals := map[string]types.AttributeValue{
		":st": avS(string(p.To)), ":sr": avS(string(p.Reason)), ":ea": avMs(now), ":ttl": avN(w.expiry.Unix()),
	}
	if p.Ref != "" {
		set += ", #ref = :ref"
		names["#ref"] = attrRef
		vals[":ref"] = avS(p.Ref)
	}
	w.upd = set + " REMOVE #pl, #dpk, #dsk, #own, #lx"
	if p.InOrder && a.PrevSeq != 0 {
		w.upd += ", #prev"
		names["#prev"] = attrPrev
		w.ended.PrevSeq = 0
	}
	w.cond = p.Cond.and(cond{names: names, vals: vals})
	return w
}

// endedHookItems are the items the kind's EndedHook adds to the end.
func (e *Engine) endedHookItems(ctx context.Context, a *Action, p endParams) ([]types.TransactWriteItem, error) {
	ad, ok := e.reg.Lookup(a.Kind)
	if !ok {
		return nil, nil
	}
	h, ok := ad.(EndedHook)
	if !ok {
		return nil, nil
	}
	items, err := h.Ended(ctx, EndedAction{Action: *a, State: p.To, StopReason: p.Reason, Result: p.Result})
	if err != nil {
		return nil, fmt.Errorf("error building ended hook items of %s: %w", a.ID, err)
	}
	return items, nil
}

// endLane is what an end transaction carries besides the action's own
// write: the hook's items first, then the relink's, with the relink's
// position (in the transaction, the action's write being item 0; -1: none);
// and the lane tail's delete, sent once the end landed (nil: none).
type endLane struct {
	a        *Action
	inOrder  bool
	items    []types.TransactWriteItem
	hooks    int
	relinkAt int
	relinks  int // relinks refused so far
	tailDrop *types.Delete
	// hold: ending without a relink, the member must be held
	// (lanehold.go); journaled: its held end is listed.
	hold, journaled bool
}

// maxRelinkTries bounds the relinks an end tries before it ends without
// one (design.md §7.3).
const maxRelinkTries = 8

// endLaneItems (re)builds the lane's items of an end: the relink of a
// member ending out of order when relink allows it, or else whether the
// lane tail goes after the end (the lane's last live member).
func (e *Engine) endLaneItems(ctx context.Context, l *endLane, relink bool) error {
	a := l.a
	l.items, l.relinkAt, l.tailDrop = l.items[:l.hooks], -1, nil
	if a.LaneKey == "" {
		return nil
	}
	if relink && !l.inOrder {
		items, hold, err := e.unlink(ctx, a)
		if err != nil {
			return err
		}
		// Without relink (its tries ran out), the hold of the last look
		// stands: the predecessor was live then.
		l.hold = hold
		if len(items) > 0 {
			l.relinkAt = len(l.items) + 1
			l.items = append(l.items, items...)
			return nil
		}
	}
	// A member followed by a later live member of its lane is not the
	// lane's tail: no tail to read or clean up (design.md §7.1).
	if a.claim.followed {
		return nil
	}
	lid := laneID{a.WorkspaceID, a.LaneKey}
	tail, err := e.endTail(ctx, lid, a)
	if err != nil || tail.seq != a.Seq || tail.p != a.Partition {
		return err
	}
	if a.PrevSeq != 0 && !l.inOrder && l.hold {
		// Ending out of order (cancelled, expired) while an earlier member
		// may be live, with no relink possible: the tail stays, so the next
		// action of the lane still waits for that member.
		return nil
	}
	// The tail goes after the end, outside its transaction (ADR 0013):
	// until then it names an ended member, which an enqueue links behind
	// as behind any ended member (the claim's walk passes it).
	l.tailDrop = e.laneTailDelete(lid, tail).Delete
	return nil
}

// endTail reads the lane's tail for the end of a, which no member of its
// claimed run follows: first eventually consistent. A read naming a is
// acted on only through the tail delete, conditioned on the tail still
// naming a (a stale read is refused: a wasted delete). Any other answer
// would leave the tail in place, so it is confirmed by a consistent read:
// a stale read never leaves behind the tail of a drained lane (ADR 0017).
func (e *Engine) endTail(ctx context.Context, lid laneID, a *Action) (laneTail, error) {
	t, stale, err := e.readTailAs(ctx, lid, true)
	if err != nil || !stale || (t.seq == a.Seq && t.p == a.Partition) {
		return t, err
	}
	return e.readTail(ctx, lid)
}

// endSend sends the end, then deletes the lane tail when the end landed
// and the action was its lane's last live member (dropLaneTail). writeErr
// is the write's own failure; err a failure to build the lane's items
// again.
func (e *Engine) endSend(ctx context.Context, w endWrite, l *endLane) (writeErr, err error) {
	writeErr, err = e.endWrite(ctx, w, l)
	if err == nil && writeErr == nil && l.tailDrop != nil {
		e.dropLaneTail(ctx, l.tailDrop)
	}
	return writeErr, err
}

// endWrite writes the end: one conditional UpdateItem without other items,
// else a transaction, tried again when a neighbour's links moved (a fresh
// relink, then none).
func (e *Engine) endWrite(ctx context.Context, w endWrite, l *endLane) (writeErr, err error) {
	a := w.a
	for {
		upd, c := w.upd, w.cond
		if l.hold && l.relinkAt < 0 {
			// Held (lanehold.go): no TTL, and listed before it is written.
			if !l.journaled {
				if err := e.journalHeldRow(ctx, a.Partition, a.Seq, w.expiry); err != nil {
					return nil, err
				}
				l.journaled = true
			}
			upd, c = w.heldWrite()
		} else if l.relinkAt < 0 && !l.inOrder && a.LaneKey != "" && a.PrevSeq != 0 {
			// Out of order, no relink, not held (lanehold.go).
			upd, c = w.chainEndWrite()
		}
		if len(l.items) == 0 {
			return e.updateSettled(ctx, &dynamodb.UpdateItemInput{
				TableName: e.table(), Key: actionKey(a.Partition, a.Seq), UpdateExpression: aws.String(upd),
				ConditionExpression: aws.String(c.expr), ExpressionAttributeNames: c.names, ExpressionAttributeValues: c.vals,
			}, rowIs(w.to, a.Epoch, attrEnded, w.now)), nil
		}
		items := append([]types.TransactWriteItem{{Update: &types.Update{
			TableName: e.table(), Key: actionKey(a.Partition, a.Seq), UpdateExpression: aws.String(upd),
			ConditionExpression: aws.String(c.expr), ExpressionAttributeNames: c.names, ExpressionAttributeValues: c.vals,
		}}}, l.items...)
		writeErr = e.transact(ctx, items, e.token())
		again, err := e.endRetry(ctx, l, writeErr)
		if err != nil || !again {
			return writeErr, err
		}
	}
}

// endRetry decides whether a cancelled end transaction whose own guard held
// is tried again, and rebuilds its lane's items for that.
func (e *Engine) endRetry(ctx context.Context, l *endLane, writeErr error) (bool, error) {
	reasons, ok := cancelReasons(writeErr)
	if !ok || len(reasons) == 0 || reasons[0] == "ConditionalCheckFailed" {
		return false, nil
	}
	switch {
	case l.relinkAt > 0 && l.relinks < maxRelinkTries:
		// A neighbour's links moved (a concurrent end, erasure or enqueue
		// in the lane): read them again.
		l.relinks++
		return true, e.endLaneItems(ctx, l, true)
	case l.relinkAt > 0:
		// Links not as a relink needs them, again and again: end as before
		// relinks existed (the member keeps its prev and the lane walk
		// follows it).
		return true, e.endLaneItems(ctx, l, false)
	}
	return false, nil
}

// idemTTLSlack is how much later than its action's row an idempotency
// record expires, so that the record outlives its action's tombstone
// whatever order TTL deletes them in (design.md §3.5).
const idemTTLSlack = time.Hour

// idemExpire gives an ended action's idempotency record its TTL, and
// removes the copy of the action a written-first record carries (design.md
// §4.2): an ended action keeps no payload, and neither does its record. It
// is written right after the end lands (design.md §3.5), never before: the
// record must not carry a TTL while its action is live. Billed on the
// record's old size: 1 unit for a 1 KB action. Throttles and lost answers
// are tried again (the write is the same every time); if it is lost all the
// same (the process died between the end and this write), the record keeps
// no TTL and, if written first, the copy: the lookup of its key, or the
// erasure of its subject, removes it (design.md §3.5).
func (e *Engine) idemExpire(ctx context.Context, a *Action, expiry time.Time) {
	names := map[string]string{"#ttl": attrTTL, "#id": attrID}
	// The payload first, under the name every end uses for it.
	rm := []string{"#pl"}
	names["#pl"] = attrPayload
	for i, n := range recordContent {
		if n != attrPayload {
			rm = append(rm, fmt.Sprintf("#c%d", i))
			names[rm[len(rm)-1]] = n
		}
	}
	// A refused condition: the record names another action, or is gone.
	_ = e.updateSettled(ctx, &dynamodb.UpdateItemInput{
		TableName:                 e.table(),
		Key:                       key(idemPK(a.WorkspaceID, a.IdempotencyKey), skIdem),
		UpdateExpression:          aws.String("SET #ttl = :ttl REMOVE " + strings.Join(rm, ", ")),
		ConditionExpression:       aws.String("#id = :id"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: map[string]types.AttributeValue{":ttl": avN(expiry.Unix()), ":id": avS(a.ID)},
	}, nil)
}
