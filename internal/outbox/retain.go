package outbox

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// RetainResult counts what a retention run deleted.
type RetainResult struct {
	Deleted int // ended actions whose TTL passed (DynamoDB's TTL lags)
	Trimmed int // ended actions deleted, oldest first, beyond Config.RowCap
}

// Retain deletes ended actions whose TTL passed but that DynamoDB has not
// removed yet, and trims ended actions beyond the row cap, oldest expiry
// first. It reads the ended index from its oldest end, so its cost grows
// with what it deletes. Idempotency records go with their actions.
func (e *Engine) Retain(ctx context.Context) (*RetainResult, error) {
	res := &RetainResult{}
	now := e.clk.Now().UTC()
	for p := 0; p < e.cfg.Partitions; p++ {
		n, err := e.retainPartition(ctx, p, timeSK(now, 0), -1, false)
		res.Deleted += n
		if err != nil {
			return res, fmt.Errorf("error sweeping ended actions of partition %d: %w", p, err)
		}
	}
	n, err := e.trim(ctx)
	res.Trimmed = n
	return res, err
}

// retainPartition deletes ended actions of a partition with end_sk below
// upto, at most limit (-1: all). With countOnly it only counts them.
func (e *Engine) retainPartition(ctx context.Context, p int, upto string, limit int, countOnly bool) (int, error) {
	n := 0
	var start map[string]types.AttributeValue
	for {
		in := &dynamodb.QueryInput{
			TableName: e.table(), IndexName: aws.String(IndexEnded),
			KeyConditionExpression:    aws.String("#epk = :epk AND #esk < :upto"),
			ExpressionAttributeNames:  map[string]string{"#epk": attrEndPK, "#esk": attrEndSK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":epk": avS(endPK(p)), ":upto": avS(upto)},
			ExclusiveStartKey:         start,
		}
		if limit >= 0 {
			in.Limit = aws.Int32(int32(max(1, min(limit-n, 1000))))
		}
		if countOnly {
			in.Select = types.SelectCount
		}
		q, err := e.db.Query(ctx, in)
		if err != nil {
			return n, fmt.Errorf("error reading ended index: %w", err)
		}
		if countOnly {
			n += int(q.Count)
		}
		for _, it := range q.Items {
			if limit >= 0 && n >= limit {
				return n, nil
			}
			ok, err := e.deleteEnded(ctx, getS(it, attrPK), getS(it, attrSK))
			if err != nil {
				return n, err
			}
			if ok {
				n++
			}
		}
		if q.LastEvaluatedKey == nil || (limit >= 0 && n >= limit) {
			return n, nil
		}
		start = q.LastEvaluatedKey
	}
}

// deleteEnded deletes one ended action (refused if it is not ended) and its
// idempotency record.
func (e *Engine) deleteEnded(ctx context.Context, pk, sk string) (bool, error) {
	out, err := e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: e.table(), Key: key(pk, sk),
		ConditionExpression:      aws.String("#st IN (:d, :u, :f, :c)"),
		ExpressionAttributeNames: map[string]string{"#st": attrState},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":d": avS(string(StateDONE)), ":u": avS(string(StateUNCERTAIN)), ":f": avS(string(StateFAILED)), ":c": avS(string(StateCANCELLED)),
		},
		ReturnValues: types.ReturnValueAllOld,
	})
	if err != nil {
		if isCondFailed(err) {
			return false, nil
		}
		return false, fmt.Errorf("error deleting ended action %s/%s: %w", pk, sk, err)
	}
	return true, e.deleteIdem(ctx, out.Attributes)
}

// deleteIdem deletes the idempotency record of a deleted action, if it
// still names that action.
func (e *Engine) deleteIdem(ctx context.Context, old map[string]types.AttributeValue) error {
	ik := getS(old, attrIKey)
	if ik == "" {
		return nil
	}
	_, err := e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: e.table(), Key: key(idemPK(getS(old, attrWorkspace), ik), skIdem),
		ConditionExpression:       aws.String("#id = :id"),
		ExpressionAttributeNames:  map[string]string{"#id": attrID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":id": avS(getS(old, attrID))},
	})
	if err != nil && !isCondFailed(err) {
		return fmt.Errorf("error deleting idempotency record: %w", err)
	}
	return nil
}

