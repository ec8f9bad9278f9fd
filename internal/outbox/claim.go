package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ClaimParams describes one claim of a partition.
type ClaimParams struct {
	Owner   string // the claimer; every later write of the claim names it
	Version int64  // the claim fence version the claimer holds
	Limit   int    // actions at most
	OnlyID  string // claim only this action (RunNow)
	// Concurrency is how many lane groups are claimed at once (each group's
	// members one after another); default 1.
	Concurrency int

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
// due time (RunNow); Fence sets the write fence with the claim (and `wsh`
// for a member, removes it for a head).
type claimUpdateParams struct {
	Owner      string
	Now, Lease time.Time
	AnyDue     bool
	Fence      bool
	// Head is the seq of the lane group's head when the claim fences a
	// member behind it (ADR 0015): the fence stands for a call made only
	// once the head ended (`wsh`). 0: the action heads its group.
	Head int64
}

// claimUpdate builds the conditional update that claims one candidate.
// With fence, the claim also sets the write fence (design.md §5): `wsa` is not
// projected into the due index, so this costs no index unit.
func (e *Engine) claimUpdate(c candidate, cu claimUpdateParams) *dynamodb.UpdateItemInput {
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
	// delete, and the end writes nothing to the index. The claim's fence
	// update, which landed before this write is sent, recorded it in the
	// partition's in-flight map (ADR 0016).
	upd := "SET #st = :exec, #ep = :nep, #att = :natt, #lx = :lx, #own = :own"
	rm := " REMOVE #dpk, #dsk"
	if cu.Fence {
		upd += ", #wsa = :cnow"
		cd.names["#wsh"] = attrWriteHead
		if cu.Head != 0 {
			upd += ", #wsh = :wsh"
			cd.vals[":wsh"] = avN(cu.Head)
		} else {
			rm += ", #wsh"
		}
	}
	upd += rm
	return &dynamodb.UpdateItemInput{
		TableName:                 e.table(),
		Key:                       actionKey(a.Partition, a.Seq),
		UpdateExpression:          aws.String(upd),
		ConditionExpression:       aws.String(cd.expr),
		ExpressionAttributeNames:  cd.names,
		ExpressionAttributeValues: cd.vals,
	}
}

// maxClaimWindow bounds how many due candidates one claim reads when the
// front of the due index is all blocked lanes.
const maxClaimWindow = 512

// Claim claims the oldest due claimable actions of a partition, by (due
// time, seq): one update of the claim fence row that checks the version and
// records every candidate in the in-flight map, then one conditional update
// per candidate (ADR 0016). A group head's predecessor is read consistently
// before and must have ended (an ended row never lives again). A candidate
// refused by its condition ends its lane group there (its lane successors
// are not claimed): a short batch, not a failure. A stale fence gives
// ErrFenceRefused.
// The claim of an idempotent-receiver action (a head or, with `wsh`, a
// member behind its group's head: ADR 0015) also sets its write fence
// (design.md §5): from then on it counts as started (the
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
	wrote, err := e.claimWrite(ctx, r, groups, res)
	if err != nil {
		return nil, err
	}
	if err := e.claimForgetSettled(ctx, r, wrote); err != nil {
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
	// leaseOf: rows read EXECUTING out of due under a running lease (their
	// lease end); blockedUntil: dropped candidates waiting for such a lease
	// (when it ends) — what a blocked run is remembered by (blockedrun.go).
	leaseOf, blockedUntil map[int64]time.Time
}

// claimStart fixes the claim's time and lease, reads the fence when the
// caller holds none, and reads the in-flight map's reclaim candidates.
func (e *Engine) claimStart(ctx context.Context, p int, cp ClaimParams) (*claimRun, error) {
	now := e.clk.Now().UTC()
	r := &claimRun{
		p: p, cp: cp, now: now, lx: leaseAt(now, e.cfg.Lease), limit: cp.Limit, h: cp.hold,
		fetched: map[int64]bool{}, live: map[int64]bool{}, skip: map[int64]bool{},
		renew: map[int64]time.Time{}, leaseOf: map[int64]time.Time{}, blockedUntil: map[int64]time.Time{},
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
// rows behind them. A blocked run at the front that the fence row
// remembers is not read again before its lease ends (ADR 0012 part 3); one
// found reading from the front is remembered.
func (e *Engine) claimChoose(ctx context.Context, r *claimRun) ([][]candidate, error) {
	if r.cp.OnlyID != "" {
		cands, err := e.onlyCandidate(ctx, r)
		if err != nil {
			return nil, err
		}
		return e.unblockedGroups(ctx, r, cands)
	}
	after := ""
	if b, ok := r.h.blocked(r.now); ok {
		after = b.sk
	}
	for window := r.limit; ; window *= 8 {
		cands, marks, err := e.dueCandidates(ctx, r.p, r.now, window, after)
		if err != nil {
			return nil, err
		}
		read := len(cands)
		groups, err := e.unblockedGroups(ctx, r, mergeCandidates(cands, r.reclaims))
		if err != nil {
			return nil, err
		}
		if len(groups) > 0 || read < 2*window || window >= maxClaimWindow {
			if after == "" {
				e.rememberBlockedRun(r, marks)
			}
			return groups, nil
		}
	}
}

// claimWrite claims groups (design.md §5 step 4, ADR 0016). First one
// conditional update of the fence row, still held by this claimer, records
// the in-flight entries of every candidate (and forgets those seen settled):
// an action is in the map before it can leave the due index. Then one plain
// conditional UpdateItem per candidate: groups up to r.cp.Concurrency at
// once, within a group the head first and then the members in lane order,
// the group stopping at the first member not claimed (step 5). fenceWritten
// says the fence update landed. It adds what it claimed to res.
func (e *Engine) claimWrite(ctx context.Context, r *claimRun, groups [][]candidate, res *ClaimResult) (fenceWritten bool, err error) {
	if len(groups) == 0 {
		return false, nil
	}
	set, rm := claimEntries(r, groups)
	if err := e.claimFenceWrite(ctx, r, set, rm); err != nil {
		return false, err
	}
	runs := make([][]Action, len(groups))
	refused := make([]int, len(groups))
	e.each(len(groups), r.cp.Concurrency, func(gi int) {
		runs[gi], refused[gi] = e.claimGroup(ctx, r, groups[gi])
	})
	for gi, run := range runs {
		res.Conflicts += refused[gi]
		if len(run) > 0 {
			res.Groups = append(res.Groups, run)
			res.Claimed += len(run)
		}
	}
	return true, nil
}

// claimEntries lists the in-flight entries the claim's fence update sets
// (every candidate's, at the claim's lease, and the leases found renewed)
// and removes (those the holder saw settle), bounded by fitFence so the
// write stays within DynamoDB's expression limits however big the map.
func claimEntries(r *claimRun, groups [][]candidate) (map[int64]time.Time, []int64) {
	claimed, except := map[int64]time.Time{}, map[int64]time.Time{}
	for seq, t := range r.renew {
		except[seq] = t
	}
	for _, g := range groups {
		for _, c := range g {
			claimed[c.a.Seq], except[c.a.Seq] = r.lx, r.lx
		}
	}
	return fitFence(r.h, claimed, r.renew, r.h.removable(except))
}

// claimFenceWrite is the claim's fence update: it sets and removes the
// given entries, conditioned on the claimer still holding the fence. The
// update is idempotent (it sets values and removes paths; its condition
// does not read the map), so a try without an answer is sent again; a
// refusal means the fence moved on (ErrFenceRefused), and no action is
// written. Entries of a write that landed unanswered before a refusal, or
// of one that never got an answer, name actions no update will claim: they
// are stale, and only ever make a reclaim wait (inflightRow).
func (e *Engine) claimFenceWrite(ctx context.Context, r *claimRun, set map[int64]time.Time, rm []int64) error {
	bw := r.h.blkPending()
	upd, names, vals := fenceUpdate(r.h, set, rm, bw)
	in := &dynamodb.UpdateItemInput{
		TableName:                 e.table(),
		Key:                       key(partitionPK(r.p), skFence),
		UpdateExpression:          aws.String(upd),
		ConditionExpression:       aws.String("#cv = :v AND #o = :o"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
	}
	var err error
	for try := 0; try < 5; try++ {
		if _, err = e.db.UpdateItem(ctx, in); err == nil {
			r.h.wrote(set, rm)
			r.h.wroteBlk(bw)
			return nil
		}
		if isCondFailed(err) {
			return fmt.Errorf("partition %d version %d: %w", r.p, r.cp.Version, ErrFenceRefused)
		}
		if ctx.Err() != nil || !(isAmbiguous(err) || isRetryable(err)) {
			break
		}
	}
	return fmt.Errorf("error claiming partition %d: %w", r.p, err)
}

// claimGroup claims one lane group, head first, then each member in lane
// order, and stops at the first member not claimed: a member is never
// claimed unless every member before it in the group is. It returns the
// claimed run and 1 when a member was refused (a conflict).
func (e *Engine) claimGroup(ctx context.Context, r *claimRun, g []candidate) ([]Action, int) {
	run := make([]Action, 0, len(g))
	for mi, c := range g {
		head := int64(0)
		if mi > 0 {
			head = g[0].a.Seq
		}
		if !e.claimOne(ctx, r, c, head) {
			return run, 1
		}
		a := c.a
		a.State, a.Epoch, a.Attempt, a.LeaseExpiresAt, a.Owner = StateEXECUTING, a.Epoch+1, a.Attempt+1, r.lx, r.cp.Owner
		markClaimFence(&a, c, head, r.now)
		run = append(run, a)
	}
	return run, 0
}

// claimOne sends the claim update of one candidate (behind its group's head
// when head is not 0)
// and reports whether the row is now claimed by this claim. A try without
// an answer is sent again; a refusal after one, or a last try without an
// answer, is settled by reading the row back (design.md §5 step 6): the
// claim holds the action when the row carries its epoch, owner and lease.
// An action claimed unread stays safe: its entry is in the map.
func (e *Engine) claimOne(ctx context.Context, r *claimRun, c candidate, head int64) bool {
	// Run now takes an admitted action whatever its due time.
	in := e.claimUpdate(c, claimUpdateParams{
		Owner: r.cp.Owner, Now: r.now, Lease: r.lx, AnyDue: r.cp.OnlyID != "", Fence: claimFences(c),
		Head: head,
	})
	mine := func(it map[string]types.AttributeValue) bool {
		return State(getS(it, attrState)) == StateEXECUTING && getN(it, attrEpoch) == c.a.Epoch+1 &&
			getS(it, attrOwner) == r.cp.Owner && getN(it, attrLease) == r.lx.UnixMilli()
	}
	err := e.updateSettled(ctx, in, mine)
	if err == nil {
		return true
	}
	if isCondFailed(err) {
		return false
	}
	// No answer after the retries (or another failure): read back.
	it, gerr := e.getRow(context.WithoutCancel(ctx), c.a.Partition, c.a.Seq)
	return gerr == nil && mine(it)
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

// claimFences reports whether the claim of an action sets the write fence
// itself (design.md §5): every idempotent receiver. At the head of its
// group, the claim read its predecessor as ended (design.md §5 step 3; an
// ended row never lives again), so every earlier member of its lane has
// ended and the action may be sent from its claim on. A member behind the
// head is fenced by the claim too (ADR 0015), with `wsh` naming the head:
// its call is made only once every member before it in the group ended, so
// its fence does not say it started in lane order (the reaper and
// AttemptFinish end it as out of order while `wsh` is there).
func claimFences(c candidate) bool {
	return c.class == IdempotentReceiver
}

// markClaimFence records on a claimed action what its claim wrote: the
// fence at the claim's time (as the table stores it, in milliseconds) for a
// claim-fenced action, with its group's head (0: it is the head), and
// whether an earlier claim's attempt may have written (the action was
// taken from EXECUTING).
func markClaimFence(a *Action, c candidate, head int64, now time.Time) {
	a.claim.reclaimed = c.a.State == StateEXECUTING
	if claimFences(c) {
		a.claim.fenced = true
		a.claim.head = head
		a.WriteStartedAt = time.UnixMilli(now.UnixMilli()).UTC()
	}
}
