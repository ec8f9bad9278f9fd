package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

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

var endedStates = []State{StateDONE, StateUNCERTAIN, StateFAILED, StateCANCELLED}

// claimUpdateParams describe one candidate's claim: the claimer, the claim's
// time and the lease it gives; AnyDue takes an ADMITTED action whatever its
// due time (RunNow); Fence sets the write fence with the claim.
type claimUpdateParams struct {
	Owner      string
	Now, Lease time.Time
	AnyDue     bool
	Fence      bool
}

// claimUpdate builds the conditional update that claims one candidate.
// With fence, the claim also sets the write fence (design.md §5): `wsa` is not
// projected into the due index, so this costs no index unit.
func (e *Engine) claimUpdate(c candidate, cu claimUpdateParams) types.TransactWriteItem {
	a := c.a
	owner, now, lx := cu.Owner, cu.Now, cu.Lease
	due := "#nat <= :cnow"
	if cu.AnyDue {
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
	if cu.Fence {
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
// run out. The claimed actions carry their ids: the due index does not
// project them, so Claim reads the rows once more for them (eventually
// consistent; the drainer's own claim reads the rows anyway, for their
// payloads).
func (e *Engine) Claim(ctx context.Context, p int, cp ClaimParams) (*ClaimResult, error) {
	res, err := e.claim(ctx, p, cp)
	if err != nil || res.Claimed == 0 {
		return res, err
	}
	rows := e.readClaimed(ctx, p, res.Groups)
	for _, g := range res.Groups {
		for i := range g {
			if g[i].ID != "" {
				continue
			}
			if it, ok := rows[g[i].Seq]; ok && getS(it, attrID) != "" {
				g[i].ID = getS(it, attrID)
			} else if it, err := e.getRow(ctx, p, g[i].Seq); err == nil {
				g[i].ID = getS(it, attrID)
			}
		}
	}
	return res, nil
}

// claim is Claim without the ids of the claimed actions.
func (e *Engine) claim(ctx context.Context, p int, cp ClaimParams) (*ClaimResult, error) {
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
		if r.reclaims, err = e.inflightCandidates(ctx, r); err != nil {
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
			tx.items = append(tx.items, e.claimUpdate(c, claimUpdateParams{
				Owner: r.cp.Owner, Now: r.now, Lease: r.lx, AnyDue: r.cp.OnlyID != "", Fence: claimFences(c, mi),
			}))
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
			it, err := e.getRow(ctx, c.a.Partition, c.a.Seq)
			if errors.Is(err, ErrNotFound) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("error reading back claim of %s: %w", c.a.Label(), err)
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
	a.claim.reclaimed = c.a.State == StateEXECUTING
	if claimFences(c, mi) {
		a.claim.fenced = true
		a.WriteStartedAt = time.UnixMilli(now.UnixMilli()).UTC()
	}
}
