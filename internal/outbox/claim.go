package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// FenceTake takes the claim fence of a partition for owner until the given
// time: claim_version rises by one and is returned. It is refused (with
// ErrFenceRefused) while another owner's lease on the fence runs.
func (e *Engine) FenceTake(ctx context.Context, p int, owner string, until time.Time) (int64, error) {
	h, err := e.fenceTake(ctx, p, owner, until)
	if err != nil {
		return 0, err
	}
	return h.version, nil
}

// FenceRelease ends owner's lease on a partition's fence (only if its
// version is still the newest), so the next drainer need not wait.
func (e *Engine) FenceRelease(ctx context.Context, p int, owner string, version int64) error {
	return e.fenceRelease(ctx, newFenceHold(p, owner, version, nil))
}

// candidate is a row the due index proposed.
type candidate struct {
	a     Action
	class DeliveryClass
	due   time.Time // when it is due: next attempt (ADMITTED) or lease expiry (EXECUTING)
}

// ClaimParams describes one claim of a partition.
type ClaimParams struct {
	Owner   string // the claimer; every later write of the claim names it
	Version int64  // the claim fence version the claimer holds
	Limit   int    // actions at most
	OnlyID  string // claim only this action (RunNow)

	hold *fenceHold // the drainer's hold of the fence; nil: read the fence row
}

// ClaimResult is what a claim took.
type ClaimResult struct {
	Groups    [][]Action // claimed actions; each group is one lane's run, in lane order
	Claimed   int
	Conflicts int  // candidates refused by their write's condition or a conflict
	Short     bool // fewer than proposed could be claimed
}

