package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
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
// group heads (outside the batch) and the reclaim candidates (EXECUTING, lease
// over), skipping rows in seen. It adds to live the predecessors still live
// (their lanes are blocked) and to skip the reclaim candidates that must not
// be taken: an at-most-once action whose
// write started, or one that expired before any write. Leaving them out
// before the transaction spares a refused transaction.
func (e *Engine) prefetch(ctx context.Context, p int, groups [][]candidate, seen, live, skip map[int64]bool) error {
	pf := prefetchKeys(p, groups, seen)
	endedPreds := map[int64]int64{} // ended predecessor -> its own predecessor
	now := e.clk.Now()
	_, err := e.readRows(ctx, rowsRead{
		keys:       pf.keys,
		projection: "sk, #st, #ttl, #wsa, #xa, #prev",
		names:      map[string]string{"#st": attrState, "#ttl": attrTTL, "#wsa": attrWrite, "#xa": attrExpires, "#prev": attrPrev},
	}, func(seq int64, it map[string]types.AttributeValue) {
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

var endedStates = []State{StateDONE, StateUNCERTAIN, StateFAILED, StateCANCELLED}

// claimUpdate builds the conditional update that claims one candidate.
// With fence, the claim also sets the write fence (design.md §5): `wsa` is not
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
	// The claim takes the row out of the due index (design.md §3.3): one index
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
// sets its write fence (design.md §5): from then on it counts as started (the
// returned Action's WriteStartedAt is set), and a caller that does not run
// it should finish it with a Retry (AttemptFinish) rather than let its lease
// run out.
func (e *Engine) Claim(ctx context.Context, p int, cp ClaimParams) (*ClaimResult, error) {
	r, err := e.claimStart(ctx, p, cp)
	if err != nil {
		return nil, err
	}
	groups, err := e.claimChoose(ctx, r)
	if err != nil {
		return nil, err
	}
	proposed := 0
	for _, g := range groups {
		proposed += len(g)
	}
	res := &ClaimResult{}
	out, err := e.claimTransact(ctx, r, groups, res)
	if errors.Is(err, errClaimAmbiguous) {
		return e.claimReadBack(ctx, r.h, out.unanswered, cp.Owner, r.now, res, proposed)
	}
	if err != nil {
		return nil, err
	}
	if err := e.claimForgetSettled(ctx, r, out.fenceWritten); err != nil {
		return nil, err
	}
	res.Short = res.Claimed < proposed
	e.obs.ClaimFinished(p, res.Claimed, res.Conflicts, res.Short)
	return res, nil
}

// claimRun is one claim in progress: what it was asked, the time it runs
// at, the fence it holds, and what it learned of the rows it read.
type claimRun struct {
	p     int
	cp    ClaimParams
	now   time.Time // the claim's time (UTC)
	lx    time.Time // the lease it gives
	limit int       // actions at most
	h     *fenceHold

	// fetched: rows already read consistently (predecessors, reclaims);
	// live: predecessors still live (their lanes are blocked); skip: reclaim
	// candidates that must not be taken.
	fetched, live, skip map[int64]bool
	// renew: in-flight entries whose lease was renewed (their new lease);
	// reclaims: in-flight entries whose lease is over (design.md §3.3).
	renew    map[int64]time.Time
	reclaims []candidate
}

// claimStart fixes the claim's time and lease, reads the fence when the
// caller holds none, and reads the in-flight map's reclaim candidates.
func (e *Engine) claimStart(ctx context.Context, p int, cp ClaimParams) (*claimRun, error) {
	now := e.clk.Now().UTC()
	r := &claimRun{
		p: p, cp: cp, now: now, lx: now.Add(e.cfg.Lease), limit: cp.Limit, h: cp.hold,
		fetched: map[int64]bool{}, live: map[int64]bool{}, skip: map[int64]bool{},
		renew: map[int64]time.Time{},
	}
	if r.limit <= 0 {
		r.limit = e.cfg.BatchSize
	}
	if r.h == nil {
		h, err := e.readFenceHold(ctx, p, cp.Owner, cp.Version)
		if err != nil {
			return nil, err
		}
		r.h = h
	}
	if cp.OnlyID == "" {
		var err error
		if r.reclaims, err = e.inflightCandidates(ctx, r.h, now, r.fetched, r.live, r.renew); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// claimChoose reads candidates and chooses the lane groups to claim: it
// selects groups, learns which are blocked or must not be reclaimed, and
// selects again without them, so blocked lanes never crowd out claimable
// work. When every candidate read is blocked, it reads a wider window of
// the due index: blocked lanes at its front must not starve the claimable
// rows behind them.
func (e *Engine) claimChoose(ctx context.Context, r *claimRun) ([][]candidate, error) {
	if r.cp.OnlyID != "" {
		cands, err := e.onlyCandidate(ctx, r)
		if err != nil {
			return nil, err
		}
		return e.unblockedGroups(ctx, r, cands)
	}
	for window := r.limit; ; window *= 8 {
		cands, err := e.dueCandidates(ctx, r.p, r.now, window)
		if err != nil {
			return nil, err
		}
		read := len(cands)
		groups, err := e.unblockedGroups(ctx, r, mergeCandidates(cands, r.reclaims))
		if err != nil {
			return nil, err
		}
		if len(groups) > 0 || read < 2*window || window >= maxClaimWindow {
			return groups, nil
		}
	}
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
		if err := e.prefetch(ctx, r.p, groups, r.fetched, r.live, r.skip); err != nil {
			return nil, err
		}
		var bad map[int64]bool
		groups, bad = dropBlocked(groups, r.live, r.skip)
		if len(bad) == 0 {
			return groups, nil
		}
		rest := cands[:0:0]
		for _, c := range cands {
			if !bad[c.a.Seq] {
				rest = append(rest, c)
			}
		}
		cands = rest
	}
	return groups, nil
}

// dropBlocked removes from groups those whose head's predecessor is live
// (the lane is blocked) and, in a group, a member in skip with the members
// behind it (they stay in their lane). bad names every candidate removed.
func dropBlocked(groups [][]candidate, live, skip map[int64]bool) (kept [][]candidate, bad map[int64]bool) {
	bad = map[int64]bool{}
	kept = groups[:0]
	for _, g := range groups {
		if live[g[0].a.PrevSeq] {
			for _, c := range g {
				bad[c.a.Seq] = true
			}
			continue
		}
		for i, c := range g {
			if skip[c.a.Seq] {
				for _, d := range g[i:] {
					bad[d.a.Seq] = true
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

// errClaimAmbiguous says the claim transaction has no answer even after its
// retries: it may or may not have landed.
var errClaimAmbiguous = errors.New("outbox: claim transaction outcome unknown")

// claimOutcome is how the claim transactions went: fenceWritten when one
// landed (and so its fence item); unanswered, with errClaimAmbiguous, the
// groups of a transaction that may or may not have landed.
type claimOutcome struct {
	fenceWritten bool
	unanswered   [][]candidate
}

// claimTransact claims groups in one transaction (design.md §5 step 4),
// dropping the refused candidates and their lane followers and trying
// again (step 5), up to 6 rounds. It adds what it claimed to res.
func (e *Engine) claimTransact(ctx context.Context, r *claimRun, groups [][]candidate, res *ClaimResult) (claimOutcome, error) {
	for round := 0; len(groups) > 0 && round < 6; round++ {
		tx := e.claimItems(r, groups)
		err := e.transact(ctx, tx.items, e.token())
		if err == nil {
			r.h.wrote(tx.set, tx.rm)
			for _, g := range groups {
				run := claimedRun(r, g)
				res.Groups = append(res.Groups, run)
				res.Claimed += len(run)
			}
			return claimOutcome{fenceWritten: true}, nil
		}
		reasons, ok := cancelReasons(err)
		if !ok {
			if isAmbiguous(err) {
				return claimOutcome{unanswered: groups}, errClaimAmbiguous
			}
			return claimOutcome{}, fmt.Errorf("error claiming partition %d: %w", r.p, err)
		}
		if len(reasons) > 0 && reasons[0] == "ConditionalCheckFailed" {
			return claimOutcome{}, fmt.Errorf("partition %d version %d: %w", r.p, r.cp.Version, ErrFenceRefused)
		}
		groups = dropRefused(groups, tx.at, reasons, res)
	}
	return claimOutcome{}, nil
}

// claimTx is one claim transaction: its items, where each group member sits
// in it, and the in-flight entries its fence item sets and removes.
type claimTx struct {
	items []types.TransactWriteItem
	at    map[int]claimPos
	set   map[int64]time.Time
	rm    []int64
}

// claimPos is a transaction item's group and member (member -1: the
// group's predecessor check).
type claimPos struct{ g, m int }

// claimItems builds the claim transaction of groups: the fence item, which
// checks the version and in the same write records the actions claimed and
// forgets those seen settled (both bounded by fitFence so the write stays
// within DynamoDB's expression limits however big the map); each group
// head's predecessor check; one conditional update per member.
func (e *Engine) claimItems(r *claimRun, groups [][]candidate) claimTx {
	claimed, except := map[int64]time.Time{}, map[int64]time.Time{}
	for seq, t := range r.renew {
		except[seq] = t
	}
	for _, g := range groups {
		for _, c := range g {
			claimed[c.a.Seq], except[c.a.Seq] = r.lx, r.lx
		}
	}
	tx := claimTx{at: map[int]claimPos{}}
	tx.set, tx.rm = fitFence(r.h, claimed, r.renew, r.h.removable(except))
	tx.items = []types.TransactWriteItem{e.fenceItem(r.h, tx.set, tx.rm)}
	checked := map[int64]int{} // predecessor seq -> its check's index
	for gi, g := range groups {
		if prev := g[0].a.PrevSeq; prev != 0 {
			// A transaction may name an item once: groups with the same
			// predecessor (a lane forked by erasure) share its check.
			if _, dup := checked[prev]; !dup {
				checked[prev] = len(tx.items)
				tx.at[len(tx.items)] = claimPos{gi, -1}
				tx.items = append(tx.items, e.predecessorCheck(r.p, prev))
			}
		}
		for mi, c := range g {
			tx.at[len(tx.items)] = claimPos{gi, mi}
			// Run now takes an admitted action whatever its due time.
			tx.items = append(tx.items, e.claimUpdate(c, r.cp.Owner, r.now, r.lx, r.cp.OnlyID != "", claimFences(c, mi)))
		}
	}
	return tx
}

// claimedRun is a claimed group as its actions now are.
func claimedRun(r *claimRun, g []candidate) []Action {
	run := make([]Action, len(g))
	for i, c := range g {
		a := c.a
		a.State, a.Epoch, a.Attempt, a.LeaseExpiresAt, a.Owner = StateEXECUTING, a.Epoch+1, a.Attempt+1, r.lx, r.cp.Owner
		markClaimFence(&a, c, i, r.now)
		run[i] = a
	}
	return run
}

// dropRefused drops from groups the candidates a cancelled claim
// transaction refused, with everything behind them in their lane, and
// counts them as conflicts. Groups come back unchanged when the
// cancellation names no culprit (conflicts only: try again).
func dropRefused(groups [][]candidate, at map[int]claimPos, reasons []string, res *ClaimResult) [][]candidate {
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
		return groups
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
	return kept
}

// claimForgetSettled writes the fence's lone in-flight update when a
// caller of the exported Claim claimed nothing: the entries it read settled
// or renewed still go, so that a map left big (a custom driver's) shrinks
// claim by claim even while the partition has nothing to take. A held
// fence's release removes them.
func (e *Engine) claimForgetSettled(ctx context.Context, r *claimRun, fenceWritten bool) error {
	if fenceWritten || r.cp.hold != nil || !r.h.pending(r.renew) {
		return nil
	}
	return e.inflightWrite(ctx, r.h, r.renew)
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
// sets the write fence itself (design.md §5): an idempotent receiver at the head
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
