package outbox

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The retention journal (design.md §3.6). Ended actions are not indexed one by
// one: each writer of endings (a drainer batch, a reaper run's partition, a
// single end from the API, an erasure) writes one small item per partition
// and retention period, in the partition:
//
//	pk = P#<partition>, sk = R#<expiry ms, 13 digits>#<writer>#<16 hex>
//	seqs (NS): the seqs of the actions that ended
//	n (N): how many seqs
//	ttl (N): the latest expiry of the listed actions, epoch seconds
//
// The expiry in the sort key is the latest expiry of the listed actions, so
// once it passed, every listed row's TTL passed too; the item's own TTL makes
// DynamoDB remove it together with its rows. Retention reads the journal
// items whose expiry passed (those still present are exactly where TTL lags)
// and counts the row cap from them.
//
// A held lane member (lanehold.go) is listed by an item of its own under
// another prefix, without a TTL:
//
//	pk = P#<partition>, sk = H#<expiry ms, 13 digits>#held#<16 hex>
//
// Builds before it (v0.1.0) read only R# items, so they never see the
// listing: they can neither trim the held row it names nor drop the
// listing (ADR 0019, "Mixed builds"). The sweep reads both in one Query,
// from H# up to the R# items whose expiry passed.

const (
	journalPrefix = "R#"
	heldPrefix    = "H#"
	attrJSeqs     = "seqs" // journal: the seqs of the ended actions (NS)
	attrJCount    = "n"    // journal: how many
	// journalMaxBytes keeps a journal item at 1 KB (1 write unit) with room
	// to spare for the estimate's rounding.
	journalMaxBytes  = 1000
	journalWriterMax = 24
)

// journalSK is a journal item's sort key.
func journalSK(expiry time.Time, writer string, unique uint64) string {
	return listingSK(journalPrefix, expiry, writer, unique)
}

// listingSK is the sort key of a journal item (prefix R#) or of a held
// rows' listing (H#).
func listingSK(prefix string, expiry time.Time, writer string, unique uint64) string {
	ms := max(expiry.UnixMilli(), 0)
	if len(writer) > journalWriterMax {
		writer = writer[:journalWriterMax]
	}
	return fmt.Sprintf("%s%013d#%s#%016x", prefix, ms, writer, unique)
}

