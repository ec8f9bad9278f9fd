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

// EnqueueParams describes one action to enqueue.
type EnqueueParams struct {
	Kind           string
	WorkspaceID    string
	LaneKey        string
	IdempotencyKey string
	SubjectID      string
	Payload        json.RawMessage
	MaxAttempts    int       // 0 = Config.MaxAttempts
	ExpiresAt      time.Time // zero = never
	Propose        bool      // PROPOSED instead of ADMITTED
}

// EnqueueResult is the action an enqueue created or found.
type EnqueueResult struct {
	Action   Action
	Existing bool // the idempotency key was seen: this is the first action, nothing changed
}

// PreparedEnqueue is library mode: the items that create an action, to be
// appended to the caller's own TransactWriteItems so that the action exists
// exactly when the caller's change commits.
type PreparedEnqueue struct {
	Action Action
	Items  []types.TransactWriteItem
	e      *Engine
}

const (
	maxKeyLen       = 512
	maxBatchPayload = 3 << 20
)

// prepared is one action with its items, before they are written.
type prepared struct {
	a      Action
	action types.TransactWriteItem
	idem   *types.TransactWriteItem
	spec   KindSpec
	// holds, holdsRow: placement's (the check above the count is on holds).
	holds    int64
	holdsRow bool
}

// validateEnqueue checks params and returns the kind's spec and variant.
func (e *Engine) validateEnqueue(p *EnqueueParams, now time.Time) (Adapter, string, error) {
	ad, err := e.enqueueKind(p)
	if err != nil {
		return nil, "", err
	}
	if err := validateEnqueueKeys(p); err != nil {
		return nil, "", err
	}
	if err := e.validateEnqueueBody(p, now); err != nil {
		return nil, "", err
	}
	v, err := variantOf(ad.Spec(), p.Payload, p.IdempotencyKey)
	if err != nil {
		return nil, "", err
	}
	if err := ad.Validate(v, p.Payload); err != nil {
		var pe *PayloadError
		if errors.As(err, &pe) {
			return nil, "", pe
		}
		return nil, "", &PayloadError{Message: err.Error()}
	}
	return ad, v, nil
}

// enqueueKind returns the adapter of p's kind, and checks that p names a
// workspace exactly when the kind is not instance-level.
func (e *Engine) enqueueKind(p *EnqueueParams) (Adapter, error) {
	ad, ok := e.reg.Lookup(p.Kind)
	if !ok {
		if p.Kind == "" {
			return nil, &ValidationError{Field: "kind", Message: "kind is required"}
		}
		return nil, fmt.Errorf("%w: %q", ErrUnknownKind, p.Kind)
	}
	s := ad.Spec()
	if s.InstanceLevel && p.WorkspaceID != "" {
		return nil, &ValidationError{Field: "workspace_id", Message: fmt.Sprintf("kind %s is instance-level and takes no workspace", p.Kind)}
	}
	if !s.InstanceLevel && p.WorkspaceID == "" {
		return nil, &ValidationError{Field: "workspace_id", Message: "workspace_id is required"}
	}
	return ad, nil
}

// validateEnqueueKeys checks the identifiers that become parts of keys:
// bounded length, no NUL, and no '#' in a workspace id.
func validateEnqueueKeys(p *EnqueueParams) error {
	for _, f := range []struct{ name, v string }{
		{"workspace_id", p.WorkspaceID}, {"lane_key", p.LaneKey},
		{"idempotency_key", p.IdempotencyKey}, {"subject_id", p.SubjectID},
	} {
		if len(f.v) > maxKeyLen {
			return &ValidationError{Field: f.name, Message: fmt.Sprintf("must be at most %d bytes", maxKeyLen)}
		}
		if strings.ContainsRune(f.v, 0) || (f.name == "workspace_id" && strings.Contains(f.v, "#")) {
			return &ValidationError{Field: f.name, Message: "contains a forbidden character"}
		}
	}
	return nil
}

