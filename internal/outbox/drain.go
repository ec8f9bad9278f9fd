package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DrainParams tunes one drain.
type DrainParams struct {
	Owner     string    // the drainer's id; default: a fresh random one
	Deadline  time.Time // stop claiming and starting when it nears; zero = no deadline
	BatchSize int       // default Config.BatchSize
	// Concurrency is how many lane groups run at once; default the batch
	// size: every group of a batch at once, so a slow provider call holds
	// only its own group and the next claim waits for the batch's slowest
	// attempt only (design.md §6).
	Concurrency int
	// ClaimUntil, when set, stops the drain claiming new batches once it
	// has passed (what was claimed runs, under Deadline): a drainer whose
	// invocation holds others up (a stream shard's next batch) keeps it
	// short. Zero: claim until Deadline.
	ClaimUntil time.Time
	// Partitions is how many partitions Sweep probes at once; default 1
	// (one after another). Each has its own claim fence, so they never
	// meet. With more than one, a partition whose drain claimed actions
	// gives its place to the next one while it runs them, so a slow
	// provider holds no place (design.md §6).
	Partitions int
	// Started, when set, is called once, when the drain has claimed its
	// first actions and is about to run them.
	Started func()

	// fenceUntil is when the drainer's lease on the partition's claim
	// fence ends (set by DrainPartition).
	fenceUntil time.Time
	// hold is the fence DrainPartition holds: attempts report the actions
	// they saw settle to it (design.md §3.3).
	hold *fenceHold
}

// DrainResult counts what a drain did.
type DrainResult struct {
	Claimed, Started, Ended, Released      int
	ShortBatches, Conflicts, FenceRefusals int
	More                                   bool // stopped with work left (deadline)
}

func (r *DrainResult) add(o *DrainResult) {
	r.Claimed += o.Claimed
	r.Started += o.Started
	r.Ended += o.Ended
	r.Released += o.Released
	r.ShortBatches += o.ShortBatches
	r.Conflicts += o.Conflicts
	r.FenceRefusals += o.FenceRefusals
	r.More = r.More || o.More
}

const maxBatchesPerDrain = 64

func (e *Engine) drainDefaults(p DrainParams) DrainParams {
	if p.Owner == "" {
		p.Owner = fmt.Sprintf("d-%016x", e.uint64())
	}
	if p.BatchSize <= 0 {
		p.BatchSize = e.cfg.BatchSize
	}
	if p.Concurrency <= 0 {
		p.Concurrency = p.BatchSize
	}
	return p
}

// claimOver reports whether the drain may claim no more batches
// (DrainParams.ClaimUntil).
func (e *Engine) claimOver(p DrainParams) bool {
	return !p.ClaimUntil.IsZero() && !e.clk.Now().Before(p.ClaimUntil)
}

// nearDeadline reports whether there is too little time left to start an
// attempt: it must be able to finish inside the write margin.
func (e *Engine) nearDeadline(p DrainParams) bool {
	return !p.Deadline.IsZero() && e.clk.Now().Add(e.cfg.WriteMargin).After(p.Deadline)
}

// nearFenceEnd reports whether the drainer's lease on the partition's claim
// fence could end, on another drainer's clock, during a provider call
// started now: the call ends within the write margin less the skew bound,
// and another clock may run ahead by that bound. A claim-fenced head
// (design.md §5) is not called then: while that lease runs nobody else claims in the
// partition, so no lane successor of the head, which an erasure of the head
// would free, can start before the head's call has ended. When the fence's
// lease ends at the drain's deadline this is nearDeadline.
func (e *Engine) nearFenceEnd(p DrainParams) bool {
	until := p.fenceUntil
	if p.hold != nil && !p.hold.leaseEnd().IsZero() {
		// A member's attempt may have taken it longer (fenceCovers).
		until = p.hold.leaseEnd()
	}
	return !until.IsZero() && e.clk.Now().Add(e.cfg.WriteMargin).After(until)
}

