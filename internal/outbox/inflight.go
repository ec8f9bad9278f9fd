package outbox

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// In-flight tracking (design.md §3.3). A claim takes each action out of the due
// index (one index delete instead of a projected-attribute update, and the
// end then writes nothing to the index). The partition's claim fence row
// keeps what the index no longer shows: a map attribute (attrInflight) from
// seq to the lease expiry the claim gave. The invariant:
//
//	every EXECUTING action that is not in the due index has an entry in its
//	partition's fence map.
//
// A claim sets the entries of the actions it takes with one update of the
// fence row, conditioned on holding the fence, before it sends the updates
// that claim the actions and remove their due keys (ADR 0016): entry first,
// action second. An entry is removed only by a write conditioned on holding
// the fence, and only when no claim update can still land on its row:
// after the holder's own claim of the action landed (which moved its epoch
// past every other claimer's condition) and the holder saw the action end,
// go back to ADMITTED, or re-enter due; or when the row is gone or ended.
// An entry whose claim update was refused or never sent is stale: it stays
// until the row's next claim lands and settles, or the row ends; it only
// ever delays a reclaim, never lets two claims run.

// fenceHold is a held claim fence as its holder knows it.
type fenceHold struct {
	p       int
	owner   string
	version int64

	mu      sync.Mutex
	inf     map[int64]time.Time // the fence row's map, as the holder last read or wrote it
	settled map[int64]bool      // entries the holder saw settle: removed by its next fence write
	looked  map[int64]bool      // expired entries read and left alone (not ours to take now)

	// The blocked run at the front of due (blockedrun.go): as on the row,
	// and what the holder's next fence write sets or removes.
	blk     blockedRun
	blkSet  *blockedRun
	blkDrop bool

	// until is when the holder's lease on the fence ends, as it last took
	// or extended it (zero: unknown, a hold outside a drain); extending
	// serializes the lane groups that take it longer (fenceCovers).
	until     time.Time
	extending sync.Mutex
}

// leaseEnd is when the holder's lease on the fence ends (zero: unknown).
func (h *fenceHold) leaseEnd() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.until
}

// setLeaseEnd records a new end of the holder's lease on the fence.
func (h *fenceHold) setLeaseEnd(until time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.until = until
}

func newFenceHold(p int, owner string, version int64, inf map[int64]time.Time) *fenceHold {
	if inf == nil {
		inf = map[int64]time.Time{}
	}
	return &fenceHold{p: p, owner: owner, version: version, inf: inf, settled: map[int64]bool{}, looked: map[int64]bool{}}
}

// settle records that the holder saw an action it claimed leave the
// in-flight set (ended, ADMITTED, or back in due) by a write of its own.
func (h *fenceHold) settle(seq int64) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.settled[seq] = true
}