// validateEnqueueBody checks the payload (present, within
// Config.MaxPayload, JSON), max_attempts and expires_at.
func (e *Engine) validateEnqueueBody(p *EnqueueParams, now time.Time) error {
	if len(p.Payload) == 0 {
		return &ValidationError{Field: "payload", Message: "payload is required"}
	}
	if len(p.Payload) > e.cfg.MaxPayload {
		return &TooLargeError{Size: len(p.Payload), Max: e.cfg.MaxPayload}
	}
	if !json.Valid(p.Payload) {
		return &ValidationError{Field: "payload", Message: "payload is not valid JSON"}
	}
	if p.MaxAttempts < 0 || p.MaxAttempts > 1000 {
		return &ValidationError{Field: "max_attempts", Message: "must be between 1 and 1000"}
	}
	if !p.ExpiresAt.IsZero() && !p.ExpiresAt.After(now) {
		return &ValidationError{Field: "expires_at", Message: "must be in the future"}
	}
	return nil
}

// reserveSeq returns a seq of partition p greater than above. Seqs are
// reserved in blocks of Config.SeqBlock (one counter update per block), so a
// keyless enqueue usually costs a single conditional Put.
func (e *Engine) reserveSeq(ctx context.Context, p int, above int64) (int64, error) {
	e.seqMu.Lock()
	defer e.seqMu.Unlock()
	if n := e.seqNext[p]; n != 0 && n < e.seqEnd[p] && n > above {
		e.seqNext[p] = n + 1
		return n, nil
	}
	block := int64(e.cfg.SeqBlock)
	hi, err := e.addSeq(ctx, p, block)
	if err != nil {
		return 0, err
	}
	if used := e.seqEnd[p] - 1; hi-block < used {
		// The block overlaps one this engine reserved before: the counter
		// went backwards, the table was created again under this engine
		// (ferry dev after an in-memory DynamoDB came back empty). Move it
		// past every seq this engine reserved, which the new table may hold
		// already (design.md §3.2).
		if hi, err = e.addSeq(ctx, p, used-hi+block); err != nil {
			return 0, err
		}
	}
	lo := hi - block + 1
	if lo <= above {
		// A tail newer than our block can only come from a later block: the
		// counter has moved past it by now.
		lo = above + 1
		if lo > hi {
			return 0, fmt.Errorf("error reserving seq of partition %d: counter %d behind lane tail %d", p, hi, above)
		}
	}
	e.seqNext[p], e.seqEnd[p] = lo+1, hi+1
	return lo, nil
}

// addSeq adds n to partition p's seq counter and returns its new value.
func (e *Engine) addSeq(ctx context.Context, p int, n int64) (int64, error) {
	out, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 e.table(),
		Key:                       key(partitionPK(p), skSeq),
		UpdateExpression:          aws.String("ADD #n :b"),
		ExpressionAttributeNames:  map[string]string{"#n": attrSeqNext},
		ExpressionAttributeValues: map[string]types.AttributeValue{":b": avN(n)},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, fmt.Errorf("error reserving seq block of partition %d: %w", p, err)
	}
	return getN(out.Attributes, attrSeqNext), nil
}

// prepare builds the items of a batch of enqueues (one lane tail update per
// lane, chained in order). It reads each lane's tail: eventually consistent
// when eventual is set (the first try of EnqueueBatch: every tail write is
// conditioned on the tail as read, so a stale read is refused and tried
// again with consistent reads; design.md §7.1, ADR 0017), else consistent.
func (e *Engine) prepare(ctx context.Context, ps []EnqueueParams, eventual bool) ([]*prepared, []types.TransactWriteItem, error) {
	// Times are stored in milliseconds: answer with what a later read returns.
	now := e.clk.Now().UTC().Truncate(time.Millisecond)
	valid, err := e.validateBatch(ps, now)
	if err != nil {
		return nil, nil, err
	}
	// The table's id goes into every action id (design.md §3.10): read
	// once per process.
	ident, err := e.identity(ctx)
	if err != nil {
		return nil, nil, err
	}
	lanes := newLaneTails()
	lanes.eventual = eventual
	out := make([]*prepared, 0, len(ps))
	for i := range ps {
		pl, err := e.place(ctx, &ps[i], lanes)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, e.newPrepared(&ps[i], valid[i], pl, now, ident.tableID))
	}
	// No successor link is written: an out-of-order end finds its
	// successor when it needs it (design.md §7.3).
	checks, err := e.aboveCountChecks(ctx, out)
	if err != nil {
		return nil, nil, err
	}
	return out, append(checks, lanes.puts(e)...), nil
}

// validEnqueue is what validation learned of one enqueue: its kind's
// adapter and its payload's variant.
type validEnqueue struct {
	ad      Adapter
	variant string
}