// fenceCovers reports whether the drainer's lease on the claim fence
// covers a provider call of a claim-fenced lane member started now (the
// rule of nearFenceEnd), taking the lease longer first when it does not
// (fenceExtend; ADR 0015): a member may have waited behind its head for
// most of the lease. False: the member must not be called now (it is given
// back). Without a hold (a caller's own Claim) there is no lease to judge.
func (e *Engine) fenceCovers(ctx context.Context, h *fenceHold, deadline time.Time) bool {
	if h == nil {
		return true
	}
	h.extending.Lock()
	defer h.extending.Unlock()
	now := e.clk.Now()
	if h.leaseEnd().IsZero() || !now.Add(e.cfg.WriteMargin).After(h.leaseEnd()) {
		return true
	}
	until := now.Add(e.cfg.Lease)
	if !deadline.IsZero() && deadline.Before(until) {
		until = deadline
	}
	if now.Add(e.cfg.WriteMargin).After(until) {
		return false // the drain's deadline is near: nothing more starts
	}
	return e.fenceExtend(ctx, h, until)
}

// fenceLease is how long a drainer takes a partition's claim fence for.
func (e *Engine) fenceLease(p DrainParams) time.Time {
	until := e.clk.Now().Add(e.cfg.Lease)
	if !p.Deadline.IsZero() && p.Deadline.Before(until) {
		until = p.Deadline
	}
	return until
}

