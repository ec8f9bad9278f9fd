package outbox

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Lane successor links (design.md §7.3). A live lane member names the next member
// of its lane (nxt), so that a member ending out of order, while the member
// before it is live, can take itself out of the chain in its end
// transaction: its successor's prev becomes its own prev, and that
// predecessor's nxt becomes its successor. No chain then passes through an
// ended row, and deleting ended rows (TTL, retention) never cuts a chain.
// Links are only ever written on live rows (design.md §3.1).

// rowLive reads with a consistent read whether an action row exists and has
// not ended.
func (e *Engine) rowLive(ctx context.Context, p int, seq int64) (bool, error) {
	it, err := e.readLinks(ctx, p, seq)
	if err != nil {
		return false, err
	}
	return it != nil && !State(getS(it, attrState)).Ended(), nil
}

// readLinks reads an action row's state and lane links (nil when gone).
func (e *Engine) readLinks(ctx context.Context, p int, seq int64) (map[string]types.AttributeValue, error) {
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: e.table(), Key: actionKey(p, seq), ConsistentRead: aws.Bool(true),
		ProjectionExpression:     aws.String("#st, #prev, #nxt"),
		ExpressionAttributeNames: map[string]string{"#st": attrState, "#prev": attrPrev, "#nxt": attrSucc},
	})
	if err != nil {
		return nil, fmt.Errorf("error reading lane links of %s: %w", LegacyActionID(p, seq), err)
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

// linkSucc sets a live row's successor link from old (0: none) to succ
// (0: none).
func (e *Engine) linkSucc(p int, seq, old, succ int64) types.TransactWriteItem {
	names := map[string]string{"#st": attrState, "#nxt": attrSucc}
	vals := liveVals(map[string]types.AttributeValue{})
	c := liveCond + " AND attribute_not_exists(#nxt)"
	if old != 0 {
		c = liveCond + " AND #nxt = :old"
		vals[":old"] = avN(old)
	}
	upd := "REMOVE #nxt"
	if succ != 0 {
		upd = "SET #nxt = :nxt"
		vals[":nxt"] = avN(succ)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: e.table(), Key: actionKey(p, seq), UpdateExpression: aws.String(upd),
		ConditionExpression: aws.String(c), ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
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
// predecessor has ended: the chain stops at this member anyway) or when the
// links are not as a relink needs them (rows written before links
// existed); then the member keeps its prev and the lane walk follows it.
func (e *Engine) unlink(ctx context.Context, a *Action) ([]types.TransactWriteItem, error) {
	self, err := e.readLinks(ctx, a.Partition, a.Seq)
	if err != nil || self == nil {
		return nil, err
	}
	prev, succ := getN(self, attrPrev), getN(self, attrSucc)
	if prev == 0 {
		return nil, nil
	}
	pr, err := e.readLinks(ctx, a.Partition, prev)
	if err != nil {
		return nil, err
	}
	if pr == nil || State(getS(pr, attrState)).Ended() || getN(pr, attrSucc) != a.Seq {
		return nil, nil
	}
	lid := laneID{a.WorkspaceID, a.LaneKey}
	items := []types.TransactWriteItem{e.linkSucc(a.Partition, prev, a.Seq, succ)}
	if succ != 0 {
		return append(items, e.linkPrev(a.Partition, succ, a.Seq, prev)), nil
	}
	// The lane's tail: it moves back to the live predecessor.
	return append(items, types.TransactWriteItem{Update: &types.Update{
		TableName:                 e.table(),
		Key:                       key(partitionPK(a.Partition), laneSK(lid.ws, lid.lane)),
		UpdateExpression:          aws.String("SET #s = :prev"),
		ConditionExpression:       aws.String("#s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": attrTailSeq},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": avN(a.Seq), ":prev": avN(prev)},
	}}), nil
}

// eraseLaned erases a live lane member whose predecessor is live: its
// tombstone and its relink (design.md §7.3) go in one transaction, so no chain
// ever passes through the tombstone. ok is false when that does not apply
// (or the links kept moving): the caller erases as before, and the
// tombstone's prev holds the lane behind it.
func (e *Engine) eraseLaned(ctx context.Context, pk, sk string) (map[string]types.AttributeValue, bool, error) {
	for try := 0; try < 8; try++ {
		got, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: e.table(), Key: key(pk, sk), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, false, fmt.Errorf("error reading %s/%s to erase: %w", pk, sk, err)
		}
		old := got.Item
		st := State(getS(old, attrState))
		if len(old) == 0 || getS(old, attrLane) == "" || st.Ended() {
			return nil, false, nil
		}
		a, _ := decodeAction(old)
		items, err := e.unlink(ctx, &a)
		if err != nil || len(items) == 0 {
			return nil, false, err
		}
		upd, names, vals := e.tombstone(pk, sk)
		names["#ep"] = attrEpoch
		vals[":cst"], vals[":cep"], vals[":cprev"] = avS(string(st)), avN(getN(old, attrEpoch)), avN(a.PrevSeq)
		c := "#st = :cst AND #ep = :cep AND #prev = :cprev"
		names["#nxt"] = attrSucc
		if nx := getN(old, attrSucc); nx != 0 {
			c += " AND #nxt = :cnxt"
			vals[":cnxt"] = avN(nx)
		} else {
			c += " AND attribute_not_exists(#nxt)"
		}
		all := append([]types.TransactWriteItem{{Update: &types.Update{
			TableName: e.table(), Key: key(pk, sk), UpdateExpression: aws.String(upd),
			ConditionExpression: aws.String(c), ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
		}}}, items...)
		err = e.transact(ctx, all, e.token())
		if err == nil {
			return old, true, nil
		}
		if _, ok := cancelReasons(err); !ok {
			return nil, false, fmt.Errorf("error erasing %s/%s: %w", pk, sk, err)
		}
		// A writer moved the row or a neighbour's links: read them again.
	}
	return nil, false, nil
}

type laneID struct{ ws, lane string }

// laneTailPut moves a lane's tail (design.md §3.4) from old (0: no tail
// yet) to seq.
func (e *Engine) laneTailPut(lid laneID, seq, old int64) types.TransactWriteItem {
	part := LanePartition(lid.ws, lid.lane, e.cfg.Partitions)
	it := key(partitionPK(part), laneSK(lid.ws, lid.lane))
	it[attrTailSeq] = avN(seq)
	put := &types.Put{TableName: e.table(), Item: it}
	if old == 0 {
		put.ConditionExpression = aws.String("attribute_not_exists(pk)")
	} else {
		put.ConditionExpression = aws.String("#s = :old")
		put.ExpressionAttributeNames = map[string]string{"#s": attrTailSeq}
		put.ExpressionAttributeValues = map[string]types.AttributeValue{":old": avN(old)}
	}
	return types.TransactWriteItem{Put: put}
}

// readTail returns the seq of a lane's newest live action, 0 when none.
func (e *Engine) readTail(ctx context.Context, part int, lid laneID) (int64, error) {
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      e.table(),
		Key:            key(partitionPK(part), laneSK(lid.ws, lid.lane)),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, fmt.Errorf("error reading lane tail of partition %d: %w", part, err)
	}
	return getN(out.Item, attrTailSeq), nil
}

// laneTailDelete deletes a lane's tail (design.md §3.4) while it still
// names seq: the end of the lane's last live member.
func (e *Engine) laneTailDelete(lid laneID, part int, seq int64) types.TransactWriteItem {
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName:                 e.table(),
		Key:                       key(partitionPK(part), laneSK(lid.ws, lid.lane)),
		ConditionExpression:       aws.String("#s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": attrTailSeq},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": avN(seq)},
	}}
}