// validateBatch validates a whole batch before anything is reserved, so a
// refused batch writes nothing (not even a seq block).
func (e *Engine) validateBatch(ps []EnqueueParams, now time.Time) ([]validEnqueue, error) {
	valid := make([]validEnqueue, len(ps))
	keys := map[string]bool{}
	for i := range ps {
		p := &ps[i]
		ad, variant, err := e.validateEnqueue(p, now)
		if err != nil {
			return nil, &BatchItemError{Index: i, Err: err}
		}
		valid[i] = validEnqueue{ad, variant}
		if p.IdempotencyKey != "" {
			k := p.WorkspaceID + "\x00" + p.IdempotencyKey
			if keys[k] {
				return nil, &BatchItemError{Index: i, Err: &ValidationError{Field: "idempotency_key",
					Message: fmt.Sprintf("key %q appears twice in one batch", p.IdempotencyKey)}}
			}
			keys[k] = true
		}
	}
	return valid, nil
}

// placement is where an action goes: its partition, its seq, and its lane
// predecessor's seq (0: none).
type placement struct {
	part      int
	seq, prev int64
	// holds, holdsRow: the lane's tail names an ended member above the
	// count and holds is the member still holding the lane there
	// (laneTail.holds); the check above the count is on it, not on prev.
	holds    int64
	holdsRow bool
}

// place chooses an action's partition (its lane's, or the next of the
// spread), reads its lane's tail the first time the batch names the lane,
// and reserves its seq.
func (e *Engine) place(ctx context.Context, p *EnqueueParams, lanes *laneTails) (placement, error) {
	var pl placement
	count, _, err := e.partitionCounts(ctx)
	if err != nil {
		return pl, err
	}
	lid := laneID{p.WorkspaceID, p.LaneKey}
	if p.LaneKey != "" {
		t, seen := lanes.newest[lid]
		if !seen {
			if t, err = e.readLaneTail(ctx, lid, count, lanes.eventual); err != nil {
				return pl, err
			}
			lanes.read(lid, t)
		}
		// A lane stays in the partition of its live members (its tail's);
		// a lane without one starts in its partition under the count
		// (ADR 0011).
		pl.part, pl.prev, pl.holds, pl.holdsRow = t.p, t.seq, t.holds, t.holdsRow
		if t.seq == 0 {
			pl.part = LanePartition(p.WorkspaceID, p.LaneKey, count)
		}
	} else {
		pl.part = int(e.spread.Add(1) % uint64(count))
	}
	seq, err := e.reserveSeq(ctx, pl.part, pl.prev)
	if err != nil {
		return pl, err
	}
	pl.seq = seq
	if p.LaneKey != "" {
		lanes.newest[lid] = laneTail{seq: seq, p: pl.part}
	}
	return pl, nil
}

// readLaneTail reads a lane's tail for an enqueue. A tail in a partition
// at or above the count (the count went down) holds the lane there only
// while its member is live: the enqueue's link on that member is
// conditioned on it (successorLinks), so nothing is written behind it once
// it ended, and a partition above the count empties (ADR 0011 §2). A tail
// whose member ended there is read as none, unless a live member before it
// still holds the lane (laneHolder: the member ended out of order without
// a relink): then the next member joins behind the tail, conditioned on
// that one. None: the lane starts again under the count, and the tail's
// move is conditioned on it as read. eventual
// reads the tail eventually consistent where it may (readTailAs).
func (e *Engine) readLaneTail(ctx context.Context, lid laneID, count int, eventual bool) (laneTail, error) {
	t, _, err := e.readTailAs(ctx, lid, eventual)
	if err != nil || t.seq == 0 || t.p < count {
		return t, err
	}
	it, err := e.readLinks(ctx, t.p, t.seq)
	if err != nil || it != nil && !State(getS(it, attrState)).Ended() {
		return t, err
	}
	// An ended member that ended out of order without a relink (its
	// relink refused maxRelinkTries times, or its predecessor ended the
	// same way) may have a live member before it: that one still holds the
	// lane here, and the next member waits for it behind the tail.
	if t.holds, t.holdsRow, err = e.laneHolder(ctx, t.p, t.seq, it); err != nil || t.holds != 0 {
		return t, err
	}
	return laneTail{p: t.p, ended: t.seq}, nil
}