// DrainPartition takes a partition's claim fence, then claims and runs
// batches until nothing is due or the deadline nears, and releases the
// fence. A fence held by another drainer is not an error: the result counts
// a fence refusal.
func (e *Engine) DrainPartition(ctx context.Context, partition int, p DrainParams) (*DrainResult, error) {
	if partition < 0 || partition >= MaxPartitions {
		return nil, &ValidationError{Field: "partition", Message: fmt.Sprintf("partition %d is not in [0, %d)", partition, MaxPartitions)}
	}
	p = e.drainDefaults(p)
	if p.Started != nil {
		p.Started = sync.OnceFunc(p.Started)
	}
	res := &DrainResult{}
	until := e.fenceLease(p)
	p.fenceUntil = until
	if e.nearDeadline(p) || e.nearFenceEnd(p) {
		res.More = true
		return res, nil
	}
	h, err := e.fenceTake(ctx, partition, p.Owner, until)
	if errors.Is(err, ErrFenceRefused) {
		res.FenceRefusals++
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	p.hold = h
	h.setLeaseEnd(until)
	defer func() {
		// A fresh context: the fence should be released even when ctx
		// ended. The release also forgets the in-flight entries of the
		// actions this drain saw settle (design.md §3.3).
		_ = e.fenceRelease(context.WithoutCancel(ctx), h)
	}()
	for batch := 0; batch < maxBatchesPerDrain; batch++ {
		if stop, err := e.renewFence(ctx, h, &p, res); stop || err != nil {
			return res, err
		}
		if e.nearDeadline(p) || e.nearFenceEnd(p) || e.claimOver(p) {
			res.More = true
			break
		}
		more, err := e.drainBatch(ctx, partition, h, p, res)
		if err != nil || !more {
			return res, err
		}
	}
	return res, nil
}

// renewFence takes the fence again (a new version, a longer lease) before a
// claim of a long drain, so that claim-fenced heads can still be called
// (nearFenceEnd). stop says the drain must end: another drainer took the
// fence (counted) or the write failed.
func (e *Engine) renewFence(ctx context.Context, h *fenceHold, p *DrainParams, res *DrainResult) (stop bool, err error) {
	if e.nearDeadline(*p) || !e.nearFenceEnd(*p) {
		return false, nil
	}
	if end := h.leaseEnd(); end.After(p.fenceUntil) {
		// A member's attempt took the lease longer (fenceCovers).
		p.fenceUntil = end
	}
	until := e.fenceLease(*p)
	if !until.After(p.fenceUntil) {
		return false, nil
	}
	err = e.fenceRetake(ctx, h, until)
	if errors.Is(err, ErrFenceRefused) {
		res.FenceRefusals++
		return true, nil
	}
	if err != nil {
		return true, err
	}
	p.fenceUntil = until
	h.setLeaseEnd(until)
	return false, nil
}

// drainBatch claims one batch and runs it; more says the partition may
// have more due work.
func (e *Engine) drainBatch(ctx context.Context, partition int, h *fenceHold, p DrainParams, res *DrainResult) (more bool, err error) {
	cr, err := e.claim(ctx, partition, ClaimParams{Owner: p.Owner, Version: h.version, Limit: p.BatchSize, Concurrency: p.Concurrency, hold: h})
	if errors.Is(err, ErrFenceRefused) {
		res.FenceRefusals++
		return false, nil
	}
	if err != nil {
		return false, err
	}
	res.Claimed += cr.Claimed
	res.Conflicts += cr.Conflicts
	if cr.Short {
		res.ShortBatches++
	}
	if cr.Claimed == 0 {
		return false, nil
	}
	if p.Started != nil {
		p.Started()
	}
	rows := e.readClaimed(ctx, partition, cr.Groups)
	// The batch's endings go to one retention journal item, written after
	// its attempts and before the fence is released (design.md §3.6).
	jr := e.newJournal(p.Owner)
	err = e.runGroups(withJournal(ctx, jr), cr.Groups, rows, p, res)
	if jerr := jr.flush(context.WithoutCancel(ctx)); err == nil {
		err = jerr
	}
	if err != nil {
		return false, err
	}
	// A full batch, or a short one: the partition may have more due work.
	return cr.Claimed >= p.BatchSize || cr.Short, nil
}

// runGroups runs claimed lane groups, up to p.Concurrency at once; inside a
// group one after another, in lane order. When a member does not end, the
// members behind it are released: they must not run before it ends.
func (e *Engine) runGroups(ctx context.Context, groups [][]Action, rows map[int64]map[string]types.AttributeValue, p DrainParams, res *DrainResult) error {
	var mu sync.Mutex
	var firstErr error
	e.each(len(groups), p.Concurrency, func(gi int) {
		local := &DrainResult{}
		err := e.runGroup(ctx, groups[gi], rows, p, local)
		mu.Lock()
		defer mu.Unlock()
		res.add(local)
		if err != nil && firstErr == nil {
			firstErr = err
		}
	})
	return firstErr
}

func (e *Engine) runGroup(ctx context.Context, g []Action, rows map[int64]map[string]types.AttributeValue, p DrainParams, res *DrainResult) error {
	for i := 0; i < len(g); i++ {
		if ctx.Err() != nil || e.nearDeadline(p) || !e.claimFenceCovers(ctx, g[i], p) {
			return e.releaseRest(ctx, g[i:], p.hold, res)
		}
		// The members waiting behind this one keep valid leases: renew those
		// that could run out during this attempt. One we can no longer renew
		// is lost to us, and so is the lane behind it (released).
		if lost := e.renewWaiting(ctx, g[i+1:]); lost >= 0 {
			cut := i + 1 + lost
			if err := e.releaseRest(ctx, g[cut+1:], p.hold, res); err != nil {
				return err
			}
			g = g[:cut]
		}
		// A member behind this one stays live (run, released or waiting):
		// this one is not the lane's tail (design.md §7.1).
		g[i].claim.followed = i+1 < len(g)
		g[i].claim.fenceUntil = p.fenceUntil
		if p.hold != nil && !p.hold.leaseEnd().IsZero() {
			g[i].claim.fenceUntil = p.hold.leaseEnd()
		}
		g[i].claim.hold, g[i].claim.deadline = p.hold, p.Deadline
		rep, err := e.runAttempt(ctx, g[i], rows[g[i].Seq])
		if rep.Started {
			res.Started++
		}
		if rep.Ended {
			res.Ended++
		}
		if rep.Settled {
			p.hold.settle(g[i].Seq)
		}
		if rep.Settled && !rep.Ended {
			// Back in due (a release inside the attempt, a retry, a
			// deferral, a Reread), perhaps at its old due time: a blocked run
			// remembered past it must go (ADR 0012 part 3). On the safe side:
			// its claim-time due time, which is never later than where it went.
			p.hold.releasedAt(timeSK(dueOrNow(g[i], e.clk.Now()), g[i].Seq))
		}
		if err != nil {
			_ = e.releaseRest(context.WithoutCancel(ctx), g[i+1:], p.hold, res)
			return err
		}
		if !rep.Ended {
			return e.releaseRest(ctx, g[i+1:], p.hold, res)
		}
	}
	return nil
}

// claimFenceCovers reports whether a claim-fenced action may start its
// attempt as far as the drainer's lease on the claim fence goes: a head
// only while that lease covers a call (nearFenceEnd, ADR 0008); a member
// behind a head takes the lease longer when it does not (fenceCovers, ADR
// 0015). Actions fenced by their own write are not judged here.
func (e *Engine) claimFenceCovers(ctx context.Context, a Action, p DrainParams) bool {
	switch {
	case !a.claim.fenced:
		return true
	case a.claim.head == 0 || p.hold == nil:
		return !e.nearFenceEnd(p)
	}
	return e.fenceCovers(ctx, p.hold, p.Deadline)
}

// renewWaiting renews the leases of waiting lane members that have less than
// one attempt's worth (twice the write margin plus the skew bound) left. It
// returns the index of the first member it could not renew, or -1.
func (e *Engine) renewWaiting(ctx context.Context, waiting []Action) int {
	now := e.clk.Now()
	for j := range waiting {
		if waiting[j].LeaseExpiresAt.Sub(now) >= 2*e.cfg.WriteMargin+e.cfg.ClockSkew {
			continue
		}
		if err := e.leaseRenew(ctx, &waiting[j]); err != nil {
			return j
		}
	}
	return -1
}

func (e *Engine) releaseRest(ctx context.Context, rest []Action, h *fenceHold, res *DrainResult) error {
	for i := range rest {
		settled, err := e.release(context.WithoutCancel(ctx), &rest[i])
		if err != nil {
			return err
		}
		if settled {
			h.settle(rest[i].Seq)
			// Back in due, perhaps at its old due time: a blocked run
			// remembered past it must go (ADR 0012 part 3).
			h.releasedAt(timeSK(dueOrNow(rest[i], e.clk.Now()), rest[i].Seq))
		}
		res.Released++
	}
	return nil
}

// Sweep drains every partition once, starting at a random one. With
// p.Partitions above 1 it probes that many partitions at once, and a
// partition whose drain claimed actions gives its place to the next one
// while it runs them (DrainParams.Started): a slow provider in one
// partition delays no other partition's drain (design.md §6). By default
// one partition after another, in the caller's goroutine. The first error
// stops it from starting further partitions; those under way finish.
func (e *Engine) Sweep(ctx context.Context, p DrainParams) (*DrainResult, error) {
	p = e.drainDefaults(p)
	// Every partition that may hold a live row (ADR 0011 §2).
	_, n, err := e.partitionCounts(ctx)
	if err != nil {
		return nil, err
	}
	// Start at a random partition so that a deadline does not always starve
	// the same ones.
	first := e.intN(n)
	total := &DrainResult{}
	if p.Partitions <= 1 {
		// In the caller's goroutine, as a simulator needs.
		for i := range n {
			part := (first + i) % n
			r, err := e.DrainPartition(ctx, part, p)
			if r != nil {
				total.add(r)
			}
			if err != nil {
				return total, fmt.Errorf("error draining partition %d: %w", part, err)
			}
		}
		return total, nil
	}
	return e.sweepOverlapped(ctx, p, first, n, total)
}

// sweepOverlapped is Sweep probing p.Partitions partitions at once: a
// partition's drain gives its place to the next partition once it has
// claimed (DrainParams.Started).
func (e *Engine) sweepOverlapped(ctx context.Context, p DrainParams, first, n int, total *DrainResult) (*DrainResult, error) {
	var (
		mu       sync.Mutex
		firstErr error
	)
	e.eachFreeing(n, min(p.Partitions, n), func(i int, free func()) {
		mu.Lock()
		stop := firstErr != nil
		mu.Unlock()
		if stop {
			return
		}
		part := (first + i) % n
		q := p
		q.Started = free
		r, err := e.DrainPartition(ctx, part, q)
		mu.Lock()
		defer mu.Unlock()
		if r != nil {
			total.add(r)
		}
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("error draining partition %d: %w", part, err)
		}
	})
	return total, firstErr
}

