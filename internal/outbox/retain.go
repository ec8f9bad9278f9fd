package outbox

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

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
// first. It finds them through the retention journal (design.md §3.6): the
// journal items whose expiry passed are still there only where TTL lags, so
// its cost grows with what it deletes, not with the table. Idempotency
// records go with their actions.
func (e *Engine) Retain(ctx context.Context) (*RetainResult, error) {
	res := &RetainResult{}
	now := e.clk.Now().UTC()
	kept, err := e.keptPartitions(ctx)
	if err != nil {
		return res, err
	}
	for p := 0; p < kept; p++ {
		n, err := e.sweepPartition(ctx, p, now)
		res.Deleted += n
		if err != nil {
			return res, fmt.Errorf("error sweeping ended actions of partition %d: %w", p, err)
		}
	}
	n, err := e.trim(ctx)
	res.Trimmed = n
	return res, err
}

// sweepPartition deletes the rows listed by partition p's journal items
// and held rows' listings whose expiry passed, then the items themselves.
// The held listings come first in the Query, and are dealt with last: a
// held row whose lane's earlier members are deleted in this pass goes in
// this pass too.
func (e *Engine) sweepPartition(ctx context.Context, p int, now time.Time) (int, error) {
	n := 0
	var held []journalItem
	err := e.queryJournal(ctx, p, journalUpTo(now), 0, func(page []journalItem) (bool, error) {
		for _, j := range page {
			if j.held {
				if exp, ok := listingExpiry(j.sk); !ok || !exp.After(now) {
					held = append(held, j)
				}
				continue
			}
			m, err := e.sweepItem(ctx, j, now)
			n += m
			if err != nil {
				return false, err
			}
		}
		return true, nil
	})
	for _, j := range held {
		if err != nil {
			break
		}
		var m int
		m, err = e.sweepItem(ctx, j, now)
		n += m
	}
	return n, err
}

// sweepItem deletes the rows a journal item (or a held listing) whose
// expiry passed lists, then the item.
func (e *Engine) sweepItem(ctx context.Context, j journalItem, now time.Time) (int, error) {
	p, n := j.p, 0
	// Rows TTL already removed are skipped by a read (half a read
	// unit each) rather than a refused delete (a write unit each).
	rows, err := e.readEnded(ctx, p, j.seqs)
	if err != nil {
		return 0, err
	}
	held := map[int64]int64{}
	var live []int64
	for _, seq := range j.seqs {
		it, ok := rows[seq]
		if ok && isHeld(it) {
			held[seq] = getN(it, attrPrev)
			continue
		}
		if j.held && ok && !State(getS(it, attrState)).Ended() {
			// Listed by its ender before its end (lanehold.go), which
			// has not landed: the ender paused longer than the
			// retention period, or died and the row is claimed again.
			// It may yet be held: listed again.
			live = append(live, seq)
			continue
		}
		if !ok || !State(getS(it, attrState)).Ended() || getN(it, attrTTL) > now.Unix() {
			// Gone, or not this journal's to delete: a row that
			// was erased into a tombstone later carries a later
			// TTL and is listed again by the erasure's journal.
			continue
		}
		ok, err := e.deleteEnded(ctx, partitionPK(p), actionSK(seq), now.Unix())
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	m, err := e.retainHeld(ctx, p, held, live, now)
	n += m
	if err != nil {
		return n, err
	}
	return n, e.deleteJournal(ctx, j)
}

// readEnded reads, eventually consistently, the state and TTL of the listed
// rows of partition p that still exist. The rows ended long ago: a settled
// read.
func (e *Engine) readEnded(ctx context.Context, p int, seqs []int64) (map[int64]map[string]types.AttributeValue, error) {
	out := map[int64]map[string]types.AttributeValue{}
	keys := make([]map[string]types.AttributeValue, 0, len(seqs))
	for _, s := range seqs {
		keys = append(keys, actionKey(p, s))
	}
	for round := 0; len(keys) > 0; round++ {
		if round >= 10 {
			return nil, fmt.Errorf("error reading ended rows of partition %d: %d keys left unprocessed", p, len(keys))
		}
		n := min(len(keys), 100)
		r, err := e.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{e.cfg.Table: {
				Keys: keys[:n], ProjectionExpression: aws.String("#sk, #st, #ttl, #prev"),
				ExpressionAttributeNames: map[string]string{"#sk": attrSK, "#st": attrState, "#ttl": attrTTL, "#prev": attrPrev},
			}},
		})
		if err != nil {
			return nil, fmt.Errorf("error reading ended rows of partition %d: %w", p, err)
		}
		for _, it := range r.Responses[e.cfg.Table] {
			var seq int64
			if _, err := fmt.Sscanf(getS(it, attrSK), "A#%d", &seq); err == nil {
				out[seq] = it
			}
		}
		keys = keys[n:]
		if un, ok := r.UnprocessedKeys[e.cfg.Table]; ok {
			keys = append(keys, un.Keys...)
		}
	}
	return out, nil
}