// newPrepared builds a new action and its items: the action's put and,
// when keyed, its idempotency record's put (design.md §4.3-§4.5).
func (e *Engine) newPrepared(p *EnqueueParams, v validEnqueue, pl placement, now time.Time, tableID uint64) *prepared {
	maxAtt := p.MaxAttempts
	if maxAtt == 0 {
		maxAtt = e.cfg.MaxAttempts
	}
	a := Action{
		ID: NewActionID(now, tableID, pl.part, pl.seq), Kind: p.Kind, Variant: v.variant, WorkspaceID: p.WorkspaceID,
		LaneKey: p.LaneKey, IdempotencyKey: p.IdempotencyKey, SubjectID: p.SubjectID,
		State: StateADMITTED, MaxAttempts: maxAtt, Payload: p.Payload,
		Partition: pl.part, Seq: pl.seq, PrevSeq: pl.prev, CreatedAt: now, NextAttemptAt: now,
	}
	if p.Propose {
		a.State = StatePROPOSED
	}
	if !p.ExpiresAt.IsZero() {
		a.ExpiresAt = p.ExpiresAt.UTC()
	}
	pr := &prepared{a: a, spec: v.ad.Spec(), holds: pl.holds, holdsRow: pl.holdsRow}
	pr.action = types.TransactWriteItem{Put: &types.Put{
		TableName:           e.table(),
		Item:                actionItem(&a),
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}}
	if p.IdempotencyKey != "" {
		pr.idem = e.idemRecordPut(&a)
	}
	return pr
}

// laneHolder walks back the prev links of it, the row of seq, an ended
// member of partition p (nil: gone), with consistent reads, to the first
// live member: the one holding the lane (0: none, the chain reaches its
// start or a gone row). Past maxLaneWalk rows it stops at the last row it
// read (row: an ended row that was there): the lane waits, as a claim's
// walk does past its bound, until retention deletes that row.
func (e *Engine) laneHolder(ctx context.Context, p int, seq int64, it map[string]types.AttributeValue) (holds int64, row bool, err error) {
	for hop := 0; it != nil; hop++ {
		pv := getN(it, attrPrev)
		if pv == 0 {
			return 0, false, nil
		}
		if hop >= maxLaneWalk {
			return seq, true, nil
		}
		if it, err = e.readLinks(ctx, p, pv); err != nil {
			return 0, false, err
		}
		if it != nil && !State(getS(it, attrState)).Ended() {
			return pv, false, nil
		}
		seq = pv
	}
	return 0, false, nil
}

// aboveCountChecks keeps each laned member placed in a partition at or
// above the count behind a live member (readLaneTail, ADR 0011 §2): a
// ConditionCheck that its predecessor is still live, whose refusal reads
// the tail again. Such a partition then empties and can be retired.
func (e *Engine) aboveCountChecks(ctx context.Context, out []*prepared) ([]types.TransactWriteItem, error) {
	count, _, err := e.partitionCounts(ctx)
	if err != nil {
		return nil, err
	}
	inBatch := map[int64]bool{}
	for _, pr := range out {
		inBatch[pr.a.Seq] = true
	}
	var items []types.TransactWriteItem
	for _, pr := range out {
		if pr.a.LaneKey == "" || pr.a.PrevSeq == 0 || pr.a.Partition < count || inBatch[pr.a.PrevSeq] {
			continue
		}
		c := &types.ConditionCheck{
			TableName: e.table(), Key: actionKey(pr.a.Partition, pr.a.PrevSeq), ConditionExpression: aws.String(liveCond),
			ExpressionAttributeNames: map[string]string{"#st": attrState}, ExpressionAttributeValues: liveVals(map[string]types.AttributeValue{}),
		}
		switch {
		case pr.holdsRow:
			// Past the walk's bound: the ended row the walk stopped at is
			// still there (the partition is not empty; once retention
			// deleted it, a read again finds the chain cut there).
			c.Key, c.ConditionExpression, c.ExpressionAttributeValues = actionKey(pr.a.Partition, pr.holds), aws.String("attribute_exists(#st)"), nil
		case pr.holds != 0:
			// Behind an ended tail: the live member before it.
			c.Key = actionKey(pr.a.Partition, pr.holds)
		}
		items = append(items, types.TransactWriteItem{ConditionCheck: c})
	}
	return items, nil
}