// LivePartitions is how many partitions a sweep visits: every partition
// that may hold a live row (the partition map's live, design.md §3.12).
func (e *Engine) LivePartitions(ctx context.Context) (int, error) {
	_, live, err := e.partitionCounts(ctx)
	return live, err
}

// RunNow carries out one admitted action immediately, through the same claim
// fence, claim and write fence as the drainer. It must be its lane's head
// (its predecessor ended); otherwise, or when a drainer holds the partition,
// the action is returned unchanged.
func (e *Engine) RunNow(ctx context.Context, id string) (*Action, error) {
	a, err := e.ActionGet(ctx, id)
	if err != nil {
		return nil, err
	}
	if a.State != StateADMITTED {
		return nil, &TransitionError{ID: id, From: a.State, To: StateEXECUTING}
	}
	p := e.drainDefaults(DrainParams{})
	until := e.clk.Now().Add(e.cfg.Lease)
	h, err := e.fenceTake(ctx, a.Partition, p.Owner, until)
	if err != nil {
		if errors.Is(err, ErrFenceRefused) {
			return a, nil
		}
		return nil, err
	}
	defer func() { _ = e.fenceRelease(context.WithoutCancel(ctx), h) }()
	h.setLeaseEnd(until)
	cr, err := e.claim(ctx, a.Partition, ClaimParams{Owner: p.Owner, Version: h.version, Limit: 1, OnlyID: id, hold: h})
	if err != nil {
		return nil, err
	}
	if cr.Claimed == 1 {
		cr.Groups[0][0].claim.fenceUntil = until
		rep, err := e.runAttempt(ctx, cr.Groups[0][0], nil)
		if err != nil {
			return nil, err
		}
		if rep.Settled {
			h.settle(cr.Groups[0][0].Seq)
		}
	}
	return e.ActionGet(ctx, id)
}

