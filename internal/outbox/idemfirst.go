package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The written-first keyed enqueue (docs/design.md §4.2): a single keyed action
// that is not laned is two plain conditional puts, its idempotency record
// first and then the action, instead of one transaction of both (2 + 2
// units). The record carries what it takes to write the action, so that the
// record alone is enough to finish the enqueue: whoever finds a record whose
// action is missing writes the action from it, and every writer builds the
// same item, so the first put wins and the others find that row.
//
// The action's slot (its partition and seq) is never freed while a late
// writer could still put the action there: erasure leaves a tombstone in it
// and an abandoned enqueue is sealed with one, so a put that comes late
// fails its condition instead of bringing an erased or abandoned action
// back.

// FinishWindow is how long after its idempotency record was written a keyed
// enqueue that did not write its action (its process died between the two
// puts) is finished by a retry with the same key; a retry after it finds
// the enqueue abandoned and makes a new action (design.md §4.2). Past it the
// action's slot is sealed and the record removed, so the key can be used
// again. It is far shorter than the shortest retention (1 h), so an action
// that was written, ended and deleted by its TTL is not mistaken for one
// never written.
const FinishWindow = 15 * time.Minute

// recordContent are the attributes a written-first idempotency record copies
// from its action, under the action's names. The rest of the action follows
// from the record's key (workspace, key), id (partition, seq) and `sub_pk`
// (subject), or is the same for every new action (attempt and epoch 0, next
// attempt at creation, the due index keys). The end of the action removes
// them (idemExpire): an ended action keeps no payload, and neither does its
// record.
var recordContent = []string{attrKind, attrVariant, attrPayload, attrCreated, attrExpires, attrMax, attrState}

// errSealed says an action's slot holds a tombstone: the action was erased,
// or its enqueue abandoned.
var errSealed = errors.New("outbox: action slot sealed")