// laneTails follows the tails of the lanes an enqueue batch names: each as
// read, and its newest seq once the batch's members are placed.
type laneTails struct {
	newest map[laneID]laneTail
	old    map[laneID]laneTail
	order  []laneID

	// eventual: the tails are read eventually consistent (prepare).
	eventual bool
}

func newLaneTails() *laneTails {
	return &laneTails{newest: map[laneID]laneTail{}, old: map[laneID]laneTail{}}
}

// read records a lane's tail as read (seq 0: no tail).
func (l *laneTails) read(lid laneID, t laneTail) {
	l.old[lid], l.newest[lid] = t, t
	l.order = append(l.order, lid)
}

// puts are the tail writes of the batch, in the order the lanes were read.
func (l *laneTails) puts(e *Engine) []types.TransactWriteItem {
	items := make([]types.TransactWriteItem, 0, len(l.order))
	for _, lid := range l.order {
		items = append(items, e.laneTailPut(lid, l.old[lid], l.newest[lid]))
	}
	return items
}

// Enqueue records one action. A second enqueue with the same (workspace,
// idempotency key) returns the first action with Existing set and changes
// nothing.
func (e *Engine) Enqueue(ctx context.Context, p EnqueueParams) (*EnqueueResult, error) {
	rs, err := e.EnqueueBatch(ctx, []EnqueueParams{p})
	var item *BatchItemError
	if errors.As(err, &item) {
		return nil, item.Err // a batch of one: no item to name
	}
	if err != nil {
		return nil, err
	}
	return &rs[0], nil
}

// maxEnqueueRounds bounds the transactions of one enqueue refused by a lane
// tail that moved (or a concurrent transaction) before it answers
// *LaneBusyError.
const maxEnqueueRounds = 9

// maxLaneBackoff caps the wait before an enqueue's next try after its
// lane's tail moved: the wait after try n is uniform in [0, 2^(n-1) ms),
// at most this, so that contenders spread out (127 ms at most in all).
const maxLaneBackoff = 32 * time.Millisecond

// laneBackoff is the wait after the round-th refused try (from 0), drawn
// from the engine's source.
func (e *Engine) laneBackoff(round int) time.Duration {
	ceiling := min(time.Millisecond<<min(round, 10), maxLaneBackoff)
	return time.Duration(e.intN(int(ceiling/time.Microsecond))) * time.Microsecond
}

// EnqueueBatch records up to 25 actions atomically: all of them or none.
// Actions whose idempotency key was seen come back with Existing set. A
// lane whose tail kept moving under concurrent enqueues answers
// *LaneBusyError, having written nothing.
func (e *Engine) EnqueueBatch(ctx context.Context, ps []EnqueueParams) ([]EnqueueResult, error) {
	if len(ps) == 0 || len(ps) > MaxBatchEnqueue {
		return nil, &ValidationError{Field: "actions", Message: fmt.Sprintf("a batch holds 1 to %d actions, got %d", MaxBatchEnqueue, len(ps))}
	}
	total := 0
	for _, p := range ps {
		total += len(p.Payload)
	}
	if total > maxBatchPayload {
		// DynamoDB refuses a transaction over 4 MB; keep room for attributes.
		return nil, &ValidationError{Field: "actions", Message: fmt.Sprintf("a batch's payloads add up to %d bytes, over %d", total, maxBatchPayload)}
	}
	results := make([]EnqueueResult, len(ps))
	pending := make([]int, len(ps)) // indexes into ps still to write
	for i := range pending {
		pending[i] = i
	}
	for round := 0; ; round++ {
		sub := make([]EnqueueParams, len(pending))
		for j, i := range pending {
			sub[j] = ps[i]
		}
		// The first try reads lane tails eventually consistent; a tail
		// that moved since (or a stale read) refuses the transaction, and
		// the tries after it read them consistently.
		prs, laneItems, err := e.prepare(ctx, sub, round == 0)
		if err != nil {
			var item *BatchItemError
			if errors.As(err, &item) {
				item.Index = pending[item.Index] // sub's index -> ps's
			}
			return nil, err
		}
		existing, err := e.writeEnqueue(ctx, prs, laneItems)
		if err == nil {
			for j, i := range pending {
				results[i] = EnqueueResult{Action: prs[j].a}
			}
			return results, nil
		}
		if existing == nil {
			return nil, err
		}
		if round >= maxEnqueueRounds-1 {
			// A tail that moved every time: the lane takes enqueues one
			// after another (design.md §4.3).
			return nil, &LaneBusyError{Tries: round + 1, Err: err}
		}
		// Some keys were seen (or a lane tail moved): answer those with the
		// first action and write the rest again.
		var rest []int
		for j, i := range pending {
			if a, ok := existing[j]; ok {
				results[i] = EnqueueResult{Action: a, Existing: true}
			} else {
				rest = append(rest, i)
			}
		}
		if len(rest) == 0 {
			return results, nil
		}
		if len(rest) == len(pending) {
			// No key was seen: a lane tail moved (or a transaction
			// conflicted). Let the enqueues that won go first.
			if err := e.sleep(ctx, e.laneBackoff(round)); err != nil {
				return nil, err
			}
		}
		pending = rest
	}
}