// trim deletes ended actions beyond the row cap, oldest expiry first. The
// table's approximate item count (it counts every row, so it is an upper
// bound of the ended ones) spares the count in the usual case.
func (e *Engine) trim(ctx context.Context) (int, error) {
	dt, err := e.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: e.table()})
	if err != nil {
		return 0, fmt.Errorf("error describing table: %w", err)
	}
	if dt.Table != nil && dt.Table.ItemCount != nil && *dt.Table.ItemCount > 0 && *dt.Table.ItemCount <= int64(e.cfg.RowCap) {
		return 0, nil
	}
	top := "~" // above every end_sk
	total := 0
	for p := 0; p < e.cfg.Partitions; p++ {
		n, err := e.retainPartition(ctx, p, top, -1, true)
		if err != nil {
			return 0, err
		}
		total += n
	}
	excess := total - e.cfg.RowCap
	if excess <= 0 {
		return 0, nil
	}
	// Gather each partition's oldest `excess` keys and delete the oldest
	// `excess` of them all.
	type row struct{ pk, sk, esk string }
	var rows []row
	for p := 0; p < e.cfg.Partitions; p++ {
		var start map[string]types.AttributeValue
		got := 0
		for got < excess {
			q, err := e.db.Query(ctx, &dynamodb.QueryInput{
				TableName: e.table(), IndexName: aws.String(IndexEnded),
				KeyConditionExpression:    aws.String("#epk = :epk"),
				ExpressionAttributeNames:  map[string]string{"#epk": attrEndPK},
				ExpressionAttributeValues: map[string]types.AttributeValue{":epk": avS(endPK(p))},
				ExclusiveStartKey:         start, Limit: aws.Int32(int32(min(excess-got, 1000))),
			})
			if err != nil {
				return 0, fmt.Errorf("error reading ended index of partition %d: %w", p, err)
			}
			for _, it := range q.Items {
				rows = append(rows, row{getS(it, attrPK), getS(it, attrSK), getS(it, attrEndSK)})
			}
			got += len(q.Items)
			if q.LastEvaluatedKey == nil {
				break
			}
			start = q.LastEvaluatedKey
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].esk < rows[j].esk })
	n := 0
	for _, r := range rows[:min(excess, len(rows))] {
		ok, err := e.deleteEnded(ctx, r.pk, r.sk)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// EraseSubject deletes every action (in any state) and idempotency record of
// a subject in a workspace, and returns how many actions it deleted. A
// pending action is then never carried out (its fence and every later
// write find nothing); a write that already passed its fence is not undone.
func (e *Engine) EraseSubject(ctx context.Context, workspaceID, subjectID string) (int, error) {
	if subjectID == "" {
		return 0, &ValidationError{Field: "subject_id", Message: "subject_id is required"}
	}
	n := 0
	var start map[string]types.AttributeValue
	for {
		q, err := e.db.Query(ctx, &dynamodb.QueryInput{
			TableName: e.table(), IndexName: aws.String(IndexSubject),
			KeyConditionExpression:    aws.String("#spk = :spk"),
			ExpressionAttributeNames:  map[string]string{"#spk": attrSubPK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":spk": avS(subPK(workspaceID, subjectID))},
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return n, fmt.Errorf("error reading subject index: %w", err)
		}
		for _, it := range q.Items {
			pk, sk := getS(it, attrPK), getS(it, attrSK)
			old, err := e.eraseRow(ctx, pk, sk)
			if err != nil {
				return n, err
			}
			if !strings.HasPrefix(sk, "A#") || old == nil {
				continue
			}
			out := &dynamodb.DeleteItemOutput{Attributes: old}
			n++
			if err := e.deleteIdem(ctx, out.Attributes); err != nil {
				return n, err
			}
			if lane := getS(out.Attributes, attrLane); lane != "" {
				// When the lane tail names the erased action, it moves back
				// to the erased action's predecessor (the next action of the
				// lane must still wait for it), or goes when there is none;
				// the lane's successors see a gone predecessor and go on.
				a, _ := decodeAction(out.Attributes)
				p := a.Partition
				tk := key(partitionPK(p), laneSK(getS(out.Attributes, attrWorkspace), lane))
				var err error
				if a.PrevSeq != 0 {
					_, err = e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
						TableName: e.table(), Key: tk,
						UpdateExpression:          aws.String("SET #s = :prev"),
						ConditionExpression:       aws.String("#s = :s"),
						ExpressionAttributeNames:  map[string]string{"#s": attrTailSeq},
						ExpressionAttributeValues: map[string]types.AttributeValue{":s": avN(a.Seq), ":prev": avN(a.PrevSeq)},
					})
				} else {
					_, err = e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
						TableName: e.table(), Key: tk,
						ConditionExpression:       aws.String("#s = :s"),
						ExpressionAttributeNames:  map[string]string{"#s": attrTailSeq},
						ExpressionAttributeValues: map[string]types.AttributeValue{":s": avN(a.Seq)},
					})
				}
				if err != nil && !isCondFailed(err) {
					return n, fmt.Errorf("error erasing lane tail: %w", err)
				}
			}
		}
		if q.LastEvaluatedKey == nil {
			return n, nil
		}
		start = q.LastEvaluatedKey
	}
}