// listingExpiry is the expiry a journal item's or a held listing's sort
// key starts with.
func listingExpiry(sk string) (time.Time, bool) {
	if len(sk) < 2+13 {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(sk[2:2+13], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// journalUpTo is the sort key above every journal item whose expiry is
// before t.
func journalUpTo(t time.Time) string {
	return fmt.Sprintf("%s%013d", journalPrefix, max(t.UnixMilli(), 0))
}

// numberBytes over-estimates the stored size of a DynamoDB number (about one
// byte per two significant digits, plus one).
func numberBytes(n int64) int { return len(strconv.FormatInt(n, 10))/2 + 2 }

// journal collects the endings of one batch of work (a drainer's claimed
// batch, a reaper's partition, an erasure) and writes them as journal
// items: one per partition and retention period, split at 1 KB. A group
// that fills an item is written at once, so a crash loses at most one
// unwritten item per group. It is safe for concurrent use (a batch's lane
// groups end in parallel).
type journal struct {
	e      *Engine
	writer string

	mu     sync.Mutex
	groups map[journalKey]*journalGroup
	err    error // the first failed write, reported by flush
}

type journalKey struct {
	p   int
	ret time.Duration
}

type journalGroup struct {
	seqs   []int64
	bytes  int
	expiry time.Time // the latest expiry of seqs
}

func (e *Engine) newJournal(writer string) *journal {
	return &journal{e: e, writer: writer, groups: map[journalKey]*journalGroup{}}
}

type journalCtxKey struct{}

// withJournal makes the endings written under ctx go to j instead of one
// journal item each. The collector travels in the context because the ends
// happen deep inside a batch's attempts (runAttempt, applyDecision, end),
// whose signatures do not otherwise care about it.
func withJournal(ctx context.Context, j *journal) context.Context {
	return context.WithValue(ctx, journalCtxKey{}, j)
}

func journalOf(ctx context.Context) *journal {
	j, _ := ctx.Value(journalCtxKey{}).(*journal)
	return j
}

// journalEnd records that the action at (p, seq) ended with the given
// retention and expiry: in the journal of ctx when there is one, else in a
// journal item of its own (a single end from the API: cancel, a caller's
// AttemptFinish, RunNow). A lost single write is not an error of the end
// that already happened: the row still goes by TTL (design.md §3.6).
func (e *Engine) journalEnd(ctx context.Context, p int, seq int64, ret time.Duration, expiry time.Time) {
	if j := journalOf(ctx); j != nil {
		j.add(ctx, p, seq, ret, expiry)
		return
	}
	_ = e.putJournal(context.WithoutCancel(ctx), "end", p, []int64{seq}, expiry)
}

func (j *journal) add(ctx context.Context, p int, seq int64, ret time.Duration, expiry time.Time) {
	k := journalKey{p, ret}
	j.mu.Lock()
	g := j.groups[k]
	if g == nil {
		g = &journalGroup{bytes: journalFixedBytes(p, j.writer)}
		j.groups[k] = g
	}
	var full *journalGroup
	if g.bytes+numberBytes(seq) > journalMaxBytes {
		full = g
		g = &journalGroup{bytes: journalFixedBytes(p, j.writer)}
		j.groups[k] = g
	}
	g.seqs = append(g.seqs, seq)
	g.bytes += numberBytes(seq)
	if expiry.After(g.expiry) {
		g.expiry = expiry
	}
	j.mu.Unlock()
	if full != nil {
		j.put(ctx, p, full)
	}
}

func (j *journal) put(ctx context.Context, p int, g *journalGroup) {
	err := j.e.putJournal(context.WithoutCancel(ctx), j.writer, p, g.seqs, g.expiry)
	if err != nil {
		j.mu.Lock()
		if j.err == nil {
			j.err = err
		}
		j.mu.Unlock()
	}
}

// flush writes what the journal holds and reports the first write that
// failed since it was made.
func (j *journal) flush(ctx context.Context) error {
	j.mu.Lock()
	keys := make([]journalKey, 0, len(j.groups))
	for k := range j.groups {
		keys = append(keys, k)
	}
	groups := j.groups
	j.groups = map[journalKey]*journalGroup{}
	j.mu.Unlock()
	// A fixed order: the simulator replays a seed exactly.
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].p != keys[b].p {
			return keys[a].p < keys[b].p
		}
		return keys[a].ret < keys[b].ret
	})
	for _, k := range keys {
		j.put(ctx, k.p, groups[k])
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// journalFixedBytes over-estimates a journal item's size without its seqs.
func journalFixedBytes(p int, writer string) int {
	pk := len(attrPK) + len(partitionPK(p))
	sk := len(attrSK) + len(journalSK(time.Time{}, writer, 0))
	return pk + sk + len(attrJSeqs) + len(attrJCount) + 4 + len(attrTTL) + 8
}

// putJournal writes one journal item. Throttles and ambiguous failures are
// retried: the item is the same on every try, so a try that landed and a
// retry make one item.
func (e *Engine) putJournal(ctx context.Context, writer string, p int, seqs []int64, expiry time.Time) error {
	return e.writeJournal(ctx, writer, p, seqs, expiry, false)
}

// writeJournal is putJournal; held, the item is a held rows' listing
// (lanehold.go): under heldPrefix, with no TTL of its own (retention must
// read it).
func (e *Engine) writeJournal(ctx context.Context, writer string, p int, seqs []int64, expiry time.Time, held bool) error {
	if len(seqs) == 0 {
		return nil
	}
	ns := make([]string, len(seqs))
	for i, s := range seqs {
		ns[i] = strconv.FormatInt(s, 10)
	}
	prefix := journalPrefix
	if held {
		prefix = heldPrefix
	}
	in := &dynamodb.PutItemInput{TableName: e.table(), Item: map[string]types.AttributeValue{
		attrPK:     avS(partitionPK(p)),
		attrSK:     avS(listingSK(prefix, expiry, writer, e.uint64())),
		attrJSeqs:  &types.AttributeValueMemberNS{Value: ns},
		attrJCount: avN(int64(len(seqs))),
	}}
	if !held {
		in.Item[attrTTL] = avN(expiry.Unix())
	}
	for try := 0; ; try++ {
		_, err := e.db.PutItem(ctx, in)
		if err == nil {
			return nil
		}
		if try >= 3 || ctx.Err() != nil || !(isAmbiguous(err) || isRetryable(err)) {
			return fmt.Errorf("error writing retention journal of partition %d (%d ended actions; TTL still removes them): %w", p, len(seqs), err)
		}
	}
}

// journalItem is one journal item as retention reads it.
type journalItem struct {
	p    int
	sk   string
	held bool    // a held rows' listing (H#)
	seqs []int64 // ascending
	n    int
}

func decodeJournal(p int, it map[string]types.AttributeValue) journalItem {
	j := journalItem{p: p, sk: getS(it, attrSK), n: int(getN(it, attrJCount))}
	j.held = strings.HasPrefix(j.sk, heldPrefix)
	if ns, ok := it[attrJSeqs].(*types.AttributeValueMemberNS); ok {
		for _, v := range ns.Value {
			if s, err := strconv.ParseInt(v, 10, 64); err == nil {
				j.seqs = append(j.seqs, s)
			}
		}
	}
	slices.Sort(j.seqs)
	return j
}

// queryJournal reads partition p's journal items, oldest expiry first,
// page by page; each page goes to fn, which returns false to stop. With
// upto "" it reads every journal item (R#); else the held rows' listings
// (H#, whatever their expiry: they come first, and are few) and the
// journal items with a sort key below upto, in one Query.
func (e *Engine) queryJournal(ctx context.Context, p int, upto string, limit int32, fn func([]journalItem) (bool, error)) error {
	kc := "#pk = :pk AND begins_with(#sk, :r)"
	vals := map[string]types.AttributeValue{":pk": avS(partitionPK(p)), ":r": avS(journalPrefix)}
	if upto != "" {
		kc = "#pk = :pk AND #sk BETWEEN :h AND :upto"
		vals = map[string]types.AttributeValue{":pk": avS(partitionPK(p)), ":h": avS(heldPrefix), ":upto": avS(upto)}
	}
	var start map[string]types.AttributeValue
	for {
		in := &dynamodb.QueryInput{
			TableName: e.table(), KeyConditionExpression: aws.String(kc),
			ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
			ExpressionAttributeValues: vals, ExclusiveStartKey: start,
		}
		if limit > 0 {
			in.Limit = aws.Int32(limit)
		}
		q, err := e.db.Query(ctx, in)
		if err != nil {
			return fmt.Errorf("error reading retention journal of partition %d: %w", p, err)
		}
		page := make([]journalItem, 0, len(q.Items))
		for _, it := range q.Items {
			page = append(page, decodeJournal(p, it))
		}
		more, err := fn(page)
		if err != nil || !more || q.LastEvaluatedKey == nil {
			return err
		}
		start = q.LastEvaluatedKey
	}
}

// deleteJournal deletes a processed journal item.
func (e *Engine) deleteJournal(ctx context.Context, j journalItem) error {
	_, err := e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: e.table(), Key: key(partitionPK(j.p), j.sk)})
	if err != nil {
		return fmt.Errorf("error deleting retention journal item %s/%s: %w", partitionPK(j.p), j.sk, err)
	}
	return nil
}