// writeEnqueue writes prepared actions. On a refusal it returns the actions
// found for seen idempotency keys (by index into prs), non-nil when the
// caller should retry the others.
func (e *Engine) writeEnqueue(ctx context.Context, prs []*prepared, laneItems []types.TransactWriteItem) (map[int]Action, error) {
	if len(prs) == 1 && prs[0].idem != nil && len(laneItems) == 0 && prs[0].a.LaneKey == "" {
		// One keyed action outside a lane: the record first, then the
		// action, two plain puts (design.md §4.2).
		return e.enqueueKeyedFirst(ctx, prs[0])
	}
	if len(prs) == 1 && prs[0].idem == nil && len(laneItems) == 0 {
		put := prs[0].action.Put
		err := e.putSettled(ctx, &dynamodb.PutItemInput{
			TableName: put.TableName, Item: put.Item, ConditionExpression: put.ConditionExpression,
		})
		if err != nil {
			if isCondFailed(err) {
				// A seq collision means the counter was reset under us.
				return nil, fmt.Errorf("error enqueueing %s: seq already used: %w", prs[0].a.ID, err)
			}
			return nil, fmt.Errorf("error enqueueing %s: %w", prs[0].a.ID, err)
		}
		return nil, nil
	}
	var items []types.TransactWriteItem
	idemAt := map[int]int{} // transaction index -> prs index
	for j, pr := range prs {
		items = append(items, pr.action)
		if pr.idem != nil {
			idemAt[len(items)] = j
			items = append(items, *pr.idem)
		}
	}
	items = append(items, laneItems...)
	if len(items) > MaxTransactItems {
		return nil, &ValidationError{Field: "actions", Message: "batch needs more than 100 transaction items"}
	}
	err := e.transact(ctx, items, e.token())
	if err == nil {
		return nil, nil
	}
	reasons, ok := cancelReasons(err)
	if !ok {
		return nil, fmt.Errorf("error enqueueing: %w", err)
	}
	existing := map[int]Action{}
	for ti, code := range reasons {
		if code != "ConditionalCheckFailed" {
			continue
		}
		j, isIdem := idemAt[ti]
		if !isIdem {
			continue // a lane tail moved or a seq collided: retry with fresh reads
		}
		a, err := e.idemLookup(ctx, prs[j].a.WorkspaceID, prs[j].a.IdempotencyKey)
		if err != nil {
			return nil, err
		}
		if a != nil {
			existing[j] = *a
		}
	}
	return existing, fmt.Errorf("error enqueueing: %w", err)
}