// dueCandidates reads due rows of a partition from the due index, oldest
// first, keeping those this build decodes and may claim now.
func (e *Engine) dueCandidates(ctx context.Context, p int, now time.Time, want int) ([]candidate, error) {
	var out []candidate
	q := dueQuery{partition: p, before: now.Add(time.Millisecond), maxPages: 20,
		pageSize: func(page int) int { return pageLimit(page, want) }}
	err := e.eachDuePage(ctx, q, func(rows []dueRow) bool {
		for _, r := range rows {
			ad, ok := e.reg.Decodes(r.a.Kind, r.a.Variant)
			if !ok {
				continue // rolling upgrade: not ours to touch
			}
			c := candidate{a: r.a, class: ad.Spec().Class, due: r.due}
			if claimable(c, now) {
				out = append(out, c)
			}
		}
		return len(out) < 2*want
	})
	if err != nil {
		return nil, err
	}
	return out, nil
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
		// The due index does not carry the write fence (ADR 0002): whether
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
// group heads (outside the batch) and the reclaim candidates (EXECUTING, lease
// over), skipping rows in seen. It adds to live the predecessors still live
// (their lanes are blocked) and to skip the reclaim candidates that must not
// be taken: an at-most-once action whose
// write started, or one that expired before any write. Leaving them out
// before the transaction spares a refused transaction.
func (e *Engine) prefetch(ctx context.Context, p int, groups [][]candidate, seen, live, skip map[int64]bool) error {
	var keys []map[string]types.AttributeValue
	reclaim := map[int64]candidate{}
	preds := map[int64]bool{}       // lane predecessors of group heads
	endedPreds := map[int64]int64{} // ended predecessor -> its own predecessor
	for _, g := range groups {
		if prev := g[0].a.PrevSeq; prev != 0 && !seen[prev] {
			seen[prev] = true
			preds[prev] = true
			keys = append(keys, actionKey(p, prev))
		}
		for _, c := range g {
			if c.a.State == StateEXECUTING && !seen[c.a.Seq] {
				seen[c.a.Seq] = true
				reclaim[c.a.Seq] = c
				keys = append(keys, actionKey(p, c.a.Seq))
			}
		}
	}
	now := e.clk.Now()
	for len(keys) > 0 {
		n := min(len(keys), 100)
		out, err := e.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{e.cfg.Table: {
				Keys: keys[:n], ConsistentRead: aws.Bool(true),
				ProjectionExpression:     aws.String("sk, #st, #ttl, #wsa, #xa, #prev"),
				ExpressionAttributeNames: map[string]string{"#st": attrState, "#ttl": attrTTL, "#wsa": attrWrite, "#xa": attrExpires, "#prev": attrPrev},
			}},
		})
		if err != nil {
			return fmt.Errorf("error reading lane predecessors of partition %d: %w", p, err)
		}
		for _, it := range out.Responses[e.cfg.Table] {
			var seq int64
			fmt.Sscanf(getS(it, attrSK), "A#%d", &seq)
			if c, ok := reclaim[seq]; ok {
				wrote := has(it, attrWrite)
				expired := has(it, attrExpires) && !getMs(it, attrExpires).After(now)
				if (c.class == AtMostOnce && wrote) || (!wrote && expired) {
					skip[seq] = true
				}
			}
			if st := State(getS(it, attrState)); !st.Ended() && !expiredByTTL(it, now) {
				live[seq] = true
			} else if pv := getN(it, attrPrev); preds[seq] && pv != 0 {
				endedPreds[seq] = pv
			}
		}
		keys = keys[n:]
		if un, ok := out.UnprocessedKeys[e.cfg.Table]; ok && len(un.Keys) > 0 {
			keys = append(keys, un.Keys...)
		}
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

var endedStates = []State{StateDONE, StateUNCERTAIN, StateFAILED, StateCANCELLED}

// claimUpdate builds the conditional update that claims one candidate.
// With fence, the claim also sets the write fence (ADR 0008): `wsa` is not
// projected into the due index, so this costs no index unit.
func (e *Engine) claimUpdate(c candidate, owner string, now, lx time.Time, anyDue, fence bool) types.TransactWriteItem {
	a := c.a
	due := "#nat <= :cnow"
	if anyDue {
		due = "attribute_exists(#nat)"
	}
	// The states a claim may take an action from are fixed in the condition,
	// whatever the index proposed: ADMITTED and due, or EXECUTING with its
	// lease over.
	cd := cond{
		expr: "#ep = :cep AND #att = :catt AND #att < #max AND (" +
			"(#st = :cadm AND " + due + " AND (attribute_not_exists(#xa) OR #xa > :cnow)) OR " +
			"(#st = :exec AND #lx <= :cnow AND (attribute_not_exists(#xa) OR #xa > :cnow OR attribute_exists(#wsa))))",
		names: map[string]string{
			"#ep": attrEpoch, "#att": attrAttempt, "#max": attrMax, "#st": attrState, "#nat": attrNext,
			"#xa": attrExpires, "#lx": attrLease, "#wsa": attrWrite,
		},
		vals: map[string]types.AttributeValue{
			":cep": avN(a.Epoch), ":catt": avN(int64(a.Attempt)), ":cadm": avS(string(StateADMITTED)), ":cnow": avMs(now),
		},
	}
	if c.class == AtMostOnce {
		// Once its write started, an at-most-once action is never taken again.
		cd = cd.and(cond{expr: "attribute_not_exists(#wsa)", names: map[string]string{"#wsa": attrWrite}})
	}
	cd = cd.and(cond{
		names: map[string]string{"#own": attrOwner},
		vals: map[string]types.AttributeValue{
			":exec": avS(string(StateEXECUTING)), ":nep": avN(a.Epoch + 1), ":natt": avN(int64(a.Attempt + 1)),
			":lx": avMs(lx), ":own": avS(owner),
		},
	})
	cd.names["#lx"] = attrLease
	cd.names["#dpk"], cd.names["#dsk"] = attrDuePK, attrDueSK
	// The claim takes the row out of the due index (ADR 0009): one index
	// delete, and the end writes nothing to the index. The fence item of the
	// same transaction records it in the partition's in-flight map.
	upd := "SET #st = :exec, #ep = :nep, #att = :natt, #lx = :lx, #own = :own"
	if fence {
		upd += ", #wsa = :cnow"
	}
	upd += " REMOVE #dpk, #dsk"
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 e.table(),
		Key:                       actionKey(a.Partition, a.Seq),
		UpdateExpression:          aws.String(upd),
		ConditionExpression:       aws.String(cd.expr),
		ExpressionAttributeNames:  cd.names,
		ExpressionAttributeValues: cd.vals,
	}}
}

