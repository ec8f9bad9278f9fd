package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Held rows (ADR 0019, design.md §7.3, §9). A lane member that ends, or is
// erased, out of order without taking itself out of its lane's chain (its
// relink refused maxRelinkTries times, or its predecessor an ended row the
// chain still passes through) stays a link of that chain: its successor
// names it, and a claim walks back through it to the earlier live member.
// Deleting it would cut the chain there, and the claim walk, finding the
// row gone, would let the successor run beside that member. So such a row
// is *held*: its end (or tombstone) carries no TTL, a listing of its own
// (sort key H#, journal.go; no TTL of its own) names it before the end is
// written, and retention deletes it only once no earlier member of its
// lane is live (or lists it again, to look once more a retention period
// later). Trimming beyond the row cap never deletes a held row: it reads
// only the R# journal, as builds before this one (v0.1.0) do, and those
// never see the H# listing, so they leave the row to this build.

// journalHeld is the writer name in the sort key of held rows' listings.
const journalHeld = "held"

// chainHeld reports whether a member whose predecessor link names prev
// (its row pr as read: state and prev; nil when gone) must be held when
// it ends without a relink: the chain goes on through prev to an earlier
// member that may be live. A gone predecessor ends the chain, and so does
// an ended one without prev: it ended in lane order, or out of order
// without its relink and not held (no member before it live then: such an
// end drops its prev too, chainEndWrite). A live one holds it; an ended
// one that keeps its own prev (held, a tombstone, or one taken out of the
// chain by its relink after this member read its own link) is walked back
// (at most maxLaneWalk rows; past that, held).
func (e *Engine) chainHeld(ctx context.Context, p int, prev int64, pr map[string]types.AttributeValue) (bool, error) {
	switch {
	case pr == nil:
		return false, nil
	case !State(getS(pr, attrState)).Ended():
		return true, nil
	}
	pp := getN(pr, attrPrev)
	if pp == 0 {
		return false, nil
	}
	live, err := e.ancestorsLive(ctx, p, map[int64]int64{prev: pp})
	return live[prev], err
}

// heldWrite is the end's write of a held row: the same without the TTL.
func (w endWrite) heldWrite() (string, cond) {
	upd := strings.Replace(w.upd, ", #ttl = :ttl", "", 1)
	c := cond{expr: w.cond.expr, names: map[string]string{}, vals: map[string]types.AttributeValue{}}
	for k, v := range w.cond.names {
		if k != "#ttl" {
			c.names[k] = v
		}
	}
	for k, v := range w.cond.vals {
		if k != ":ttl" {
			c.vals[k] = v
		}
	}
	return upd, c
}

// chainEndWrite is the end's write of a member that ends out of order
// without its relink and is not held: no member before it is live (and
// none comes back), so, as an end in lane order does, it drops its prev
// and the chain ends there. An out-of-order end behind it (a claim-fenced
// group finished member by member, each behind the one before) then reads
// nothing more and holds nothing, where it would walk back over every
// ended member before it and hold past maxLaneWalk.
func (w endWrite) chainEndWrite() (string, cond) {
	c := cond{expr: w.cond.expr, names: map[string]string{"#prev": attrPrev}, vals: w.cond.vals}
	for k, v := range w.cond.names {
		c.names[k] = v
	}
	return w.upd + ", #prev", c
}

// journalHeldRow lists a row about to be held in a listing of its own
// (H#, no TTL: retention must read it), before the row is written: a held row
// has no TTL to fall back on, so a lost journal write would keep it for
// good.
func (e *Engine) journalHeldRow(ctx context.Context, p int, seq int64, expiry time.Time) error {
	return e.writeJournal(ctx, journalHeld, p, []int64{seq}, expiry, true)
}

// retainHeld deals with held rows a listing (or journal item) whose expiry
// passed names (seq -> the row's prev): a row no earlier live member needs any more is
// deleted (with its record and evidence); the others, and the rows keep
// (listed, still live), are listed again, expiring one retention period
// from now, before the caller deletes the item that listed them.
func (e *Engine) retainHeld(ctx context.Context, p int, held map[int64]int64, keep []int64, now time.Time) (int, error) {
	if len(held) == 0 && len(keep) == 0 {
		return 0, nil
	}
	next := map[int64]int64{}
	for s, pv := range held {
		if pv != 0 {
			next[s] = pv
		}
	}
	live, err := e.ancestorsLive(ctx, p, next)
	if err != nil {
		return 0, err
	}
	n := 0
	for s := range held {
		if live[s] {
			keep = append(keep, s)
			continue
		}
		ok, _, err := e.deleteEndedIf(ctx, partitionPK(p), actionSK(s), heldCond())
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, e.writeJournal(ctx, journalHeld, p, keep, now.Add(e.cfg.Retention), true)
}

// heldCond is the condition that a row is held: ended without a TTL.
func heldCond() cond {
	return cond{expr: "attribute_not_exists(#ttl)", names: map[string]string{"#ttl": attrTTL}}
}

// isHeld reports whether a row is held: ended, no TTL.
func isHeld(it map[string]types.AttributeValue) bool {
	return State(getS(it, attrState)).Ended() && !has(it, attrTTL)
}

// deleteEndedIf deletes one ended action on the extra condition c (its
// TTL passed, it has one, it is held), with its idempotency record and its
// evidence. A refusal answers the row as it was (nil when gone).
func (e *Engine) deleteEndedIf(ctx context.Context, pk, sk string, c cond) (bool, map[string]types.AttributeValue, error) {
	c = cond{
		expr:  "#st IN (:d, :u, :f, :c)",
		names: map[string]string{"#st": attrState},
		vals: map[string]types.AttributeValue{
			":d": avS(string(StateDONE)), ":u": avS(string(StateUNCERTAIN)), ":f": avS(string(StateFAILED)), ":c": avS(string(StateCANCELLED)),
		},
	}.and(c)
	out, err := e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: e.table(), Key: key(pk, sk),
		ConditionExpression: aws.String(c.expr), ExpressionAttributeNames: c.names, ExpressionAttributeValues: c.vals,
		ReturnValues: types.ReturnValueAllOld, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return false, ccf.Item, nil
		}
		return false, nil, fmt.Errorf("error deleting ended action %s/%s: %w", pk, sk, err)
	}
	if err := e.deleteIdem(ctx, out.Attributes); err != nil {
		return true, nil, err
	}
	return true, nil, e.deleteEvidenceOf(ctx, out.Attributes)
}