// idemLookup returns the action an idempotency record names, nil when the
// record is gone (or its TTL passed, after which it is removed here). A
// written-first record whose action is missing is finished here: its
// action is written from it (or, past FinishWindow, the enqueue abandoned
// and the record removed) (design.md §3.5, §4.2).
func (e *Engine) idemLookup(ctx context.Context, ws, ikey string) (*Action, error) {
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: e.table(), Key: key(idemPK(ws, ikey), skIdem), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("error reading idempotency record: %w", err)
	}
	if out.Item == nil {
		return nil, nil
	}
	id := getS(out.Item, attrID)
	if !expiredByTTL(out.Item, e.clk.Now()) {
		a, err := e.ActionGet(ctx, id)
		if err == nil {
			if a.State.Ended() && (!has(out.Item, attrTTL) || has(out.Item, attrPayload)) {
				// Its ender died between the end and the record's write
				// (design.md §3.5): mend the record now.
				ended := *a
				ended.WorkspaceID, ended.IdempotencyKey = ws, ikey
				e.idemExpire(ctx, &ended, a.EndedAt.Add(e.retentionOf(a.Kind)+idemTTLSlack+e.cfg.ClockSkew))
			}
			return a, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		if pending, ok := pendingFromRecord(out.Item); ok {
			got, err := e.materialize(ctx, &pending)
			if err != nil && !errors.Is(err, errSealed) {
				return nil, err
			}
			if got != nil {
				return got, nil
			}
			// Sealed (erased) or abandoned: the key can be used again.
		}
	}
	// The action is gone: the record outlived it; remove it so the key
	// can be used again.
	_, derr := e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: e.table(), Key: key(idemPK(ws, ikey), skIdem),
		ConditionExpression:       aws.String("#id = :id"),
		ExpressionAttributeNames:  map[string]string{"#id": attrID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":id": avS(id)},
	})
	if derr != nil && !isCondFailed(derr) {
		return nil, fmt.Errorf("error removing stale idempotency record: %w", derr)
	}
	return nil, nil
}

// EnqueueItems is library mode: it returns the items that create the action,
// for the caller to append to its own TransactWriteItems. The action exists
// exactly when that transaction commits. If the transaction is cancelled,
// Resolve tells whether the idempotency key was already used. The items
// are good for MapTTL: they name a partition as the partition map stood,
// and a partition above a lowered count is retired 2 x MapTTL after the
// change once it is empty (design.md §3.12), so a transaction sent later
// could put the action where no sweep looks. A caller sends them at once
// and prepares them again past MapTTL (design.md §4.5).
func (e *Engine) EnqueueItems(ctx context.Context, p EnqueueParams) (*PreparedEnqueue, error) {
	// Library mode: the caller's transaction is refused on a stale tail
	// and its retry cannot say so: consistent reads.
	prs, laneItems, err := e.prepare(ctx, []EnqueueParams{p}, false)
	if err != nil {
		return nil, err
	}
	items := []types.TransactWriteItem{prs[0].action}
	if prs[0].idem != nil {
		items = append(items, *prs[0].idem)
	}
	items = append(items, laneItems...)
	return &PreparedEnqueue{Action: prs[0].a, Items: items, e: e}, nil
}

// Resolve explains a failed caller transaction that carried these items: when
// the idempotency key was already used, it returns the first action with
// Existing set. Otherwise it returns nil and the caller retries with fresh
// items (a lane tail moved) or handles its own error.
func (pe *PreparedEnqueue) Resolve(ctx context.Context, txErr error) (*EnqueueResult, error) {
	if pe.Action.IdempotencyKey == "" || !isCondFailed(txErr) {
		return nil, nil
	}
	a, err := pe.e.idemLookup(ctx, pe.Action.WorkspaceID, pe.Action.IdempotencyKey)
	if err != nil || a == nil || a.ID == pe.Action.ID {
		return nil, err
	}
	return &EnqueueResult{Action: *a, Existing: true}, nil
}

// putSettled writes a new action with a conditional PutItem, retrying
// throttles and ambiguous failures with the same item; a retry refused
// because the item exists is our own earlier try when the row read back is
// the one we wrote (same id and creation time).
func (e *Engine) putSettled(ctx context.Context, in *dynamodb.PutItemInput) error {
	ambiguous := false
	for try := 0; ; try++ {
		_, err := e.db.PutItem(ctx, in)
		if err == nil {
			return nil
		}
		if isCondFailed(err) {
			if ambiguous {
				out, gerr := e.db.GetItem(ctx, &dynamodb.GetItemInput{
					TableName: in.TableName, Key: key(getS(in.Item, attrPK), getS(in.Item, attrSK)), ConsistentRead: aws.Bool(true),
				})
				if gerr == nil && out.Item != nil && getS(out.Item, attrID) == getS(in.Item, attrID) &&
					getN(out.Item, attrCreated) == getN(in.Item, attrCreated) {
					return nil
				}
			}
			return err
		}
		if try >= 3 || ctx.Err() != nil || !(isAmbiguous(err) || isRetryable(err)) {
			return err
		}
		ambiguous = ambiguous || isAmbiguous(err)
	}
}