// predecessorCheck builds the check that a lane predecessor has ended or is
// gone, on the base table.
func (e *Engine) predecessorCheck(p int, prev int64) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                e.table(),
		Key:                      actionKey(p, prev),
		ConditionExpression:      aws.String("attribute_not_exists(pk) OR #st IN (:d, :u, :f, :c)"),
		ExpressionAttributeNames: map[string]string{"#st": attrState},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":d": avS(string(endedStates[0])), ":u": avS(string(endedStates[1])),
			":f": avS(string(endedStates[2])), ":c": avS(string(endedStates[3])),
		},
	}}
}

// maxClaimWindow bounds how many due candidates one claim reads when the
// front of the due index is all blocked lanes.
const maxClaimWindow = 512

// Claim claims the oldest due claimable actions of a partition, by (due
// time, seq), in one TransactWriteItems that also checks the claim fence
// version and each lane group head's predecessor. Candidates refused by
// their condition (and their lane successors) are dropped and the rest tried
// again: a short batch, not a failure. A stale fence gives ErrFenceRefused.
// The claim of an idempotent-receiver action at the head of its group also
// sets its write fence (ADR 0008): from then on it counts as started (the
// returned Action's WriteStartedAt is set), and a caller that does not run
// it should finish it with a Retry (AttemptFinish) rather than let its lease
// run out.
func (e *Engine) Claim(ctx context.Context, p int, cp ClaimParams) (*ClaimResult, error) {
	now := e.clk.Now().UTC()
	lx := now.Add(e.cfg.Lease)
	limit := cp.Limit
	if limit <= 0 {
		limit = e.cfg.BatchSize
	}
	h := cp.hold
	if h == nil {
		var err error
		if h, err = e.readFenceHold(ctx, p, cp.Owner, cp.Version); err != nil {
			return nil, err
		}
	}
	var cands []candidate
	if cp.OnlyID != "" {
		it, err := e.getActionItem(ctx, cp.OnlyID)
		if err != nil {
			return nil, err
		}
		a, _ := decodeAction(it)
		a.Payload = nil
		if ad, ok := e.reg.Decodes(a.Kind, a.Variant); ok {
			if c := (candidate{a: a, class: ad.Spec().Class}); a.Partition == p && claimable(c, now) {
				cands = append(cands, c)
			}
		}
	}
	res := &ClaimResult{}
	// Select lane groups, learn which are blocked or must not be reclaimed,
	// and select again without them, so blocked lanes never crowd out
	// claimable work. When every candidate read is blocked, read a wider
	// window of the due index: blocked lanes at its front must not starve
	// the claimable rows behind them.
	var groups [][]candidate
	fetched, live, skip := map[int64]bool{}, map[int64]bool{}, map[int64]bool{}
	// Actions a claim took out of due whose lease is over are reclaim
	// candidates from the fence's in-flight map (ADR 0009).
	renew := map[int64]time.Time{}
	var reclaims []candidate
	if cp.OnlyID == "" {
		var err error
		if reclaims, err = e.inflightCandidates(ctx, h, now, fetched, live, renew); err != nil {
			return nil, err
		}
	}
	proposed := 0
	for window := limit; ; window *= 8 {
		read := 0
		if cp.OnlyID == "" {
			var err error
			cands, err = e.dueCandidates(ctx, p, now, window)
			if err != nil {
				return nil, err
			}
			read = len(cands)
			cands = mergeCandidates(cands, reclaims)
		}
		// Each round drops at least one candidate or stops.
		for iter, n := 0, len(cands); iter <= n; iter++ {
			groups = selectGroups(cands, limit)
			if len(groups) == 0 {
				break
			}
			if err := e.prefetch(ctx, p, groups, fetched, live, skip); err != nil {
				return nil, err
			}
			bad := map[int64]bool{}
			kept := groups[:0]
			for _, g := range groups {
				if live[g[0].a.PrevSeq] {
					for _, c := range g {
						bad[c.a.Seq] = true // its lane is blocked
					}
					continue
				}
				for i, c := range g {
					if skip[c.a.Seq] {
						for _, d := range g[i:] {
							bad[d.a.Seq] = true // it and the lane behind it stay
						}
						g = g[:i]
						break
					}
				}
				if len(g) > 0 {
					kept = append(kept, g)
				}
			}
			groups = kept
			if len(bad) == 0 {
				break
			}
			rest := cands[:0:0]
			for _, c := range cands {
				if !bad[c.a.Seq] {
					rest = append(rest, c)
				}
			}
			cands = rest
		}
		if len(groups) > 0 || cp.OnlyID != "" || read < 2*window || window >= maxClaimWindow {
			break
		}
	}
	for _, g := range groups {
		proposed += len(g)
	}
	wroteFence := false
	for round := 0; len(groups) > 0 && round < 6; round++ {
		// The fence item checks the version as before and, in the same
		// write, records the actions claimed and forgets those seen settled.
		// Both are bounded (fitFence) so the write stays within
		// DynamoDB's expression limits however big the map.
		claimed, except := map[int64]time.Time{}, map[int64]time.Time{}
		for seq, t := range renew {
			except[seq] = t
		}
		for _, g := range groups {
			for _, c := range g {
				claimed[c.a.Seq], except[c.a.Seq] = lx, lx
			}
		}
		set, rm := fitFence(h, claimed, renew, h.removable(except))
		items := []types.TransactWriteItem{e.fenceItem(h, set, rm)}
		type pos struct{ g, m int }
		at := map[int]pos{}
		checked := map[int64]int{} // predecessor seq -> its check's index
		for gi, g := range groups {
			if prev := g[0].a.PrevSeq; prev != 0 {
				// A transaction may name an item once: groups with the same
				// predecessor (a lane forked by erasure) share its check.
				if _, dup := checked[prev]; !dup {
					checked[prev] = len(items)
					at[len(items)] = pos{gi, -1}
					items = append(items, e.predecessorCheck(p, prev))
				}
			}
			for mi, c := range g {
				at[len(items)] = pos{gi, mi}
				// Run now takes an admitted action whatever its due time.
				items = append(items, e.claimUpdate(c, cp.Owner, now, lx, cp.OnlyID != "", claimFences(c, mi)))
			}
		}
		tok := e.token()
		err := e.transact(ctx, items, tok)
		if err == nil {
			wroteFence = true
			h.wrote(set, rm)
			for _, g := range groups {
				run := make([]Action, len(g))
				for i, c := range g {
					a := c.a
					a.State, a.Epoch, a.Attempt, a.LeaseExpiresAt, a.Owner = StateEXECUTING, a.Epoch+1, a.Attempt+1, lx, cp.Owner
					markClaimFence(&a, c, i, now)
					run[i] = a
				}
				res.Groups = append(res.Groups, run)
				res.Claimed += len(run)
			}
			break
		}
		reasons, ok := cancelReasons(err)
		if !ok {
			if isAmbiguous(err) {
				return e.claimReadBack(ctx, h, groups, cp.Owner, now, res, proposed)
			}
			return nil, fmt.Errorf("error claiming partition %d: %w", p, err)
		}
		if len(reasons) > 0 && reasons[0] == "ConditionalCheckFailed" {
			return nil, fmt.Errorf("partition %d version %d: %w", p, cp.Version, ErrFenceRefused)
		}
		// Drop refused candidates and everything behind them in their lane.
		cut := map[int]int{} // group -> first member to drop (-1: whole group)
		for i, code := range reasons {
			if code == "" || code == "None" || i == 0 {
				continue
			}
			ps, ok := at[i]
			if !ok {
				continue
			}
			res.Conflicts++
			if old, seen := cut[ps.g]; !seen || ps.m < old {
				cut[ps.g] = ps.m
			}
		}
		if len(cut) == 0 {
			continue // only conflicts without a culprit: try again
		}
		kept := groups[:0]
		for gi, g := range groups {
			m, dropped := cut[gi]
			switch {
			case !dropped:
				kept = append(kept, g)
			case m > 0:
				kept = append(kept, g[:m])
			}
		}
		groups = kept
	}
	if !wroteFence && cp.hold == nil && h.pending(renew) {
		// Nothing claimed by a caller of the exported Claim: the entries
		// it read settled or renewed still go, so that a map left big (a
		// custom driver's) shrinks claim by claim even while the partition
		// has nothing to take. A held fence's release removes them.
		if err := e.inflightWrite(ctx, h, renew); err != nil {
			return nil, err
		}
	}
	res.Short = res.Claimed < proposed
	e.obs.ClaimFinished(p, res.Claimed, res.Conflicts, res.Short)
	return res, nil
}