// deleteEnded deletes one ended action that has a TTL (refused if it is
// not ended, or held, lanehold.go), with ttlBy > 0 one whose TTL is not
// after ttlBy, and its idempotency record.
func (e *Engine) deleteEnded(ctx context.Context, pk, sk string, ttlBy int64) (bool, error) {
	c := cond{expr: "attribute_exists(#ttl)", names: map[string]string{"#ttl": attrTTL}}
	if ttlBy > 0 {
		c = cond{expr: "#ttl <= :ttlby", names: c.names, vals: map[string]types.AttributeValue{":ttlby": avN(ttlBy)}}
	}
	ok, _, err := e.deleteEndedIf(ctx, pk, sk, c)
	return ok, err
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
// bound of the ended ones) spares the count in the usual case; else the
// ended actions are counted from the journal (design.md §3.6: rows whose journal
// write was lost are not counted, rows TTL removed before their journal
// are, until retention reads that journal).
func (e *Engine) trim(ctx context.Context) (int, error) {
	dt, err := e.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: e.table()})
	if err != nil {
		return 0, fmt.Errorf("error describing table: %w", err)
	}
	if dt.Table != nil && dt.Table.ItemCount != nil && *dt.Table.ItemCount > 0 && *dt.Table.ItemCount <= int64(e.cfg.RowCap) {
		return 0, nil
	}
	total, err := e.journaledEndings(ctx)
	if err != nil {
		return 0, err
	}
	excess := total - e.cfg.RowCap
	if excess <= 0 {
		return 0, nil
	}
	items, err := e.oldestJournalItems(ctx, excess)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, j := range items {
		if excess <= 0 {
			break
		}
		take := j.seqs[:min(excess, len(j.seqs))]
		deleted, err := e.trimJournalItem(ctx, j, take)
		n += deleted
		if err != nil {
			return n, err
		}
		// A listed row that was already gone counts as trimmed too: it was
		// counted in total.
		excess -= len(take)
	}
	return n, nil
}

// journaledEndings counts the endings the journal lists, in every partition.
func (e *Engine) journaledEndings(ctx context.Context) (int, error) {
	total := 0
	kept, err := e.keptPartitions(ctx)
	if err != nil {
		return 0, err
	}
	for p := 0; p < kept; p++ {
		err := e.queryJournal(ctx, p, "", 0, func(page []journalItem) (bool, error) {
			for _, j := range page {
				total += j.n
			}
			return true, nil
		})
		if err != nil {
			return 0, err
		}
	}
	return total, nil
}

// oldestJournalItems gathers each partition's oldest journal items covering
// excess endings, and sorts them all, oldest expiry first.
func (e *Engine) oldestJournalItems(ctx context.Context, excess int) ([]journalItem, error) {
	var items []journalItem
	kept, err := e.keptPartitions(ctx)
	if err != nil {
		return nil, err
	}
	for p := 0; p < kept; p++ {
		got := 0
		err := e.queryJournal(ctx, p, "", 100, func(page []journalItem) (bool, error) {
			for _, j := range page {
				if got >= excess {
					return false, nil
				}
				items = append(items, j)
				got += len(j.seqs)
			}
			return got < excess, nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(items, func(a, b int) bool { return items[a].sk < items[b].sk })
	return items, nil
}

// trimJournalItem deletes the ended rows take of a journal item lists, then
// the item (or, when take is a part, those seqs from it), and returns how
// many rows it deleted.
func (e *Engine) trimJournalItem(ctx context.Context, j journalItem, take []int64) (int, error) {
	n := 0
	held := map[int64]int64{}
	for _, seq := range take {
		c := cond{expr: "attribute_exists(#ttl)", names: map[string]string{"#ttl": attrTTL}}
		ok, old, err := e.deleteEndedIf(ctx, partitionPK(j.p), actionSK(seq), c)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		} else if old != nil && isHeld(old) {
			held[seq] = getN(old, attrPrev)
		}
	}
	// A held row is listed under H# (lanehold.go), which trimming does
	// not read; one met here all the same is not trimmed blindly: only
	// once its lane no longer needs it, else it is listed again.
	m, err := e.retainHeld(ctx, j.p, held, nil, e.clk.Now())
	n += m
	if err != nil {
		return n, err
	}
	if len(take) == len(j.seqs) {
		return n, e.deleteJournal(ctx, j)
	}
	return n, e.shrinkJournal(ctx, j, take)
}

// shrinkJournal takes trimmed seqs out of a journal item that lists more.
func (e *Engine) shrinkJournal(ctx context.Context, j journalItem, done []int64) error {
	ns := make([]string, len(done))
	for i, s := range done {
		ns[i] = strconv.FormatInt(s, 10)
	}
	_, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: e.table(), Key: key(partitionPK(j.p), j.sk),
		UpdateExpression:         aws.String("SET #n = :n DELETE #s :done"),
		ConditionExpression:      aws.String("attribute_exists(#s)"),
		ExpressionAttributeNames: map[string]string{"#n": attrJCount, "#s": attrJSeqs},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":n": avN(int64(len(j.seqs) - len(done))), ":done": &types.AttributeValueMemberNS{Value: ns},
		},
	})
	if err != nil && !isCondFailed(err) {
		return fmt.Errorf("error updating retention journal item %s/%s: %w", partitionPK(j.p), j.sk, err)
	}
	return nil
}

