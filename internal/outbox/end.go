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

// end writes the end of an action: terminal state, stop reason, ended time
// and TTL; the payload and the due index keys go. The ending is then
// recorded in the retention journal of ctx (a batch's), or in a journal
// item of its own (ADR 0010). The ended hook's items and the lane tail
// cleanup (when this action is its lane's tail) go in the same transaction;
// with none of them the end is a single conditional UpdateItem. An action
// with an idempotency key has its record stripped and given its TTL just
// before (ADR 0007, amended). A refused condition comes back as an error
// for which isCondFailed is true.
func (e *Engine) end(ctx context.Context, a *Action, p endParams) (_ *Action, err error) {
	if !p.To.Ended() {
		return nil, fmt.Errorf("outbox: end to non-terminal state %s", p.To)
	}
	now := e.clk.Now().UTC()
	ret := e.retentionOf(a.Kind)
	expiry := now.Add(ret)
	ended := *a
	ended.State, ended.StopReason, ended.EndedAt = p.To, p.Reason, now
	ended.Payload, ended.LeaseExpiresAt, ended.Owner = nil, time.Time{}, ""
	if p.Ref != "" {
		ended.ReadbackRef = p.Ref
	}
	set := "SET #st = :st, #sr = :sr, #ea = :ea, #ttl = :ttl"
	names := map[string]string{
		"#st": attrState, "#sr": attrStop, "#ea": attrEnded, "#ttl": attrTTL,
		"#pl": attrPayload, "#dpk": attrDuePK, "#dsk": attrDueSK, "#own": attrOwner, "#lx": attrLease,
	}
	vals := map[string]types.AttributeValue{
		":st": avS(string(p.To)), ":sr": avS(string(p.Reason)), ":ea": avMs(now), ":ttl": avN(expiry.Unix()),
	}
	if p.Ref != "" {
		set += ", #ref = :ref"
		names["#ref"] = attrRef
		vals[":ref"] = avS(p.Ref)
	}
	upd := set + " REMOVE #pl, #dpk, #dsk, #own, #lx"
	if p.InOrder && a.PrevSeq != 0 {
		upd += ", #prev"
		names["#prev"] = attrPrev
		ended.PrevSeq = 0
	}
	c := p.Cond.and(cond{names: names, vals: vals})

	var extra []types.TransactWriteItem
	if ad, ok := e.reg.Lookup(a.Kind); ok {
		if h, ok := ad.(EndedHook); ok {
			items, err := h.Ended(ctx, EndedAction{Action: *a, State: p.To, StopReason: p.Reason, Result: p.Result})
			if err != nil {
				return nil, fmt.Errorf("error building ended hook items of %s: %w", a.ID, err)
			}
			extra = append(extra, items...)
		}
	}
	hooks := len(extra)
	// laneItems adds the lane's items to extra: the relink of a member
	// ending out of order (ADR 0006), or else the lane tail cleanup.
	tailAt, relinkAt := -1, -1
	laneItems := func(relink bool) error {
		extra, tailAt, relinkAt = extra[:hooks], -1, -1
		if a.LaneKey == "" {
			return nil
		}
		if relink && !p.InOrder {
			items, err := e.unlink(ctx, a)
			if err != nil {
				return err
			}
			if len(items) > 0 {
				relinkAt = len(extra) + 1
				extra = append(extra, items...)
				return nil
			}
		}
		// A member followed by a later live member of its lane is not the
		// lane's tail: no tail to read or clean up (ADR 0005).
		if a.followed {
			return nil
		}
		lid := laneID{a.WorkspaceID, a.LaneKey}
		tail, err := e.readTail(ctx, a.Partition, lid)
		if err != nil {
			return err
		}
		blocked := false
		if tail == a.Seq && a.PrevSeq != 0 && !p.InOrder {
			// Ending out of order (cancelled, expired) while an earlier
			// member is live, with no relink possible: the tail stays, so
			// the next action of the lane still waits for that member.
			m, err := e.ancestorsLive(ctx, a.Partition, map[int64]int64{a.Seq: a.PrevSeq})
			if err != nil {
				return err
			}
			blocked = m[a.Seq]
		}
		if tail == a.Seq && !blocked {
			tailAt = len(extra) + 1
			extra = append(extra, types.TransactWriteItem{Delete: &types.Delete{
				TableName:                 e.table(),
				Key:                       key(partitionPK(a.Partition), laneSK(lid.ws, lid.lane)),
				ConditionExpression:       aws.String("#s = :s"),
				ExpressionAttributeNames:  map[string]string{"#s": attrTailSeq},
				ExpressionAttributeValues: map[string]types.AttributeValue{":s": avN(a.Seq)},
			}})
		}
		return nil
	}
	if err := laneItems(true); err != nil {
		return nil, err
	}
	if a.IdempotencyKey != "" {
		// The record loses its copy of the action and gets its TTL before
		// the end is written (ADR 0007, amended): an end that stands thus
		// never leaves a payload behind in its record, even when the
		// process dies right after it. The action's row exists (it was
		// read to decide this end), so the written-first recovery no
		// longer needs the copy. The TTL has a slack over the row's, which
		// is taken a little later, so the record outlives its action's
		// tombstone (DESIGN.md §5.6).
		if err := e.idemExpire(ctx, a, expiry.Add(idemTTLSlack+e.cfg.ClockSkew)); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				// Refused or failed, the action may still be live: its
				// record must not expire before it does.
				e.idemUnexpire(context.WithoutCancel(ctx), a)
			}
		}()
	}
	const maxRelinkTries = 8
	relinks := 0
	for try := 0; ; try++ {
		var err error
		if len(extra) == 0 {
			err = e.updateSettled(ctx, &dynamodb.UpdateItemInput{
				TableName: e.table(), Key: actionKey(a.Partition, a.Seq), UpdateExpression: aws.String(upd),
				ConditionExpression: aws.String(c.expr), ExpressionAttributeNames: c.names, ExpressionAttributeValues: c.vals,
			}, rowIs(p.To, a.Epoch, attrEnded, now))
		} else {
			items := append([]types.TransactWriteItem{{Update: &types.Update{
				TableName: e.table(), Key: actionKey(a.Partition, a.Seq), UpdateExpression: aws.String(upd),
				ConditionExpression: aws.String(c.expr), ExpressionAttributeNames: c.names, ExpressionAttributeValues: c.vals,
			}}}, extra...)
			err = e.transact(ctx, items, e.token())
			if reasons, ok := cancelReasons(err); ok && len(reasons) > 0 && reasons[0] != "ConditionalCheckFailed" {
				if relinkAt > 0 && relinks < maxRelinkTries {
					// The action's own guard held; a neighbour's links
					// moved (a concurrent end, erasure or enqueue in the
					// lane): read them again.
					relinks++
					if err := laneItems(true); err != nil {
						return nil, err
					}
					continue
				}
				if relinkAt > 0 {
					// Links not as a relink needs them, again and again:
					// end as before relinks existed (the member keeps its
					// prev and the lane walk follows it).
					if err := laneItems(false); err != nil {
						return nil, err
					}
					continue
				}
				if try < 3 {
					// The lane tail moved on (a new action joined the
					// lane): end without the cleanup.
					var keep []types.TransactWriteItem
					for i, it := range extra {
						if i+1 == tailAt && reasons[i+1] == "ConditionalCheckFailed" {
							continue
						}
						keep = append(keep, it)
					}
					if len(keep) < len(extra) {
						extra, tailAt = keep, -1
						continue
					}
				}
			}
		}
		// Retention finds ended rows through the journal (ADR 0010), not
		// an index entry per row. A failed end is journaled too: its write
		// may have landed though no answer said so (an ambiguous try whose
		// read-back failed), and listing a row that did not end costs
		// retention one skipped read, while missing one leaves it to TTL.
		e.journalEnd(ctx, a.Partition, a.Seq, ret, expiry)
		if err != nil {
			if isCondFailed(err) {
				return nil, err
			}
			return nil, fmt.Errorf("error ending action %s as %s: %w", a.ID, p.To, err)
		}
		e.obs.ActionEnded(&ended, p.Result.Outcome, p.Reason)
		return &ended, nil
	}
}

