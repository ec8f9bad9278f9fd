package outbox

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// readClaimed reads the rows of a claimed batch (their payloads) with
// eventually consistent reads, amortised over the batch (design.md §6): one
// Query of the partition's seq range when the claimed seqs are dense in it
// (a Query is billed on the bytes it reads, rounded up once per 4 KB, where
// a read of each row rounds up each row), else BatchGetItem. Half a read
// unit per 4 KB instead of one read unit per row.
//
// What an eventually consistent read returns may predate the claim: only
// what never changes while an action lives (kind, variant, payload, keys)
// is taken from it; state, epoch, owner and lease come from the claim
// itself, and every later write stays conditioned on the claim's epoch and
// owner. runAttempt falls back to a consistent read of the row whenever
// this read does not show the row exactly as claimed or as it was just
// before (see usableClaimedRow). Errors are not fatal: the attempt reads
// its row itself.
func (e *Engine) readClaimed(ctx context.Context, p int, groups [][]Action) map[int64]map[string]types.AttributeValue {
	var seqs []int64
	for _, g := range groups {
		for _, a := range g {
			seqs = append(seqs, a.Seq)
		}
	}
	if len(seqs) < 2 {
		return nil // one row: a GetItem is as cheap
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	out := make(map[int64]map[string]types.AttributeValue, len(seqs))
	lo, hi := seqs[0], seqs[len(seqs)-1]
	var err error
	if hi-lo+1 <= int64(2*len(seqs)) {
		err = e.queryRange(ctx, p, lo, hi, out)
	} else {
		// Rows left unread are read one by one by their attempts.
		_, err = e.batchRead(ctx, p, seqs, out)
	}
	if err != nil {
		return nil
	}
	return out
}

func (e *Engine) queryRange(ctx context.Context, p int, lo, hi int64, out map[int64]map[string]types.AttributeValue) error {
	var start map[string]types.AttributeValue
	for page := 0; page < 50; page++ {
		q, err := e.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                e.table(),
			KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
			ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#sk": attrSK},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": avS(partitionPK(p)), ":lo": avS(actionSK(lo)), ":hi": avS(actionSK(hi)),
			},
			ExclusiveStartKey: start,
		})
		if err != nil {
			return fmt.Errorf("error reading claimed rows of partition %d: %w", p, err)
		}
		for _, it := range q.Items {
			if a, ok := decodeAction(it); ok {
				out[a.Seq] = it
			}
		}
		if q.LastEvaluatedKey == nil {
			return nil
		}
		start = q.LastEvaluatedKey
	}
	return nil
}

// batchRead reads the rows of seqs, eventually consistent, in at most 10
// BatchGetItem rounds of 100 keys, and returns how many keys it left unread
// (more than 1,000, or unprocessed): the caller says what it does with them.
func (e *Engine) batchRead(ctx context.Context, p int, seqs []int64, out map[int64]map[string]types.AttributeValue) (int, error) {
	keys := make([]map[string]types.AttributeValue, 0, len(seqs))
	for _, s := range seqs {
		keys = append(keys, actionKey(p, s))
	}
	for round := 0; len(keys) > 0 && round < 10; round++ {
		n := min(len(keys), 100)
		r, err := e.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{e.cfg.Table: {Keys: keys[:n]}},
		})
		if err != nil {
			return len(keys), fmt.Errorf("error reading claimed rows of partition %d: %w", p, err)
		}
		for _, it := range r.Responses[e.cfg.Table] {
			if a, ok := decodeAction(it); ok {
				out[a.Seq] = it
			}
		}
		keys = keys[n:]
		if un, ok := r.UnprocessedKeys[e.cfg.Table]; ok {
			keys = append(keys, un.Keys...)
		}
	}
	return len(keys), nil
}

// usableClaimedRow reports whether an eventually consistent read of a
// claimed row can stand in for the consistent one: it shows the row as the
// claim left it, or as it was just before (ADMITTED at the epoch below),
// with no write fence either way (or, for a claim-fenced action, only the
// fence its own claim set: design.md §5), so the attempt neither reads back nor
// misses an earlier write. Anything else (a reclaim, a row that moved on,
// an erased or ended row) is read again consistently.
func usableClaimedRow(it map[string]types.AttributeValue, claimed *Action, now time.Time) (Action, bool) {
	if it == nil || !has(it, attrKind) || !has(it, attrPayload) {
		return Action{}, false
	}
	if has(it, attrWrite) && !(claimed.claim.fenced && getMs(it, attrWrite).Equal(claimed.WriteStartedAt)) {
		return Action{}, false
	}
	if has(it, attrTTL) && getN(it, attrTTL) < now.Unix() {
		return Action{}, false
	}
	a, ok := decodeAction(it)
	if !ok || a.Partition != claimed.Partition || a.Seq != claimed.Seq {
		return Action{}, false
	}
	switch {
	case a.State == StateEXECUTING && a.Epoch == claimed.Epoch && a.Owner == claimed.Owner:
	case a.State == StateADMITTED && a.Epoch == claimed.Epoch-1:
	default:
		return Action{}, false
	}
	a.State, a.Epoch, a.Attempt, a.Owner, a.LeaseExpiresAt = StateEXECUTING, claimed.Epoch, claimed.Attempt, claimed.Owner, claimed.LeaseExpiresAt
	a.WriteStartedAt, a.claim.fenced, a.claim.reclaimed = claimed.WriteStartedAt, claimed.claim.fenced, claimed.claim.reclaimed
	return a, true
}