// EraseSubject deletes every action (in any state) and idempotency record of
// a subject in a workspace, and returns how many actions it deleted.
//
// What an erasure stops depends on where the action's write fence is
// (design.md §6, §10). An action not yet claimed is never carried out: a claim's
// condition fails on a deleted or tombstoned row. An action of a read-back
// or at-most-once kind has its own fence write just before the provider
// call: erased before that write, it is never carried out. An
// idempotent-receiver action, at the head of its lane group or a member
// behind it (ADR 0015), has its fence set by the claim itself: it is in
// flight from its claim on, and an erasure after the claim cannot recall
// its one provider call, exactly as no erasure recalls a call already under
// way for any kind. In every case the row stays erased: every later write of
// the attempt is conditioned on the claim and finds nothing to change, and
// nothing is sent again.
func (e *Engine) EraseSubject(ctx context.Context, workspaceID, subjectID string) (int, error) {
	return e.SubjectErase(ctx, SubjectEraseParams{WorkspaceID: workspaceID, SubjectID: subjectID})
}

// SubjectEraseParams names the subject SubjectErase erases.
type SubjectEraseParams struct {
	WorkspaceID string
	SubjectID   string
	// Progress, when set, is called with the running count after each
	// action erased (an operator's progress bar).
	Progress func(erased int)
}

// SubjectErase is EraseSubject with a progress callback.
func (e *Engine) SubjectErase(ctx context.Context, p SubjectEraseParams) (int, error) {
	if p.SubjectID == "" {
		return 0, &ValidationError{Field: "subject_id", Message: "subject_id is required"}
	}
	// The tombstones it leaves go to one journal, written at the end.
	jr := e.newJournal("erase")
	n, err := e.eraseSubject(withJournal(ctx, jr), p)
	if jerr := jr.flush(context.WithoutCancel(ctx)); err == nil {
		err = jerr
	}
	return n, err
}

