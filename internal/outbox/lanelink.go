package outbox

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Lane relinks (design.md §7.3). A member that ends out of order, while
// the member before it is live, takes itself out of its lane's chain in its
// end transaction: its successor's prev becomes its own prev (or, with no
// successor, the lane tail moves back to its predecessor). No chain then
// passes through an ended row, and deleting ended rows (TTL, retention)
// never cuts a chain; where the relink cannot land, the member is held
// (lanehold.go) until the members before it have ended. The successor is found when it is needed, by walking
// prev links back from the lane tail (and, past maxSuccessorWalk, by one
// Query of the partition's seqs after the member): an enqueue writes no
// successor link. Links are only ever written on live rows (design.md §3.1).

// readLinks reads an action row's state and lane links (nil when gone).
func (e *Engine) readLinks(ctx context.Context, p int, seq int64) (map[string]types.AttributeValue, error) {
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: e.table(), Key: actionKey(p, seq), ConsistentRead: aws.Bool(true),
		ProjectionExpression:     aws.String("#st, #prev"),
		ExpressionAttributeNames: map[string]string{"#st": attrState, "#prev": attrPrev},
	})
	if err != nil {
		return nil, fmt.Errorf("error reading lane links of %s: %w", keyLabel(p, seq), err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// liveCond is the condition that a row exists and has not ended.
const liveCond = "attribute_exists(#st) AND NOT (#st IN (:ld, :lu, :lf, :lc))"

func liveVals(vals map[string]types.AttributeValue) map[string]types.AttributeValue {
	vals[":ld"] = avS(string(StateDONE))
	vals[":lu"] = avS(string(StateUNCERTAIN))
	vals[":lf"] = avS(string(StateFAILED))
	vals[":lc"] = avS(string(StateCANCELLED))
	return vals
}

// predLive keeps the predecessor of a relinked member live until the relink
// commits: it must be, for the chain to stop at it.
func (e *Engine) predLive(p int, seq int64) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: e.table(), Key: actionKey(p, seq),
		ConditionExpression:       aws.String(liveCond),
		ExpressionAttributeNames:  map[string]string{"#st": attrState},
		ExpressionAttributeValues: liveVals(map[string]types.AttributeValue{}),
	}}
}

// linkPrev sets a live row's predecessor link from old to prev.
func (e *Engine) linkPrev(p int, seq, old, prev int64) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName: e.table(), Key: actionKey(p, seq), UpdateExpression: aws.String("SET #prev = :prev"),
		ConditionExpression:       aws.String(liveCond + " AND #prev = :old"),
		ExpressionAttributeNames:  map[string]string{"#st": attrState, "#prev": attrPrev},
		ExpressionAttributeValues: liveVals(map[string]types.AttributeValue{":old": avN(old), ":prev": avN(prev)}),
	}}
}

// unlink builds the items that take a member ending out of order out of its
// lane's chain: nil when there is nothing to do (no predecessor, or the
// predecessor has ended: the chain goes no further back to a live member
// through this one than through it) or when the links are not as a relink
// needs them (the member is not found on the chain from the tail); then
// the member keeps its prev and the lane walk follows it. hold says
// whether the member, ending without these items, must be held
// (lanehold.go): an earlier member of its lane may be live.
func (e *Engine) unlink(ctx context.Context, a *Action) (items []types.TransactWriteItem, hold bool, err error) {
	self, err := e.readLinks(ctx, a.Partition, a.Seq)
	if err != nil || self == nil {
		return nil, false, err
	}
	prev := getN(self, attrPrev)
	if prev == 0 {
		return nil, false, nil
	}
	pr, err := e.readLinks(ctx, a.Partition, prev)
	if err != nil {
		return nil, false, err
	}
	if pr == nil || State(getS(pr, attrState)).Ended() {
		hold, err := e.chainHeld(ctx, a.Partition, prev, pr)
		return nil, hold, err
	}
	lid := laneID{a.WorkspaceID, a.LaneKey}
	succ, tail, err := e.successorOf(ctx, a.Partition, lid, a.Seq)
	if err != nil {
		return nil, true, err
	}
	items = []types.TransactWriteItem{e.predLive(a.Partition, prev)}
	switch {
	case succ != 0:
		return append(items, e.linkPrev(a.Partition, succ, a.Seq, prev)), true, nil
	case tail.seq == a.Seq && tail.p == a.Partition:
		// The lane's tail: it moves back to the live predecessor.
		return append(items, types.TransactWriteItem{Update: e.laneTailBack(lid, tail, prev)}), true, nil
	}
	return nil, true, nil
}