// eraseRow erases one row of a subject and returns what it held. A lane
// member with a predecessor becomes a tombstone instead of going: an ended
// row (CANCELLED, stop reason ERASED) that keeps only its keys and its
// predecessor link, so the lane behind it still waits for the members before
// it (a gone predecessor would let it pass them). Everything of the subject
// goes; retention deletes the tombstone like any ended row.
func (e *Engine) eraseRow(ctx context.Context, pk, sk string) (map[string]types.AttributeValue, error) {
	if strings.HasPrefix(sk, "A#") {
		if old, ok, err := e.eraseLaned(ctx, pk, sk); err != nil || ok {
			return old, err
		}
		upd, names, vals := e.tombstone(pk, sk)
		out, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: e.table(), Key: key(pk, sk),
			UpdateExpression:          aws.String(upd),
			ConditionExpression:       aws.String("attribute_exists(#prev)"),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: vals,
			ReturnValues:              types.ReturnValueAllOld,
		})
		if err == nil {
			return out.Attributes, nil
		}
		if !isCondFailed(err) {
			return nil, fmt.Errorf("error erasing %s/%s: %w", pk, sk, err)
		}
	}
	out, err := e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: e.table(), Key: key(pk, sk), ReturnValues: types.ReturnValueAllOld,
	})
	if err != nil {
		return nil, fmt.Errorf("error erasing %s/%s: %w", pk, sk, err)
	}
	return out.Attributes, nil
}

// tombstone is the update that turns an action row into an erasure
// tombstone: CANCELLED with stop reason ERASED, keys, links and TTL only.
func (e *Engine) tombstone(pk, sk string) (string, map[string]string, map[string]types.AttributeValue) {
	now := e.clk.Now().UTC()
	expiry := now.Add(e.cfg.Retention)
	var seq int64
	fmt.Sscanf(sk, "A#%d", &seq)
	names := map[string]string{
		"#prev": attrPrev, "#st": attrState, "#sr": attrStop, "#ea": attrEnded, "#ttl": attrTTL,
		"#epk": attrEndPK, "#esk": attrEndSK,
	}
	var rm []string
	for i, a := range []string{attrKind, attrVariant, attrWorkspace, attrLane, attrIKey, attrSubject, attrSubPK,
		attrPayload, attrDuePK, attrDueSK, attrOwner, attrLease, attrWrite, attrExpires, attrNext, attrCreated,
		attrID, attrRef, attrAttempt, attrMax} {
		n := fmt.Sprintf("#r%d", i)
		names[n] = a
		rm = append(rm, n)
	}
	upd := "SET #st = :c, #sr = :erased, #ea = :now, #ttl = :ttl, #epk = :epk, #esk = :esk REMOVE " + strings.Join(rm, ", ")
	vals := map[string]types.AttributeValue{
		":c": avS(string(StateCANCELLED)), ":erased": avS(string(StopErased)), ":now": avMs(now),
		":ttl": avN(expiry.Unix()), ":epk": avS(endPK(partitionOfPK(pk))), ":esk": avS(timeSK(expiry, seq)),
	}
	return upd, names, vals
}

func partitionOfPK(pk string) int {
	n := 0
	fmt.Sscanf(pk, "P#%d", &n)
	return n
}