// Drain is a helper for users' tests: it makes every waiting action due
// (next attempts and Reread waits brought forward to now) and drains every
// partition until nothing is due.
func (e *Engine) Drain(ctx context.Context) error {
	for round := 0; round < 100; round++ {
		if err := e.makeDue(ctx); err != nil {
			return err
		}
		r, err := e.Sweep(ctx, DrainParams{})
		if err != nil {
			return err
		}
		if r.Claimed == 0 {
			return nil
		}
	}
	return fmt.Errorf("outbox: drain did not settle after 100 rounds")
}

// makeDue brings every waiting ADMITTED action and every unheld EXECUTING
// action (a Reread wait) forward to now, of the kinds and variants this
// build decodes: another build's row keeps the wait that build chose
// (rolling upgrades, design.md §11 invariant 8).
func (e *Engine) makeDue(ctx context.Context) error {
	now := e.clk.Now().UTC()
	_, live, err := e.partitionCounts(ctx)
	if err != nil {
		return err
	}
	for part := 0; part < live; part++ {
		var firstErr error
		err := e.eachDuePage(ctx, dueQuery{partition: part}, func(rows []dueRow) bool {
			for _, r := range rows {
				if _, ok := e.reg.Decodes(r.a.Kind, r.a.Variant); !ok {
					continue
				}
				if err := e.makeRowDue(ctx, r.a, now); err != nil {
					firstErr = err
					return false
				}
			}
			return true
		})
		if firstErr != nil {
			return firstErr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// makeRowDue brings one waiting row of the due index forward to now: an
// ADMITTED action's next attempt, or an unheld EXECUTING action's wait.
func (e *Engine) makeRowDue(ctx context.Context, a Action, now time.Time) error {
	var upd string
	c := condState(a.State, a.Epoch)
	c.vals[":now"] = avMs(now)
	switch {
	case a.State == StateADMITTED && a.NextAttemptAt.After(now):
		upd = "SET #nat = :now, #dsk = :dsk"
		c.names["#nat"], c.names["#dsk"] = attrNext, attrDueSK
		c.vals[":dsk"] = avS(timeSK(now, a.Seq))
	case a.State == StateEXECUTING && a.LeaseExpiresAt.After(now):
		upd = "SET #lx = :now, #dsk = :dsk"
		c.names["#lx"], c.names["#dsk"] = attrLease, attrDueSK
		c.vals[":dsk"] = avS(timeSK(now, a.Seq))
		c = c.and(cond{expr: "attribute_not_exists(#own)", names: map[string]string{"#own": attrOwner}})
	default:
		return nil
	}
	_, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: e.table(), Key: actionKey(a.Partition, a.Seq), UpdateExpression: aws.String(upd),
		ConditionExpression: aws.String(c.expr), ExpressionAttributeNames: c.names, ExpressionAttributeValues: c.vals,
	})
	if err != nil && !isCondFailed(err) {
		return fmt.Errorf("error making %s due: %w", a.Label(), err)
	}
	return nil
}
