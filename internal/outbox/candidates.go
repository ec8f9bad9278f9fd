package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Claim candidates (design.md §5 steps 2 and 3): the rows the due index and
// the in-flight map propose, the lane groups chosen from them, and what
// blocks a group (a live predecessor) or a member (a reclaim that must not
// be taken).

// candidate is a row the due index proposed.
type candidate struct {
	a     Action
	class DeliveryClass
	due   time.Time // when it is due: next attempt (ADMITTED) or lease expiry (EXECUTING)
}

// dueCandidates reads due rows of a partition from the due index, oldest
// first (after the sort key after, when set), keeping those this build
// decodes and may claim now. marks are every row read, in index order.
func (e *Engine) dueCandidates(ctx context.Context, p int, now time.Time, want int, after string) ([]candidate, []dueMark, error) {
	var out []candidate
	var marks []dueMark
	q := dueQuery{partition: p, before: now.Add(time.Millisecond), after: after, maxPages: 20,
		pageSize: func(page int) int { return pageLimit(page, want) }}
	err := e.eachDuePage(ctx, q, func(rows []dueRow) bool {
		for _, r := range rows {
			m := dueMark{seq: r.a.Seq, due: r.due, sk: timeSK(r.due, r.a.Seq)}
			if ad, ok := e.reg.Decodes(r.a.Kind, r.a.Variant); ok { // else rolling upgrade: not ours to touch
				c := candidate{a: r.a, class: ad.Spec().Class, due: r.due}
				if claimable(c, now) {
					out = append(out, c)
					m.kept = true
				}
			}
			marks = append(marks, m)
		}
		return len(out) < 2*want
	})
	if err != nil {
		return nil, nil, err
	}
	return out, marks, nil
}

// pageLimit sizes the due index pages a claim reads: the first page fits a
// batch; later pages, read only when rows that cannot be claimed now (blocked
// lanes, rows of unknown kinds) fill the front of the index, are larger so
// that such rows cannot starve the partition (up to 20 pages of 1,000 rows,
// about 20 read units per page).
func pageLimit(page, want int) int {
	if page == 0 {
		return max(2*want, 32)
	}
	return 1000
}

// claimable reports whether a proposed row may be claimed now (the write's
// condition checks it again on the base table).
func claimable(c candidate, now time.Time) bool {
	a := c.a
	if a.Attempt >= a.MaxAttempts {
		return false // the reaper ends it
	}
	switch a.State {
	case StateADMITTED:
		if !a.ExpiresAt.IsZero() && !a.ExpiresAt.After(now) {
			return false // the reaper cancels it
		}
		return true
	case StateEXECUTING:
		if a.LeaseExpiresAt.After(now) {
			return false
		}
		// The due index does not carry the write fence (design.md §3.8): whether
		// an expired claim wrote is read from the base table (prefetch).
		return true
	}
	return false
}

// selectGroups orders candidates into lane groups: each group starts at a
// candidate whose predecessor is not a candidate and continues along the
// lane chain. Groups come in order of their oldest member; the total is
// capped at limit actions and the transaction's item limit.
func selectGroups(cands []candidate, limit int) [][]candidate {
	bySeq := map[int64]int{}
	for i, c := range cands {
		bySeq[c.a.Seq] = i
	}
	next := map[int64]int{} // predecessor seq -> candidate index
	for i, c := range cands {
		if c.a.PrevSeq != 0 {
			if _, in := bySeq[c.a.PrevSeq]; in {
				next[c.a.PrevSeq] = i
			}
		}
	}
	root := func(i int) int {
		for n := 0; n < len(cands); n++ {
			j, in := bySeq[cands[i].a.PrevSeq]
			if cands[i].a.PrevSeq == 0 || !in {
				return i
			}
			i = j
		}
		return i
	}
	var groups [][]candidate
	taken := map[int]bool{}
	items, total := 1, 0 // the fence check
	for i := range cands {
		r := root(i)
		if taken[r] {
			continue
		}
		taken[r] = true
		var g []candidate
		need := 0
		if cands[r].a.PrevSeq != 0 {
			need = 1 // the predecessor check
		}
		for j, ok := r, true; ok && total < limit && items+need+1 <= MaxTransactItems; j, ok = next[cands[j].a.Seq] {
			g = append(g, cands[j])
			total++
			items += need + 1
			need = 0
		}
		if len(g) > 0 {
			groups = append(groups, g)
		}
		if total >= limit {
			break
		}
	}
	return groups
}

// prefetch reads, with one consistent BatchGetItem, the predecessors of
// group heads (outside the batch) and the reclaim candidates (EXECUTING,
// lease over), skipping the rows the claim already read (r.fetched). It
// records in r.live the predecessors still live (their lanes are blocked)
// and in r.skip the reclaim candidates that must not be taken: an
// at-most-once action whose write started, or one that expired before any
// write. Leaving them out before the transaction spares a refused
// transaction.
func (e *Engine) prefetch(ctx context.Context, r *claimRun, groups [][]candidate) error {
	p, live, skip := r.p, r.live, r.skip
	pf := prefetchKeys(p, groups, r.fetched)
	endedPreds := map[int64]int64{} // ended predecessor -> its own predecessor
	now := e.clk.Now()
	_, err := e.readRows(ctx, rowsRead{
		keys:       pf.keys,
		projection: "sk, #st, #ttl, #wsa, #xa, #prev, #lx",
		names:      map[string]string{"#st": attrState, "#ttl": attrTTL, "#wsa": attrWrite, "#xa": attrExpires, "#prev": attrPrev, "#lx": attrLease},
	}, func(seq int64, it map[string]types.AttributeValue) {
		if st := State(getS(it, attrState)); st == StateEXECUTING && getMs(it, attrLease).After(now) {
			r.leaseOf[seq] = getMs(it, attrLease)
		}
		if c, ok := pf.reclaim[seq]; ok && !reclaimable(c, it, now) {
			skip[seq] = true
		}
		if st := State(getS(it, attrState)); !st.Ended() && !expiredByTTL(it, now) {
			live[seq] = true
		} else if pv := getN(it, attrPrev); pf.preds[seq] && pv != 0 {
			endedPreds[seq] = pv
		}
	})
	if err != nil {
		return fmt.Errorf("error reading lane predecessors of partition %d: %w", p, err)
	}
	// An ended predecessor may have ended out of order: look further back.
	more, err := e.ancestorsLive(ctx, p, endedPreds)
	if err != nil {
		return err
	}
	for seq := range more {
		live[seq] = true
	}
	return nil
}