// removable lists the entries to remove with the holder's next fence write:
// those seen settled that are in the map, except the ones claimed again in
// that same write (a write may not set and remove one path).
// At most maxFenceRemoves, lowest seq first; the rest wait for the next
// write.
func (h *fenceHold) removable(except map[int64]time.Time) []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int64
	for seq := range h.settled {
		if _, again := except[seq]; again {
			continue
		}
		if _, ok := h.inf[seq]; ok {
			out = append(out, seq)
		} else {
			delete(h.settled, seq) // nothing to remove
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	if len(out) > maxFenceRemoves {
		out = out[:maxFenceRemoves]
	}
	return out
}

// pending reports whether the holder has entries to remove or to renew
// with a fence write.
func (h *fenceHold) pending(renew map[int64]time.Time) bool {
	if len(renew) > 0 {
		return true
	}
	if w := h.blkPending(); w.set != nil || w.drop {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for seq := range h.settled {
		if _, ok := h.inf[seq]; ok {
			return true
		}
	}
	return false
}

// wrote updates the holder's view after a fence write landed.
func (h *fenceHold) wrote(set map[int64]time.Time, removed []int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, seq := range removed {
		delete(h.inf, seq)
		delete(h.settled, seq)
		delete(h.looked, seq)
	}
	for seq, lx := range set {
		h.inf[seq] = lx
		delete(h.settled, seq)
		delete(h.looked, seq)
	}
}

// expired lists at most max entries whose lease has ended by now and that
// the holder has not read yet, oldest lease first (then seq): a big map is
// read a bounded slice per claim, never all at once.
func (h *fenceHold) expired(now time.Time, max int) []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int64
	for seq, lx := range h.inf {
		if !lx.After(now) && !h.settled[seq] && !h.looked[seq] {
			out = append(out, seq)
		}
	}
	byLease(out, h.inf)
	if len(out) > max {
		out = out[:max]
	}
	return out
}

// byLease sorts seqs by their entry's lease expiry, then seq.
func byLease(seqs []int64, inf map[int64]time.Time) {
	sort.Slice(seqs, func(i, j int) bool {
		a, b := inf[seqs[i]], inf[seqs[j]]
		if !a.Equal(b) {
			return a.Before(b)
		}
		return seqs[i] < seqs[j]
	})
}

// Bounds on the work one claim does on the in-flight map (design.md
// §3.3: a map of thousands of expired entries, left by a custom driver, must
// neither fail a claim nor make one unbounded).
const (
	// maxInflightRead is how many expired entries one claim reads: one
	// BatchGetItem request of 100 keys.
	maxInflightRead = 100
	// maxInflightRounds bounds the BatchGetItem rounds of that read;
	// keys still unprocessed are read by a later claim.
	maxInflightRounds = 3
	// maxFenceRemoves bounds the entries one fence write removes; the
	// rest go with the holder's next write.
	maxFenceRemoves = 100
	// maxFenceExpr keeps a fence write's update expression under
	// DynamoDB's 4 KB limit on an expression string, with margin.
	maxFenceExpr = 3800
)

// leave records an expired entry the holder read and must leave alone, so
// that its later claims do not read it again.
func (h *fenceHold) leave(seq int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.looked[seq] = true
}

// inflightCandidates reads, with one consistent BatchGetItem (the one a
// claim uses for reclaim candidates), the rows of the map's expired entries
// and sorts them out:
//   - gone or ended: the entry goes (settled);
//   - ADMITTED, or EXECUTING back in the due index: the entry stays (a
//     claim's action update may still land, ADR 0016) and the due index
//     shows the row; not read again by this hold;
//   - EXECUTING out of due with its lease renewed: the entry gets the new
//     lease (renew);
//   - EXECUTING out of due with its lease over, of a kind this build
//     decodes and may claim: a reclaim candidate, due at its lease expiry
//     (design.md §3); live and fetched are filled as prefetch does;
//   - anything else (a kind this build does not decode, out of attempts, an
//     at-most-once action whose write started): left alone for the reaper
//     or another build, and not read again by this hold.
func (e *Engine) inflightCandidates(ctx context.Context, r *claimRun) ([]candidate, error) {
	h, now := r.h, r.now
	seqs := h.expired(now, maxInflightRead)
	if len(seqs) == 0 {
		return nil, nil
	}
	rows := map[int64]map[string]types.AttributeValue{}
	keys := make([]map[string]types.AttributeValue, 0, len(seqs))
	for _, s := range seqs {
		keys = append(keys, actionKey(h.p, s))
	}
	keys, err := e.readRows(ctx, rowsRead{keys: keys, maxRounds: maxInflightRounds}, func(seq int64, it map[string]types.AttributeValue) {
		if a, ok := decodeAction(it); ok {
			rows[a.Seq] = it
		}
	})
	if err != nil {
		return nil, fmt.Errorf("error reading in-flight rows of partition %d: %w", h.p, err)
	}
	// Keys still unprocessed (throttling) are not judged: a missing row
	// would read as gone. A later claim reads them again.
	unread := map[int64]bool{}
	for _, k := range keys {
		if sk, ok := k[attrSK].(*types.AttributeValueMemberS); ok {
			if seq, ok := seqFromActionSK(sk.Value); ok {
				unread[seq] = true
			}
		}
	}
	var out []candidate
	for _, seq := range seqs {
		if unread[seq] {
			continue
		}
		if c, ok := e.inflightRow(r, seq, rows[seq]); ok {
			// A candidate not taken by this claim (limit, blocked lane,
			// refused) is read again by the next one.
			out = append(out, c)
		}
	}
	return out, nil
}

// inflightRow sorts out one expired in-flight entry by its row (nil: gone),
// as inflightCandidates says; ok when it is a reclaim candidate.
func (e *Engine) inflightRow(r *claimRun, seq int64, it map[string]types.AttributeValue) (candidate, bool) {
	h, now := r.h, r.now
	if State(getS(it, attrState)) == StateEXECUTING && !has(it, attrDuePK) {
		r.leaseOf[seq] = getMs(it, attrLease)
	}
	if it == nil || expiredByTTL(it, now) || State(getS(it, attrState)).Ended() {
		// Gone or ended: no claim can take it any more. Not marked
		// fetched: as a lane predecessor it is read again by prefetch,
		// which also walks past one that ended out of order.
		h.settle(seq)
		return candidate{}, false
	}
	if State(getS(it, attrState)) != StateEXECUTING || has(it, attrDuePK) {
		// ADMITTED (in due) or back in due: the entry may be a claim's whose
		// fence update landed and whose action update has not yet (ADR
		// 0016: its claimer paused or died in between); that update may
		// still land, so the entry stays until a claim of the row lands
		// and its holder sees the action settle (or the row ends). A stale
		// entry only makes this hold skip it.
		h.leave(seq)
		return candidate{}, false
	}
	r.fetched[seq], r.live[seq] = true, true
	a, _ := decodeAction(it)
	a.Payload = nil
	if a.LeaseExpiresAt.After(now) {
		r.renew[seq] = a.LeaseExpiresAt
		return candidate{}, false
	}
	ad, ok := e.reg.Decodes(a.Kind, a.Variant)
	if !ok {
		h.leave(seq) // rolling upgrade: not ours to touch
		return candidate{}, false
	}
	c := candidate{a: a, class: ad.Spec().Class, due: a.LeaseExpiresAt}
	wrote := !a.WriteStartedAt.IsZero()
	expired := !a.ExpiresAt.IsZero() && !a.ExpiresAt.After(now)
	if !claimable(c, now) || (c.class == AtMostOnce && wrote) || (!wrote && expired) {
		h.leave(seq) // the reaper ends it
		return candidate{}, false
	}
	return c, true
}

// mergeCandidates orders the due index's candidates and the fence map's
// reclaim candidates by (due time, seq), design.md §11 (invariant 5); a row both name
// (a lagging index) is taken from the map, whose read is consistent.
func mergeCandidates(due, inflight []candidate) []candidate {
	if len(inflight) == 0 {
		return due
	}
	in := map[int64]bool{}
	for _, c := range inflight {
		in[c.a.Seq] = true
	}
	out := append([]candidate(nil), inflight...)
	for _, c := range due {
		if !in[c.a.Seq] {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].due.Equal(out[j].due) {
			return out[i].due.Before(out[j].due)
		}
		return out[i].a.Seq < out[j].a.Seq
	})
	return out
}