// idemRecordPut is the idempotency record of a new action written in the
// action's own transaction (laned, batched, or in the caller's transaction:
// design.md §3.5): its key, the action's id and subject, nothing more.
func (e *Engine) idemRecordPut(a *Action) *types.TransactWriteItem {
	it := key(idemPK(a.WorkspaceID, a.IdempotencyKey), skIdem)
	it[attrID] = avS(a.ID)
	if a.SubjectID != "" {
		it[attrSubPK] = avS(subPK(a.WorkspaceID, a.SubjectID))
	}
	return &types.TransactWriteItem{Put: &types.Put{
		TableName:                           e.table(),
		Item:                                it,
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
}

// idemRecord is the written-first idempotency record of a new action.
func idemRecord(a *Action) map[string]types.AttributeValue {
	it := key(idemPK(a.WorkspaceID, a.IdempotencyKey), skIdem)
	it[attrID] = avS(a.ID)
	if a.SubjectID != "" {
		it[attrSubPK] = avS(subPK(a.WorkspaceID, a.SubjectID))
	}
	full := actionItem(a)
	for _, n := range recordContent {
		if v, ok := full[n]; ok {
			it[n] = v
		}
	}
	if a.State == StateADMITTED {
		delete(it, attrState) // the usual state goes without saying
	}
	return it
}

// pendingFromRecord rebuilds the new action a written-first record
// describes. ok is false when the record carries no action (a transactional
// record, or one whose action ended).
func pendingFromRecord(rec map[string]types.AttributeValue) (Action, bool) {
	if !has(rec, attrPayload) || has(rec, attrTTL) {
		return Action{}, false
	}
	id := getS(rec, attrID)
	p, seq, err := ParseActionID(id)
	if err != nil {
		return Action{}, false
	}
	// idemPK is K#<workspace>#<key>; a workspace holds no '#'.
	ws, ikey, ok := strings.Cut(strings.TrimPrefix(getS(rec, attrPK), "K#"), "#")
	if !ok {
		return Action{}, false
	}
	st := StateADMITTED
	if s := getS(rec, attrState); s != "" {
		st = State(s)
	}
	created := getMs(rec, attrCreated)
	a := Action{
		ID: id, Kind: getS(rec, attrKind), Variant: getS(rec, attrVariant), WorkspaceID: ws,
		IdempotencyKey: ikey, State: st, MaxAttempts: int(getN(rec, attrMax)),
		Payload:   json.RawMessage(getS(rec, attrPayload)),
		Partition: p, Seq: seq, CreatedAt: created, NextAttemptAt: created, ExpiresAt: getMs(rec, attrExpires),
	}
	if sp := getS(rec, attrSubPK); sp != "" {
		a.SubjectID = strings.TrimPrefix(sp, ws+"#")
	}
	return a, true
}

// errKeySeen marks a written-first enqueue whose key was already used.
var errKeySeen = errors.New("outbox: idempotency key already used")

// enqueueKeyedFirst writes one keyed, unlaned action: its record, then the
// action. When the key was used, it returns the first action (index 0) and
// errKeySeen; when the record found was stale and is now removed, an empty
// map and an error, so that EnqueueBatch tries again.
func (e *Engine) enqueueKeyedFirst(ctx context.Context, pr *prepared) (map[int]Action, error) {
	a := &pr.a
	err := e.putSettled(ctx, &dynamodb.PutItemInput{
		TableName: e.table(), Item: idemRecord(a), ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if err != nil {
		if !isCondFailed(err) {
			return nil, fmt.Errorf("error writing idempotency record of %s: %w", a.ID, err)
		}
		first, err := e.idemLookup(ctx, a.WorkspaceID, a.IdempotencyKey)
		if err != nil {
			return nil, err
		}
		if first != nil && first.ID == a.ID {
			// Our own record, written by an earlier try whose answer was
			// lost (and not recognised then); the lookup finished it.
			return nil, nil
		}
		if first != nil {
			return map[int]Action{0: *first}, errKeySeen
		}
		return map[int]Action{}, fmt.Errorf("error enqueueing %s: a stale idempotency record was in the way", a.ID)
	}
	// From here the enqueue is decided: a retry with the key finishes it.
	got, err := e.materialize(ctx, a)
	// An erased or abandoned enqueue is an error, not ErrNotFound: the
	// request did not take effect (as if it had failed), and a retry makes
	// a new action.
	switch {
	case errors.Is(err, errSealed):
		return nil, fmt.Errorf("error enqueueing %s: erased or abandoned while it was written", a.ID)
	case err != nil:
		// The action's put failed for good (or its answer is unknown): give
		// the enqueue up now rather than leave the record with its payload
		// for a retry or an erasure to find. Sealing the slot either finds
		// the action there (it was written after all) or makes sure it
		// never will be. When this fails too (the process is going down,
		// DynamoDB is out), the record stays for a retry to finish.
		if got, aerr := e.abandon(ctx, a); aerr == nil && got != nil {
			return nil, nil
		}
		return nil, err
	case got == nil:
		return nil, fmt.Errorf("error enqueueing %s: not written within %s, abandoned", a.ID, FinishWindow)
	}
	return nil, nil
}

// materialize writes the action of a written-first record, or finds it
// written. Past FinishWindow it abandons the enqueue instead (see abandon).
// It returns errSealed when the slot holds a tombstone.
func (e *Engine) materialize(ctx context.Context, a *Action) (*Action, error) {
	if e.clk.Now().After(a.CreatedAt.Add(FinishWindow)) {
		return e.abandon(ctx, a)
	}
	err := e.putSettled(ctx, &dynamodb.PutItemInput{
		TableName: e.table(), Item: actionItem(a), ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if err == nil {
		return a, nil
	}
	if !isCondFailed(err) {
		return nil, fmt.Errorf("error writing action %s of its idempotency record: %w", a.ID, err)
	}
	return e.slotHolder(ctx, a)
}

// slotHolder reads what holds a's slot after a put there was refused: a
// itself (another writer of the same record won; it may have moved on
// since), a tombstone (errSealed; an ended a whose TTL passed counts as
// one: it is gone for reads), or another action (its seq was reused).
func (e *Engine) slotHolder(ctx context.Context, a *Action) (*Action, error) {
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: e.table(), Key: actionKey(a.Partition, a.Seq), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("error reading action %s: %w", a.ID, err)
	}
	it := out.Item
	switch {
	case it == nil:
		return nil, fmt.Errorf("error writing action %s: its row was deleted while it was written", a.ID)
	case !has(it, attrKind) || (getS(it, attrID) == a.ID && expiredByTTL(it, e.clk.Now())):
		return nil, errSealed
	case getS(it, attrID) == a.ID && getN(it, attrCreated) == a.CreatedAt.UnixMilli():
		got, _ := decodeAction(it)
		return &got, nil
	}
	return nil, fmt.Errorf("error writing action %s: seq already used", a.ID)
}

// abandon gives up a written-first enqueue that was not finished in time:
// it seals the action's slot with a tombstone, so that no late put can write
// the action any more, and then removes the record. If the slot already
// holds the action, the enqueue was finished after all and the action is
// returned; otherwise nil.
func (e *Engine) abandon(ctx context.Context, a *Action) (*Action, error) {
	if err := e.seal(ctx, a.Partition, a.Seq); err != nil {
		if !isCondFailed(err) {
			return nil, err
		}
		got, err := e.slotHolder(ctx, a)
		if !errors.Is(err, errSealed) {
			return got, err
		}
	}
	_, err := e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: e.table(), Key: key(idemPK(a.WorkspaceID, a.IdempotencyKey), skIdem),
		ConditionExpression:       aws.String("#id = :id AND attribute_exists(#pl)"),
		ExpressionAttributeNames:  map[string]string{"#id": attrID, "#pl": attrPayload},
		ExpressionAttributeValues: map[string]types.AttributeValue{":id": avS(a.ID)},
	})
	if err != nil && !isCondFailed(err) {
		return nil, fmt.Errorf("error removing abandoned idempotency record of %s: %w", a.ID, err)
	}
	return nil, nil
}

// seal puts a tombstone (the shape erasure leaves: CANCELLED, stop reason
// ERASED, nothing of the action, a TTL, and a retention journal entry so
// that retention deletes it where TTL lags) into an empty action slot. A
// refused condition means the slot is not empty.
func (e *Engine) seal(ctx context.Context, p int, seq int64) error {
	now := e.clk.Now().UTC()
	expiry := now.Add(e.cfg.Retention)
	it := actionKey(p, seq)
	it[attrState] = avS(string(StateCANCELLED))
	it[attrStop] = avS(string(StopErased))
	it[attrEnded] = avMs(now)
	it[attrTTL] = avN(expiry.Unix())
	err := e.putSettled(ctx, &dynamodb.PutItemInput{
		TableName: e.table(), Item: it, ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if isCondFailed(err) {
		return err
	}
	// Journaled like any tombstone (design.md §3.6), also when the put's outcome
	// is unknown: retention skips a listed row that is not ended.
	e.journalTombstone(ctx, partitionPK(p), actionSK(seq))
	if err != nil {
		return fmt.Errorf("error sealing action slot %s: %w", keyLabel(p, seq), err)
	}
	return nil
}

// eraseIdemRecord erases an idempotency record found through the subject
// index, and first the action it names, so that an erasure failing between
// the two leaves the key naming its action (invariant 6). A written-first
// record (design.md §4.2) may name an action not written yet, or written
// after the index was read: its slot is sealed, or the action found there
// erased, before the record goes, so that nothing of the subject can appear
// after the erasure.
func (e *Engine) eraseIdemRecord(ctx context.Context, pk, sk string) error {
	// A record kept in its action's transaction (laned, batch, library
	// mode) or an ended one names an action of the same subject; a lagging
	// subject index can show the record without the action (a resend made
	// a second action after a failure between the two: simulator seeds
	// 1720 and, for a written-first record whose action was written, 965).
	cur, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: e.table(), Key: key(pk, sk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return fmt.Errorf("error reading idempotency record: %w", err)
	}
	if len(cur.Item) == 0 {
		return nil
	}
	erased := getS(cur.Item, attrID)
	if a, pending := pendingFromRecord(cur.Item); pending {
		err = e.sealOrErase(ctx, &a)
	} else {
		err = e.eraseRecordAction(ctx, erased)
	}
	if err != nil {
		return err
	}
	out, err := e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: e.table(), Key: key(pk, sk), ReturnValues: types.ReturnValueAllOld,
	})
	if err != nil {
		return fmt.Errorf("error erasing idempotency record: %w", err)
	}
	// The record changed since it was read (the key abandoned and used
	// again in between): erase the action it named then too.
	if id := getS(out.Attributes, attrID); id != erased {
		return e.eraseRecordAction(ctx, id)
	}
	return nil
}

// sealOrErase seals the slot of a, the action of a written-first record,
// or, when the action is there, erases it.
func (e *Engine) sealOrErase(ctx context.Context, a *Action) error {
	err := e.seal(ctx, a.Partition, a.Seq)
	if err == nil || !isCondFailed(err) {
		return err
	}
	got, err := e.slotHolder(ctx, a)
	if err != nil || got == nil {
		if errors.Is(err, errSealed) {
			return nil
		}
		return err
	}
	_, err = e.eraseRow(ctx, partitionPK(a.Partition), actionSK(a.Seq))
	return err
}

// eraseRecordAction erases the action an erased idempotency record named,
// if it is still there (an erased or deleted row is left as it is).
func (e *Engine) eraseRecordAction(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	p, seq, err := ParseActionID(id)
	if err != nil || p < 0 || p >= MaxPartitions {
		return nil // not an action this table's layout can hold
	}
	if _, err := e.eraseRow(ctx, partitionPK(p), actionSK(seq)); err != nil {
		return fmt.Errorf("error erasing action %s of an erased idempotency record: %w", id, err)
	}
	return nil
}