// prefetchRows are the rows a prefetch reads: the predecessors of group
// heads and the reclaim candidates, each once.
type prefetchRows struct {
	keys    []map[string]types.AttributeValue
	reclaim map[int64]candidate // reclaim candidates (EXECUTING, lease over)
	preds   map[int64]bool      // lane predecessors of group heads
}

// prefetchKeys lists the rows prefetch reads, skipping (and then adding to)
// seen.
func prefetchKeys(p int, groups [][]candidate, seen map[int64]bool) prefetchRows {
	pf := prefetchRows{reclaim: map[int64]candidate{}, preds: map[int64]bool{}}
	for _, g := range groups {
		if prev := g[0].a.PrevSeq; prev != 0 && !seen[prev] {
			seen[prev] = true
			pf.preds[prev] = true
			pf.keys = append(pf.keys, actionKey(p, prev))
		}
		for _, c := range g {
			if c.a.State == StateEXECUTING && !seen[c.a.Seq] {
				seen[c.a.Seq] = true
				pf.reclaim[c.a.Seq] = c
				pf.keys = append(pf.keys, actionKey(p, c.a.Seq))
			}
		}
	}
	return pf
}

// reclaimable reports whether a reclaim candidate, as its row now reads, may
// be taken: not an at-most-once action whose write started, nor one that
// expired before any write.
func reclaimable(c candidate, it map[string]types.AttributeValue, now time.Time) bool {
	wrote := has(it, attrWrite)
	expired := has(it, attrExpires) && !getMs(it, attrExpires).After(now)
	return !(c.class == AtMostOnce && wrote) && !(!wrote && expired)
}

// onlyCandidate is the one candidate of a RunNow: the named action, when it
// is in this partition, of a kind this build decodes, and claimable now.
func (e *Engine) onlyCandidate(ctx context.Context, r *claimRun) ([]candidate, error) {
	it, err := e.getActionItem(ctx, r.cp.OnlyID)
	if err != nil {
		return nil, err
	}
	a, _ := decodeAction(it)
	a.Payload = nil
	ad, ok := e.reg.Decodes(a.Kind, a.Variant)
	if !ok {
		return nil, nil
	}
	if c := (candidate{a: a, class: ad.Spec().Class}); a.Partition == r.p && claimable(c, r.now) {
		return []candidate{c}, nil
	}
	return nil, nil
}

// unblockedGroups selects lane groups from cands, reads what it must know
// of them (prefetch), and drops the blocked ones and the members that must
// not be taken, selecting again until nothing more is dropped. Each round
// drops at least one candidate or stops.
func (e *Engine) unblockedGroups(ctx context.Context, r *claimRun, cands []candidate) ([][]candidate, error) {
	var groups [][]candidate
	for iter, n := 0, len(cands); iter <= n; iter++ {
		groups = selectGroups(cands, r.limit)
		if len(groups) == 0 {
			return groups, nil
		}
		if err := e.prefetch(ctx, r, groups); err != nil {
			return nil, err
		}
		var bad map[int64]int64
		groups, bad = dropBlocked(groups, r.live, r.skip)
		if len(bad) == 0 {
			return groups, nil
		}
		rest := cands[:0:0]
		for _, c := range cands {
			pred, dropped := bad[c.a.Seq]
			if !dropped {
				rest = append(rest, c)
				continue
			}
			if u, ok := r.untilOf(pred); ok {
				r.blockedUntil[c.a.Seq] = u
			}
			// A dropped candidate waits in its lane (blocked, or a reclaim
			// not to be taken now): it is live, so a group that starts
			// behind it is blocked as well, without a read (design.md §5
			// step 3). Blocking is the safe side: a group is claimed only
			// when its head's predecessor was read ended.
			r.fetched[c.a.Seq], r.live[c.a.Seq] = true, true
		}
		cands = rest
	}
	return groups, nil
}

// dropBlocked removes from groups those whose head's predecessor is live
// (the lane is blocked) and, in a group, a member in skip with the members
// behind it (they stay in their lane). bad names every candidate removed,
// with the live predecessor that blocks its group (0: a member not taken).
func dropBlocked(groups [][]candidate, live, skip map[int64]bool) (kept [][]candidate, bad map[int64]int64) {
	bad = map[int64]int64{}
	kept = groups[:0]
	for _, g := range groups {
		if live[g[0].a.PrevSeq] {
			for _, c := range g {
				bad[c.a.Seq] = g[0].a.PrevSeq
			}
			continue
		}
		for i, c := range g {
			if skip[c.a.Seq] {
				for _, d := range g[i:] {
					bad[d.a.Seq] = 0
				}
				g = g[:i]
				break
			}
		}
		if len(g) > 0 {
			kept = append(kept, g)
		}
	}
	return kept, bad
}