// maxReapInflight bounds the in-flight rows one reaper run reads per
// partition: ten BatchGetItem rounds of 100 keys.
const maxReapInflight = 1000

// inflightRows reads the rows a partition's fence map names that are
// EXECUTING and out of the due index: the reaper's view of the actions a
// claim took out of due. The reads are eventually consistent (the reaper
// reads every row it ends again, consistently). It reads at most
// maxReapInflight entries, oldest lease first (the expired ones, which are
// what the reaper ends, come first), and returns how many entries it left
// unread for a later run: nothing is dropped silently.
func (e *Engine) inflightRows(ctx context.Context, p int) (acts []Action, entries, unread int, err error) {
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: e.table(), Key: key(partitionPK(p), skFence),
		ProjectionExpression: aws.String("#inf"), ExpressionAttributeNames: map[string]string{"#inf": attrInflight},
	})
	if err != nil {
		return nil, 0, 0, fmt.Errorf("error reading claim fence: %w", err)
	}
	inf := decodeInflight(out.Item)
	seqs := make([]int64, 0, len(inf))
	for seq := range inf {
		seqs = append(seqs, seq)
	}
	byLease(seqs, inf)
	if len(seqs) > maxReapInflight {
		unread, seqs = len(seqs)-maxReapInflight, seqs[:maxReapInflight]
	}
	rows := map[int64]map[string]types.AttributeValue{}
	left, err := e.batchRead(ctx, p, seqs, rows)
	if err != nil {
		return nil, 0, 0, err
	}
	unread += left
	now := e.clk.Now()
	for _, seq := range seqs {
		it := rows[seq]
		if it == nil || expiredByTTL(it, now) || State(getS(it, attrState)) != StateEXECUTING || has(it, attrDuePK) {
			continue
		}
		a, _ := decodeAction(it)
		a.Payload = nil
		acts = append(acts, a)
	}
	return acts, len(inf), unread, nil
}