// maxSuccessorWalk bounds the rows an out-of-order end reads walking back
// from its lane's tail to find its successor; past it, one Query of the
// partition's seqs between the member and the walk's last row finds it.
const maxSuccessorWalk = 16

// successorOf finds the lane member whose prev is seq (0: none found) and
// the lane tail's seq as read. It walks prev links back from the tail, with
// consistent reads; a deep lane (past maxSuccessorWalk) or a gone row on
// the way is left to successorQuery. Seqs fall along a chain, so a link
// below seq means the member is not on the chain from the tail (links
// moving): none found.
func (e *Engine) successorOf(ctx context.Context, p int, lid laneID, seq int64) (succ int64, tail laneTail, err error) {
	tail, err = e.readTail(ctx, lid)
	if err != nil || tail.p != p || tail.seq <= seq {
		return 0, tail, err
	}
	cur := tail.seq
	for hop := 0; hop < maxSuccessorWalk; hop++ {
		it, err := e.readLinks(ctx, p, cur)
		if err != nil {
			return 0, tail, err
		}
		if it == nil {
			break
		}
		pv := getN(it, attrPrev)
		if pv == seq {
			return cur, tail, nil
		}
		if pv < seq {
			return 0, tail, nil
		}
		cur = pv
	}
	succ, err = e.successorQuery(ctx, p, seq, cur)
	return succ, tail, err
}