// idemTTLSlack is how much later than its action's row an idempotency
// record expires: the record's TTL is written before the end (which takes
// its own time and TTL a little later), and a later end by another holder
// writes it again.
const idemTTLSlack = time.Hour

// idemExpire gives an ending action's idempotency record its TTL, and
// removes the copy of the action a written-first record carries (ADR 0007):
// an ended action keeps no payload, and neither does its record. It is
// written just before the end (ADR 0007, amended). Billed on the record's
// old size: 1 unit for a 1 KB action.
func (e *Engine) idemExpire(ctx context.Context, a *Action, expiry time.Time) error {
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
	_, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 e.table(),
		Key:                       key(idemPK(a.WorkspaceID, a.IdempotencyKey), skIdem),
		UpdateExpression:          aws.String("SET #ttl = :ttl REMOVE " + strings.Join(rm, ", ")),
		ConditionExpression:       aws.String("#id = :id"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: map[string]types.AttributeValue{":ttl": avN(expiry.Unix()), ":id": avS(a.ID)},
	})
	if err != nil && !isCondFailed(err) {
		return fmt.Errorf("error setting TTL of idempotency record of %s: %w", a.ID, err)
	}
	return nil
}

// idemUnexpire takes the TTL off an idempotency record again after the end
// it was written for did not land (refused, or failed): while its action is
// live (checked in the same transaction) the record must stay, so that an
// enqueue with its key finds the action (DESIGN.md §5.6). If the action
// ended meanwhile, its end wrote the TTL and this changes nothing. The copy
// of the action does not come back: the action's row exists. Best effort:
// only a refused or failed end pays it, and if it is lost too the record
// expires at its action's retention plus idemTTLSlack.
func (e *Engine) idemUnexpire(ctx context.Context, a *Action) {
	_ = e.transact(ctx, []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{
			TableName: e.table(), Key: actionKey(a.Partition, a.Seq),
			ConditionExpression:      aws.String("#st IN (:pro, :adm, :exe)"),
			ExpressionAttributeNames: map[string]string{"#st": attrState},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pro": avS(string(StatePROPOSED)), ":adm": avS(string(StateADMITTED)), ":exe": avS(string(StateEXECUTING)),
			},
		}},
		{Update: &types.Update{
			TableName: e.table(), Key: key(idemPK(a.WorkspaceID, a.IdempotencyKey), skIdem),
			UpdateExpression:          aws.String("REMOVE #ttl"),
			ConditionExpression:       aws.String("#id = :id"),
			ExpressionAttributeNames:  map[string]string{"#ttl": attrTTL, "#id": attrID},
			ExpressionAttributeValues: map[string]types.AttributeValue{":id": avS(a.ID)},
		}},
	}, e.token())
}