// claimReadBack settles an ambiguous claim: the transaction was retried with
// its token and still has no answer, so read each candidate back and keep
// those that carry our epoch and owner.
func (e *Engine) claimReadBack(ctx context.Context, h *fenceHold, groups [][]candidate, owner string, now time.Time, res *ClaimResult, proposed int) (*ClaimResult, error) {
	for _, g := range groups {
		var run []Action
		for i, c := range g {
			it, err := e.getActionItem(ctx, c.a.ID)
			if errors.Is(err, ErrNotFound) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("error reading back claim of %s: %w", c.a.ID, err)
			}
			a, _ := decodeAction(it)
			if a.State != StateEXECUTING || a.Epoch != c.a.Epoch+1 || a.Owner != owner {
				break
			}
			a.Payload = nil
			markClaimFence(&a, c, i, now)
			run = append(run, a)
		}
		if len(run) > 0 {
			res.Groups = append(res.Groups, run)
			res.Claimed += len(run)
			// The transaction landed: its fence item recorded these. Its
			// removals may or may not have landed; they are sent again.
			set := map[int64]time.Time{}
			for _, a := range run {
				set[a.Seq] = a.LeaseExpiresAt
			}
			h.wrote(set, nil)
		}
	}
	res.Short = res.Claimed < proposed
	return res, nil
}

// claimFences reports whether the claim of the mi-th member of a lane group
// sets the write fence itself (ADR 0008): an idempotent receiver at the head
// of its group, where the claim's transaction proves (with the predecessor
// check) that every earlier member of its lane has ended, so the action may
// be sent from its claim on. A member behind a head waits for the head to
// end and keeps its own fence write: a fence set at its claim would tell the
// reaper it started in lane order when it may not have.
func claimFences(c candidate, mi int) bool {
	return mi == 0 && c.class == IdempotentReceiver
}

// markClaimFence records on a claimed action what its claim wrote: the
// fence at the claim's time (as the table stores it, in milliseconds) for a
// claim-fenced head, and whether an earlier claim's attempt may have
// written (the action was taken from EXECUTING).
func markClaimFence(a *Action, c candidate, mi int, now time.Time) {
	a.reclaimed = c.a.State == StateEXECUTING
	if claimFences(c, mi) {
		a.claimFenced = true
		a.WriteStartedAt = time.UnixMilli(now.UnixMilli()).UTC()
	}
}