func (e *Engine) eraseSubject(ctx context.Context, ep SubjectEraseParams) (int, error) {
	workspaceID, subjectID := ep.WorkspaceID, ep.SubjectID
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
			if ep.Progress != nil {
				ep.Progress(n)
			}
			if err := e.deleteIdem(ctx, out.Attributes); err != nil {
				return n, err
			}
			if lane := getS(out.Attributes, attrLane); lane != "" {
				// When the lane tail names the erased action, it moves back
				// to the erased action's predecessor (the next action of the
				// lane must still wait for it), or goes when there is none;
				// the lane's successors see a gone predecessor and go on.
				a, _ := decodeAction(out.Attributes)
				err := e.eraseTail(ctx, laneID{getS(out.Attributes, attrWorkspace), lane}, &a)
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
	old, err := e.eraseRowItself(ctx, pk, sk)
	if err == nil && old != nil && strings.HasPrefix(sk, "A#") {
		// Its delivery evidence goes with it (evidence.go).
		err = e.deleteEvidenceOf(ctx, old)
	}
	return old, err
}

func (e *Engine) eraseRowItself(ctx context.Context, pk, sk string) (map[string]types.AttributeValue, error) {
	if sk == skIdem {
		return nil, e.eraseIdemRecord(ctx, pk, sk)
	}
	if strings.HasPrefix(sk, "A#") {
		old, ok, hold, err := e.eraseLaned(ctx, pk, sk)
		if err != nil || ok {
			if ok {
				e.journalTombstone(ctx, pk, sk)
			}
			return old, err
		}
		if seq, _ := seqFromActionSK(sk); hold {
			// A tombstone the lane's chain still passes through, with an
			// earlier member live: held (lanehold.go), listed first.
			if err := e.journalHeldRow(ctx, partitionOfPK(pk), seq, e.clk.Now().UTC().Add(e.cfg.Retention)); err != nil {
				return nil, err
			}
		}
		upd, names, vals := e.tombstone(pk, sk, hold)
		// A keyed action outside a lane may have been written first by its
		// idempotency record (design.md §4.2): its slot keeps a tombstone, so a
		// late put of the action fails instead of bringing it back.
		names["#ik"], names["#ln"] = attrIKey, attrLane
		out, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: e.table(), Key: key(pk, sk),
			UpdateExpression:          aws.String(upd),
			ConditionExpression:       aws.String("attribute_exists(#prev) OR (attribute_exists(#ik) AND attribute_not_exists(#ln))"),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: vals,
			ReturnValues:              types.ReturnValueAllOld,
		})
		if err == nil {
			if !hold {
				e.journalTombstone(ctx, pk, sk)
			}
			return out.Attributes, nil
		}
		if !isCondFailed(err) {
			// The tombstone may have landed (an ambiguous failure): journal
			// it; a row that is not a tombstone is skipped by retention.
			if !hold {
				e.journalTombstone(ctx, pk, sk)
			}
			return nil, fmt.Errorf("error erasing %s/%s: %w", pk, sk, err)
		}
	}
	// A tombstone (no kind) stays: a lagging subject index may show one.
	out, err := e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: e.table(), Key: key(pk, sk), ReturnValues: types.ReturnValueAllOld,
		ConditionExpression:      aws.String("attribute_exists(#kind)"),
		ExpressionAttributeNames: map[string]string{"#kind": attrKind},
	})
	if isCondFailed(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("error erasing %s/%s: %w", pk, sk, err)
	}
	return out.Attributes, nil
}

// journalTombstone journals a tombstone just written. Its expiry is taken
// after the write, so it is never before the one the tombstone carries.
func (e *Engine) journalTombstone(ctx context.Context, pk, sk string) {
	var seq int64
	if _, err := fmt.Sscanf(sk, "A#%d", &seq); err != nil {
		return
	}
	e.journalEnd(ctx, partitionOfPK(pk), seq, e.cfg.Retention, e.clk.Now().UTC().Add(e.cfg.Retention))
}

// tombstone is the update that turns an action row into an erasure
// tombstone: CANCELLED with stop reason ERASED, keys, links and TTL only
// (no TTL when held, lanehold.go).
func (e *Engine) tombstone(pk, sk string, hold bool) (string, map[string]string, map[string]types.AttributeValue) {
	now := e.clk.Now().UTC()
	expiry := now.Add(e.cfg.Retention)
	names := map[string]string{
		"#prev": attrPrev, "#st": attrState, "#sr": attrStop, "#ea": attrEnded, "#ttl": attrTTL,
	}
	var rm []string
	for i, a := range []string{attrKind, attrVariant, attrWorkspace, attrLane, attrIKey, attrSubject, attrSubPK,
		attrPayload, attrDuePK, attrDueSK, attrOwner, attrLease, attrWrite, attrWriteHead, attrExpires, attrNext, attrCreated,
		attrID, attrRef, attrAttempt, attrMax} {
		n := fmt.Sprintf("#r%d", i)
		names[n] = a
		rm = append(rm, n)
	}
	upd := "SET #st = :c, #sr = :erased, #ea = :now, #ttl = :ttl REMOVE " + strings.Join(rm, ", ")
	vals := map[string]types.AttributeValue{
		":c": avS(string(StateCANCELLED)), ":erased": avS(string(StopErased)), ":now": avMs(now),
		":ttl": avN(expiry.Unix()),
	}
	if hold {
		upd = strings.Replace(upd, ", #ttl = :ttl", "", 1)
		delete(vals, ":ttl")
		delete(names, "#ttl")
	}
	return upd, names, vals
}

func partitionOfPK(pk string) int {
	n := 0
	fmt.Sscanf(pk, "P#%d", &n)
	return n
}