// successorQuery finds the member whose prev is seq among the partition's
// actions after seq up to upper, with a consistent Query (only lane members
// of seq's lane can name it as prev). It reads what the partition holds in
// that range, so only deep lanes come here (design.md §7.3).
func (e *Engine) successorQuery(ctx context.Context, p int, seq, upper int64) (int64, error) {
	in := &dynamodb.QueryInput{
		TableName:              e.table(),
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :lo AND :hi"),
		// Live rows only: a member that ended out of order keeps the prev it
		// had (its relink moved its successor, not its own link), so an
		// ended row can name seq too, and the relink's condition refuses it.
		FilterExpression:         aws.String("#prev = :seq AND " + liveCond),
		ProjectionExpression:     aws.String("sk"),
		ExpressionAttributeNames: map[string]string{"#prev": attrPrev, "#st": attrState},
		ExpressionAttributeValues: liveVals(map[string]types.AttributeValue{
			":pk": avS(partitionPK(p)), ":lo": avS(actionSK(seq + 1)), ":hi": avS(actionSK(upper)), ":seq": avN(seq),
		}),
		ConsistentRead: aws.Bool(true),
		Limit:          aws.Int32(100),
	}
	for {
		out, err := e.db.Query(ctx, in)
		if err != nil {
			return 0, fmt.Errorf("error finding the lane successor of %s: %w", keyLabel(p, seq), err)
		}
		for _, it := range out.Items {
			if s, ok := seqFromActionSK(getS(it, attrSK)); ok {
				return s, nil
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return 0, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// eraseLaned erases a live lane member whose predecessor is live: its
// tombstone and its relink (design.md §7.3) go in one transaction, so no chain
// ever passes through the tombstone. ok is false when that does not apply
// (or the links kept moving): the caller erases as before, and the
// tombstone's prev holds the lane behind it; hold then says the tombstone
// must be held (lanehold.go): an earlier member of its lane may be live,
// or the row is held already.
func (e *Engine) eraseLaned(ctx context.Context, pk, sk string) (old map[string]types.AttributeValue, ok, hold bool, err error) {
	for try := 0; try < 8; try++ {
		got, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: e.table(), Key: key(pk, sk), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, false, false, fmt.Errorf("error reading %s/%s to erase: %w", pk, sk, err)
		}
		old := got.Item
		st := State(getS(old, attrState))
		if len(old) == 0 || st.Ended() || getS(old, attrLane) == "" {
			return nil, false, len(old) > 0 && isHeld(old), nil
		}
		a, _ := decodeAction(old)
		items, held, err := e.unlink(ctx, &a)
		if err != nil || len(items) == 0 {
			return nil, false, held, err
		}
		upd, names, vals := e.tombstone(pk, sk, false)
		names["#ep"] = attrEpoch
		vals[":cst"], vals[":cep"], vals[":cprev"] = avS(string(st)), avN(getN(old, attrEpoch)), avN(a.PrevSeq)
		c := "#st = :cst AND #ep = :cep AND #prev = :cprev"
		all := append([]types.TransactWriteItem{{Update: &types.Update{
			TableName: e.table(), Key: key(pk, sk), UpdateExpression: aws.String(upd),
			ConditionExpression: aws.String(c), ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
		}}}, items...)
		err = e.transact(ctx, all, e.token())
		if err == nil {
			return old, true, false, nil
		}
		if _, ok := cancelReasons(err); !ok {
			return nil, false, false, fmt.Errorf("error erasing %s/%s: %w", pk, sk, err)
		}
		// A writer moved the row or a neighbour's links: read them again.
	}
	// The links kept moving: the predecessor was live at the last look.
	return nil, false, true, nil
}

type laneID struct{ ws, lane string }

// laneTail is a lane's tail (design.md §3.4), its own item
// (`L#<ws>#<lane>` / `L`), as read or as it is to be written: the newest
// live member's seq (0: the lane has no tail) and the partition of the
// lane's live members.
type laneTail struct {
	seq int64
	p   int
	// ended (seq 0): the tail item is there but names this member of
	// partition p, which has ended: the lane is empty, and its next member
	// starts it again wherever the count says, moving the tail on the
	// condition that it still names this one.
	ended int64
	// holds (a tail at or above the count naming an ended member seq): the
	// first live member back along seq's prev links, which still holds the
	// lane in partition p (seq ended out of order without a relink,
	// design.md §7.3); the next member joins behind seq, its write
	// conditioned on holds being live (aboveCountChecks). holdsRow: the
	// walk's bound was reached at holds, an ended row still there; the
	// condition is then that the row is there (the lane waits as a
	// claim's walk past its bound does).
	holds    int64
	holdsRow bool
}

// laneTailKey is the key of a lane's tail item.
func laneTailKey(lid laneID) map[string]types.AttributeValue {
	return key(laneTailPK(lid.ws, lid.lane), skLaneTail)
}

// laneTailIs is the condition that the tail is still t: its seq and its
// partition (a tail deleted and made again elsewhere can reuse a seq
// number).
func laneTailIs(t laneTail, names map[string]string, vals map[string]types.AttributeValue) string {
	names["#s"], names["#tp"] = attrTailSeq, attrTailPart
	vals[":ts"], vals[":tp"] = avN(t.seq), avN(int64(t.p))
	return "#s = :ts AND #tp = :tp"
}

// laneTailPut moves a lane's tail from what was read (seq 0: no tail yet,
// or one naming an ended member) to to.
func (e *Engine) laneTailPut(lid laneID, from, to laneTail) types.TransactWriteItem {
	it := laneTailKey(lid)
	it[attrTailSeq], it[attrTailPart] = avN(to.seq), avN(int64(to.p))
	put := &types.Put{TableName: e.table(), Item: it}
	if from.seq == 0 && from.ended != 0 {
		from = laneTail{seq: from.ended, p: from.p}
	}
	if from.seq == 0 {
		put.ConditionExpression = aws.String("attribute_not_exists(pk)")
	} else {
		put.ExpressionAttributeNames, put.ExpressionAttributeValues = map[string]string{}, map[string]types.AttributeValue{}
		put.ConditionExpression = aws.String(laneTailIs(from, put.ExpressionAttributeNames, put.ExpressionAttributeValues))
	}
	return types.TransactWriteItem{Put: put}
}

// readTail reads a lane's tail with a consistent read; seq is 0 when the
// lane has no tail.
func (e *Engine) readTail(ctx context.Context, lid laneID) (laneTail, error) {
	t, _, err := e.readTailAs(ctx, lid, false)
	return t, err
}

// readTailAs is readTail, with eventual asking for an eventually consistent
// read. That serves only a caller whose write is conditioned on the tail as
// read, or who confirms an answer with a consistent read before acting on
// it (a stale read is then refused or confirmed, never acted on; design.md
// §3.4). stale says the answer came from an eventually consistent read.
func (e *Engine) readTailAs(ctx context.Context, lid laneID, eventual bool) (t laneTail, stale bool, err error) {
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: e.table(), Key: laneTailKey(lid), ConsistentRead: aws.Bool(!eventual),
	})
	if err != nil {
		return laneTail{}, eventual, fmt.Errorf("error reading lane tail: %w", err)
	}
	if len(out.Item) == 0 {
		return laneTail{}, eventual, nil
	}
	return laneTail{seq: getN(out.Item, attrTailSeq), p: int(getN(out.Item, attrTailPart))}, eventual, nil
}

// laneTailDelete deletes a lane's tail while it is still t: the end of
// the lane's last live member.
func (e *Engine) laneTailDelete(lid laneID, t laneTail) types.TransactWriteItem {
	d := &types.Delete{TableName: e.table(), Key: laneTailKey(lid),
		ExpressionAttributeNames: map[string]string{}, ExpressionAttributeValues: map[string]types.AttributeValue{}}
	d.ConditionExpression = aws.String(laneTailIs(t, d.ExpressionAttributeNames, d.ExpressionAttributeValues))
	return types.TransactWriteItem{Delete: d}
}

// laneTailBack moves a lane's tail from t back to seq prev of the same
// partition (a relink or an erasure of the tail's member).
func (e *Engine) laneTailBack(lid laneID, t laneTail, prev int64) *types.Update {
	u := &types.Update{TableName: e.table(), Key: laneTailKey(lid), UpdateExpression: aws.String("SET #s = :prev"),
		ExpressionAttributeNames: map[string]string{}, ExpressionAttributeValues: map[string]types.AttributeValue{":prev": avN(prev)}}
	u.ConditionExpression = aws.String(laneTailIs(t, u.ExpressionAttributeNames, u.ExpressionAttributeValues))
	return u
}

// eraseTail moves a lane's tail back to erased member a's predecessor, or
// deletes it when a had none, while it still names a (design.md §10).
func (e *Engine) eraseTail(ctx context.Context, lid laneID, a *Action) error {
	t, err := e.readTail(ctx, lid)
	if err != nil || t.seq != a.Seq || t.p != a.Partition {
		return err
	}
	if a.PrevSeq != 0 {
		u := e.laneTailBack(lid, t, a.PrevSeq)
		_, err = e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
			ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
		})
		return err
	}
	d := e.laneTailDelete(lid, t).Delete
	_, err = e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: d.TableName, Key: d.Key, ConditionExpression: d.ConditionExpression,
		ExpressionAttributeNames: d.ExpressionAttributeNames, ExpressionAttributeValues: d.ExpressionAttributeValues,
	})
	return err
}

// dropLaneTail deletes the lane tail after its last live member ended,
// while it still names that member (d, built by laneTailDelete; design.md
// §3.4, ADR 0013): a plain conditional DeleteItem, not an item of the
// end's transaction. Best effort: refused, an enqueue moved the tail on;
// lost, the tail names an ended member, which the next enqueue links behind
// and the claim's walk passes.
func (e *Engine) dropLaneTail(ctx context.Context, d *types.Delete) {
	_, _ = e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: d.TableName, Key: d.Key, ConditionExpression: d.ConditionExpression,
		ExpressionAttributeNames: d.ExpressionAttributeNames, ExpressionAttributeValues: d.ExpressionAttributeValues,
	})
}
