package outbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The partition map row (ADR 0011, design.md §3.12): one item the engines
// read (consistently) and cache for at most MapTTL. Today it says where lane tails are: in
// their own items only (`tails` = "own"), or possibly still in a partition,
// where builds before ADR 0011 wrote them (no row, or no `tails`).
const (
	pkPartMap  = "M#partitions"
	skPartMap  = "M"
	attrMapVer = "v"     // N: version; every update is conditioned on it
	attrTails  = "tails" // S: "own" once no lane tail is in a partition any more
	attrMapN   = "n"     // N: the count for new lanes and keyless actions
	attrMapDep = "dep"   // N: the last Config.Partitions a reaper applied
	attrMapLiv = "live"  // N: every partition that may hold a live row is below it
	attrMapKep = "kept"  // N: every partition that may hold any action row is below it
	attrMapChg = "chg"   // N: when n last changed (Unix ms)
	// attrMapHist lists the counts applied, oldest first (at most
	// mapHistMax): a lane listing reads the lane's partition under each.
	attrMapHist = "hist"
	// attrTailsClean is when the reaper first found no lane tail in any
	// partition (Unix ms); removed when it finds one again.
	attrTailsClean = "tcl"
	// attrTailsShared is when an enqueue of a build with ADR 0011 first ran
	// on a table whose tails may be in partitions (Unix ms): builds before
	// ADR 0011 can run until oldTailGrace after it, and until then new
	// lanes get their tail where those builds look for it (tailShared).
	attrTailsShared = "tsh"
	tailsOwn        = "own"
)

// tailStage is where a new lane's tail goes while a table leaves the tails
// in partitions behind (ADR 0011, Migration). Every lane has one tail, in
// one of two forms: in its partition (`P#<p>` / `L#<ws>#<lane>`, what
// builds before ADR 0011 read and write) or its own item.
type tailStage uint8

const (
	// tailsSettled: the map says tails are their own items only (or a
	// tail was read, so nothing new is made): nothing is looked up in a
	// partition, nothing checked.
	tailsSettled tailStage = iota
	// tailShared: a build before ADR 0011 may still enqueue. A new lane's
	// tail goes in its partition under Config.Partitions, where such a build
	// reads it and conditions its own put on it, so the two serialise; the
	// put is made with a check that the lane has no own item (an engine
	// already past the stage started it).
	tailShared
	// tailMoving: no build before ADR 0011 runs any more (oldTailGrace
	// after the first enqueue of this build). A new lane gets its own item,
	// with a check that the lane has no tail in its partition (an engine
	// still in tailShared started it); lanes whose tail is in a partition
	// keep it there until they drain.
	tailMoving
)

// mapHistMax bounds the counts the map's history keeps.
const mapHistMax = 8

// MapTTL is how long an engine uses the partition map it read before it
// reads it again.
const MapTTL = 30 * time.Second

// oldTailGrace is how long the reaper keeps finding no lane tail in a
// partition before it records that tails are their own items only: longer
// than a function of a build before ADR 0011 (which writes tails in
// partitions) can still run after the deploy that replaced it (Lambda's
// 15-minute limit, plus a margin).
const oldTailGrace = 16 * time.Minute

// MaxPartitions is the most partitions a table can have: an id's partition
// field holds 15 bits, Config.Partitions is at most this, and a partition
// named by an id or a stream record is checked against it, whatever the
// count (ADR 0011 §2).
const MaxPartitions = 4096

// partitionMap is the partition map row as read.
type partitionMap struct {
	found       bool
	v           int64
	ownTails    bool      // no lane tail is in a partition: never read one there
	tailsClean  time.Time // zero: not recorded
	tailsShared time.Time // zero: no enqueue of this build recorded yet
	// n, dep, live, kept: 0 when absent (a table whose reaper has not
	// applied a count yet: Config.Partitions stands for them).
	n, dep, live, kept int
	changed            time.Time
	hist               []int // the counts applied, oldest first
}

// count is the partition count for new lanes and keyless actions.
func (m partitionMap) count(cfg *Config) int {
	if m.n > 0 {
		return m.n
	}
	return cfg.Partitions
}

// liveUpTo is one past the highest partition that may hold a live row:
// what sweeps and the reaper visit.
func (m partitionMap) liveUpTo(cfg *Config) int {
	return max(m.live, m.count(cfg))
}

// keptUpTo is one past the highest partition that may hold any action row:
// what retention and the status visit.
func (m partitionMap) keptUpTo(cfg *Config) int {
	return max(m.kept, m.liveUpTo(cfg))
}

// mapCache holds the partition map an engine read last, and when.
type mapCache struct {
	mu sync.Mutex
	m  partitionMap
	at time.Time
	ok bool
}

// partitionMap returns the partition map, read again when the cached one is
// MapTTL old (or from the future: a clock set back).
func (e *Engine) partitionMap(ctx context.Context) (partitionMap, error) {
	now := e.clk.Now()
	e.pmap.mu.Lock()
	m, at, ok := e.pmap.m, e.pmap.at, e.pmap.ok
	e.pmap.mu.Unlock()
	if ok && !now.Before(at) && now.Sub(at) < MapTTL {
		return m, nil
	}
	// Consistent: a count change must reach every engine within MapTTL
	// (retireGrace counts on it). Not under the lock: callers that find the
	// map old at once read it each (a simulator steps them one at a time).
	m, err := e.readPartitionMap(ctx, true)
	if err == nil && m.n == 0 {
		m, err = e.recordCount(ctx, m)
	}
	if err != nil {
		return partitionMap{}, err
	}
	e.pmap.mu.Lock()
	e.pmap.m, e.pmap.at, e.pmap.ok = m, now, true
	e.pmap.mu.Unlock()
	return m, nil
}

func (e *Engine) readPartitionMap(ctx context.Context, consistent bool) (partitionMap, error) {
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: e.table(), Key: key(pkPartMap, skPartMap), ConsistentRead: aws.Bool(consistent),
	})
	if err != nil {
		return partitionMap{}, fmt.Errorf("error reading the partition map: %w", err)
	}
	if len(out.Item) == 0 {
		return partitionMap{}, nil
	}
	it := out.Item
	m := partitionMap{found: true, v: getN(it, attrMapVer), ownTails: getS(it, attrTails) == tailsOwn,
		n: int(getN(it, attrMapN)), dep: int(getN(it, attrMapDep)), live: int(getN(it, attrMapLiv)), kept: int(getN(it, attrMapKep))}
	if has(it, attrTailsClean) {
		m.tailsClean = time.UnixMilli(getN(it, attrTailsClean)).UTC()
	}
	if has(it, attrTailsShared) {
		m.tailsShared = time.UnixMilli(getN(it, attrTailsShared)).UTC()
	}
	if has(it, attrMapChg) {
		m.changed = time.UnixMilli(getN(it, attrMapChg)).UTC()
	}
	if l, ok := it[attrMapHist].(*types.AttributeValueMemberL); ok {
		for _, v := range l.Value {
			if n, ok := v.(*types.AttributeValueMemberN); ok {
				if c, err := strconv.Atoi(n.Value); err == nil && c > 0 && c <= MaxPartitions {
					m.hist = append(m.hist, c)
				}
			}
		}
	}
	if m.n < 0 || m.n > MaxPartitions || m.live > MaxPartitions || m.kept > MaxPartitions {
		return partitionMap{}, fmt.Errorf("outbox: the partition map (%s) is malformed: n %d, live %d, kept %d", pkPartMap, m.n, m.live, m.kept)
	}
	return m, nil
}

// mapUpdate is a change of the partition map row: SET and REMOVE clauses
// with their names and values.
type mapUpdate struct {
	set, remove []string
	names       map[string]string
	vals        map[string]types.AttributeValue
}

func newMapUpdate() *mapUpdate {
	return &mapUpdate{names: map[string]string{}, vals: map[string]types.AttributeValue{}}
}

// setTo sets attribute attr to v.
func (u *mapUpdate) setTo(attr string, v types.AttributeValue) *mapUpdate {
	n := strconv.Itoa(len(u.names))
	u.names["#a"+n], u.vals[":a"+n] = attr, v
	u.set = append(u.set, "#a"+n+" = :a"+n)
	return u
}

// drop removes attribute attr.
func (u *mapUpdate) drop(attr string) *mapUpdate {
	n := strconv.Itoa(len(u.names))
	u.names["#a"+n] = attr
	u.remove = append(u.remove, "#a"+n)
	return u
}

// updatePartitionMap applies u to the map row read as m, raising its
// version: refused (ok false) when another writer changed it since.
func (e *Engine) updatePartitionMap(ctx context.Context, m partitionMap, u *mapUpdate) (bool, error) {
	u.setTo(attrMapVer, avN(m.v+1))
	upd := "SET " + strings.Join(u.set, ", ")
	if len(u.remove) > 0 {
		upd += " REMOVE " + strings.Join(u.remove, ", ")
	}
	names, vals := u.names, u.vals
	cond := "attribute_not_exists(pk)"
	if m.found {
		names["#v"], vals[":v"] = attrMapVer, avN(m.v)
		cond = "#v = :v"
	}
	_, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: e.table(), Key: key(pkPartMap, skPartMap), UpdateExpression: aws.String(upd),
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
	})
	switch {
	case isCondFailed(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("error writing the partition map: %w", err)
	}
	return true, nil
}

// createPartitionMap writes the map of a table this engine just created:
// its count, and no build before ADR 0011 ever wrote a lane tail in it.
func (e *Engine) createPartitionMap(ctx context.Context) error {
	u := setCount(partitionMap{}, &e.cfg, e.cfg.Partitions, e.clk.Now()).setTo(attrMapDep, avN(int64(e.cfg.Partitions)))
	_, err := e.updatePartitionMap(ctx, partitionMap{}, u.setTo(attrTails, avS(tailsOwn)))
	return err
}

// recordCount records this engine's Config.Partitions as the count of a
// map that has none (a table older builds wrote), before the engine uses
// the map: from then on every engine writes below the recorded watermarks,
// whatever its own setting (another engine may record its count first:
// then that one stands). It returns the map as it is then.
func (e *Engine) recordCount(ctx context.Context, m partitionMap) (partitionMap, error) {
	for try := 0; try < 8 && m.n == 0; try++ {
		u := setCount(m, &e.cfg, e.cfg.Partitions, e.clk.Now()).setTo(attrMapDep, avN(int64(e.cfg.Partitions)))
		if _, err := e.updatePartitionMap(ctx, m, u); err != nil {
			return m, err
		}
		var err error
		if m, err = e.readPartitionMap(ctx, true); err != nil {
			return m, err
		}
	}
	if m.n == 0 {
		return m, errors.New("outbox: the partition map keeps changing")
	}
	return m, nil
}

// stage is where a new lane's tail goes at now (ADR 0011, Migration).
func (m partitionMap) stage(now time.Time) tailStage {
	switch {
	case m.ownTails:
		return tailsSettled
	case m.tailsShared.IsZero() || now.Sub(m.tailsShared) < oldTailGrace:
		return tailShared
	}
	return tailMoving
}

// tailStageNow reports where a new lane's tail goes now: tailsSettled once
// the map says tails are their own items only; otherwise a lane's tail may
// still be in a partition (ADR 0011, Migration), and a new one goes where
// the stage says.
func (e *Engine) tailStageNow(ctx context.Context) (tailStage, error) {
	m, err := e.partitionMap(ctx)
	return m.stage(e.clk.Now()), err
}

// enqueueRan records in the map, once, when an enqueue of this build first
// ran on a table whose tails may be in partitions (attrTailsShared): the
// enqueues of builds before ADR 0011 end within oldTailGrace of it, and
// only then do new lanes get their own tail items. One conditional write
// per table; refused, another engine wrote the map first.
func (e *Engine) enqueueRan(ctx context.Context) error {
	m, err := e.partitionMap(ctx)
	if err != nil || m.ownTails || !m.tailsShared.IsZero() {
		return err
	}
	if _, err := e.updatePartitionMap(ctx, m, newMapUpdate().setTo(attrTailsShared, avMs(e.clk.Now()))); err != nil {
		return err
	}
	e.forgetPartitionMap()
	return nil
}

// migrateTails is the reaper's step of ADR 0011's migration: once no build
// before ADR 0011 can run (tailMoving), it looks for lane tails in
// partitions (where those builds, and this one before then, wrote them)
// and, once it has found none for oldTailGrace, records in the map that
// tails are their own items only, so enqueues stop looking for them there.
// A lane whose tail is in a partition keeps it there until the lane drains.
func (e *Engine) migrateTails(ctx context.Context) error {
	if m, err := e.partitionMap(ctx); err != nil || m.ownTails {
		return err
	}
	m, err := e.readPartitionMap(ctx, true)
	now := e.clk.Now()
	if err != nil || m.stage(now) != tailMoving {
		return err
	}
	for p := 0; p < e.cfg.Partitions; p++ {
		q, err := e.db.Query(ctx, &dynamodb.QueryInput{
			TableName: e.table(), KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :l)"),
			ExpressionAttributeNames:  map[string]string{"#s": attrTailSeq},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avS(partitionPK(p)), ":l": avS("L#")},
			ProjectionExpression:      aws.String("sk, #s"), Limit: aws.Int32(tailsMovedPerRun), ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return fmt.Errorf("error looking for lane tails in partition %d: %w", p, err)
		}
		if len(q.Items) > 0 {
			for _, it := range q.Items {
				e.moveOldTail(ctx, p, getS(it, attrSK), getN(it, attrTailSeq))
			}
			if m.tailsClean.IsZero() {
				return nil
			}
			_, err := e.updatePartitionMap(ctx, m, newMapUpdate().drop(attrTailsClean))
			return err
		}
	}
	var u *mapUpdate
	switch {
	case m.tailsClean.IsZero() || now.Before(m.tailsClean) || m.tailsClean.Before(m.tailsShared.Add(oldTailGrace)):
		// Counted only from tailMoving on: before it, new lanes still
		// got their tails in partitions.
		u = newMapUpdate().setTo(attrTailsClean, avMs(now))
	case now.Sub(m.tailsClean) >= oldTailGrace:
		u = newMapUpdate().setTo(attrTails, avS(tailsOwn))
	default:
		return nil
	}
	_, err = e.updatePartitionMap(ctx, m, u)
	return err
}

// tailsMovedPerRun bounds the tails one reaper run moves out of a
// partition (moveOldTail).
const tailsMovedPerRun = 25

// moveOldTail makes a lane's tail found in partition p (sk, naming seq) its
// own item, in one transaction conditioned on both: the row still names seq
// and the lane has no own item. Only once no build before ADR 0011 runs
// (tailMoving): every engine then reads a lane's own item first and the row
// in its partition only without one, and conditions its writes on the form
// it read, so the lane has one tail all along; a lane whose tail stays in a
// partition (stuck behind a proposal nobody admits, or left naming an ended
// member) would otherwise hold the migration back for good. Best effort: a
// refusal (an enqueue moved the tail, or the lane drained) leaves it to the
// next run.
func (e *Engine) moveOldTail(ctx context.Context, p int, sk string, seq int64) {
	if seq == 0 || !strings.HasPrefix(sk, "L#") {
		return
	}
	old := laneTail{seq: seq, p: p, old: true}
	del := &types.Delete{TableName: e.table(), Key: key(partitionPK(p), sk),
		ExpressionAttributeNames: map[string]string{}, ExpressionAttributeValues: map[string]types.AttributeValue{}}
	del.ConditionExpression = aws.String(laneTailIs(old, del.ExpressionAttributeNames, del.ExpressionAttributeValues))
	// The lane's own pk is the row's sk (laneTailPK and laneSK agree).
	own := key(sk, skLaneTail)
	own[attrTailSeq], own[attrTailPart] = avN(seq), avN(int64(p))
	_ = e.transact(ctx, []types.TransactWriteItem{{Delete: del},
		{Put: &types.Put{TableName: e.table(), Item: own, ConditionExpression: aws.String("attribute_not_exists(pk)")}}}, e.token())
}

// partitionCounts returns, from the partition map, the count for new lanes
// and keyless actions, and how many partitions may hold live rows.
func (e *Engine) partitionCounts(ctx context.Context) (count, live int, err error) {
	m, err := e.partitionMap(ctx)
	if err != nil {
		return 0, 0, err
	}
	return m.count(&e.cfg), m.liveUpTo(&e.cfg), nil
}

// keptPartitions returns how many partitions may hold action rows.
func (e *Engine) keptPartitions(ctx context.Context) (int, error) {
	m, err := e.partitionMap(ctx)
	if err != nil {
		return 0, err
	}
	return m.keptUpTo(&e.cfg), nil
}

// setCount builds the update that makes n the count: the watermarks rise
// with it, never fall here.
func setCount(m partitionMap, cfg *Config, n int, now time.Time) *mapUpdate {
	live := max(m.liveUpTo(cfg), n)
	u := newMapUpdate().setTo(attrMapN, avN(int64(n))).setTo(attrMapLiv, avN(int64(live))).
		setTo(attrMapKep, avN(int64(max(m.keptUpTo(cfg), live))))
	if n != m.count(cfg) || !m.found || m.n == 0 {
		u.setTo(attrMapChg, avMs(now))
	}
	hist := m.hist
	if len(hist) == 0 && m.n > 0 {
		hist = []int{m.n} // a map written before the history
	}
	if len(hist) == 0 || hist[len(hist)-1] != n {
		hist = append(append([]int(nil), hist...), n)
		if len(hist) > mapHistMax {
			hist = hist[len(hist)-mapHistMax:]
		}
		l := make([]types.AttributeValue, len(hist))
		for i, c := range hist {
			l[i] = avN(int64(c))
		}
		u.setTo(attrMapHist, &types.AttributeValueMemberL{Value: l})
	}
	return u
}

// PartitionsSet makes n the partition count for new lanes and keyless
// actions (ADR 0011 §2): every engine of the table takes it within MapTTL,
// whatever its Config.Partitions, until a deploy of another
// Config.Partitions (applied by the reaper) sets it again. Lanes with live
// members stay in their partition until they drain; partitions above the
// count are drained, reaped and swept until the reaper retires them empty.
func (e *Engine) PartitionsSet(ctx context.Context, n int) error {
	if n < 1 || n > MaxPartitions {
		return &ValidationError{Field: "partitions", Message: fmt.Sprintf("must be between 1 and %d, got %d", MaxPartitions, n)}
	}
	for try := 0; try < 8; try++ {
		m, err := e.readPartitionMap(ctx, true)
		if err != nil {
			return err
		}
		u := setCount(m, &e.cfg, n, e.clk.Now())
		if m.dep == 0 {
			// No reaper applied a deploy's count yet: this one is the
			// deploy's, so that its reapers leave the count set here.
			u.setTo(attrMapDep, avN(int64(e.cfg.Partitions)))
		}
		ok, err := e.updatePartitionMap(ctx, m, u)
		if err != nil || ok {
			e.forgetPartitionMap()
			return err
		}
	}
	return errors.New("outbox: the partition map keeps changing")
}

// forgetPartitionMap makes the next use read the map again.
func (e *Engine) forgetPartitionMap() {
	e.pmap.mu.Lock()
	e.pmap.ok = false
	e.pmap.mu.Unlock()
}

// PartitionLayout is the partition map as an engine sees it.
type PartitionLayout struct {
	Count int // for new lanes and keyless actions
	Live  int // partitions below it may hold live rows
	Kept  int // partitions below it may hold action rows
	// Recorded: the map holds them (a reaper applied a deploy's count, or
	// it was set); otherwise they are the engine's Config.Partitions.
	Recorded bool
	// Tails is the stage of ADR 0011's migration (lane tails leave the
	// partitions): "" once tails are their own items only; "shared" while
	// builds before ADR 0011 may still enqueue (new lanes start in their
	// partition) — until SharedUntil, or, without it, until 16 minutes
	// after this build's first enqueue; "moving" after (no build before
	// ADR 0011 may run any more; the reaper moves what is left).
	Tails       string
	SharedUntil time.Time
}

// PartitionLayout returns the table's partition layout (a consistent read
// of the map).
func (e *Engine) PartitionLayout(ctx context.Context) (PartitionLayout, error) {
	m, err := e.readPartitionMap(ctx, true)
	if err != nil {
		return PartitionLayout{}, err
	}
	l := PartitionLayout{Count: m.count(&e.cfg), Live: m.liveUpTo(&e.cfg), Kept: m.keptUpTo(&e.cfg), Recorded: m.n > 0}
	switch m.stage(e.clk.Now()) {
	case tailShared:
		l.Tails = "shared"
		if !m.tailsShared.IsZero() {
			l.SharedUntil = m.tailsShared.Add(oldTailGrace)
		}
	case tailMoving:
		l.Tails = "moving"
	}
	return l, nil
}

// applyPartitions is the reaper's step of a deploy (ADR 0011 §2): when its
// Config.Partitions is not the last one a reaper applied, it becomes the
// count. During a rolling deploy an older reaper may set the older count
// back: every count applied stays below the watermarks until retired, so
// that is extra work, never a loss.
func (e *Engine) applyPartitions(ctx context.Context) error {
	m, err := e.readPartitionMap(ctx, true)
	if err != nil || m.dep == e.cfg.Partitions {
		return err
	}
	u := setCount(m, &e.cfg, e.cfg.Partitions, e.clk.Now()).setTo(attrMapDep, avN(int64(e.cfg.Partitions)))
	if _, err := e.updatePartitionMap(ctx, m, u); err != nil {
		return err
	}
	e.forgetPartitionMap()
	return nil
}

// retireGrace is how long after a change of the count partitions above it
// may still receive writes: an engine uses a map it read for MapTTL, and a
// read may be a little stale.
const retireGrace = 2 * MapTTL

// retirePartitions lowers the watermarks over partitions above the count
// that are empty (ADR 0011 §2): live when the top partition holds no live
// row, kept when it holds no action row and no retention journal item. One
// partition a call, from the top, and only retireGrace after the count
// changed.
func (e *Engine) retirePartitions(ctx context.Context) error {
	m, err := e.readPartitionMap(ctx, true)
	if err != nil || m.n == 0 || e.clk.Now().Sub(m.changed) < retireGrace || !m.ownTails {
		// Not while lane tails may be in partitions (ADR 0011, Migration):
		// a lane then starts in its partition under Config.Partitions,
		// whatever the count, so a partition above it is not out of use.
		return err
	}
	live, kept := m.liveUpTo(&e.cfg), m.keptUpTo(&e.cfg)
	u := newMapUpdate()
	switch {
	case live > m.n:
		empty, err := e.noLiveRow(ctx, live-1)
		if err != nil || !empty {
			return err
		}
		u.setTo(attrMapLiv, avN(int64(live-1)))
	case kept > live:
		empty, err := e.noRow(ctx, kept-1)
		if err != nil || !empty {
			return err
		}
		u.setTo(attrMapKep, avN(int64(kept-1)))
	default:
		return nil
	}
	if _, err := e.updatePartitionMap(ctx, m, u); err != nil {
		return err
	}
	e.forgetPartitionMap()
	return nil
}

// noLiveRow reports whether partition p holds no live action: nothing in
// its due index, nothing in its in-flight map, and no live row among its
// actions (a PROPOSED action without an expiry is in neither).
func (e *Engine) noLiveRow(ctx context.Context, p int) (bool, error) {
	due, err := e.db.Query(ctx, &dynamodb.QueryInput{
		TableName: e.table(), IndexName: aws.String(IndexDue), KeyConditionExpression: aws.String("#d = :d"),
		ExpressionAttributeNames: map[string]string{"#d": attrDuePK}, ExpressionAttributeValues: map[string]types.AttributeValue{":d": avS(duePK(p))},
		Limit: aws.Int32(1),
	})
	if err != nil {
		return false, fmt.Errorf("error reading the due index of partition %d: %w", p, err)
	}
	if len(due.Items) > 0 {
		return false, nil
	}
	fence, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: e.table(), Key: key(partitionPK(p), skFence), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return false, fmt.Errorf("error reading the claim fence of partition %d: %w", p, err)
	}
	if inf, ok := fence.Item[attrInflight].(*types.AttributeValueMemberM); ok && len(inf.Value) > 0 {
		return false, nil
	}
	var start map[string]types.AttributeValue
	for {
		q, err := e.db.Query(ctx, &dynamodb.QueryInput{
			TableName: e.table(), KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :a)"),
			FilterExpression:          aws.String(liveCond),
			ExpressionAttributeNames:  map[string]string{"#st": attrState},
			ExpressionAttributeValues: liveVals(map[string]types.AttributeValue{":pk": avS(partitionPK(p)), ":a": avS("A#")}),
			ProjectionExpression:      aws.String("#st"), ConsistentRead: aws.Bool(true), ExclusiveStartKey: start,
		})
		if err != nil {
			return false, fmt.Errorf("error reading the actions of partition %d: %w", p, err)
		}
		if len(q.Items) > 0 {
			return false, nil
		}
		if start = q.LastEvaluatedKey; start == nil {
			return true, nil
		}
	}
}

// noRow reports whether partition p holds no action row and no retention
// journal item.
func (e *Engine) noRow(ctx context.Context, p int) (bool, error) {
	for _, prefix := range []string{"A#", journalPrefix} {
		q, err := e.db.Query(ctx, &dynamodb.QueryInput{
			TableName: e.table(), KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :a)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avS(partitionPK(p)), ":a": avS(prefix)},
			ProjectionExpression:      aws.String("pk"), ConsistentRead: aws.Bool(true), Limit: aws.Int32(1),
		})
		if err != nil {
			return false, fmt.Errorf("error reading partition %d: %w", p, err)
		}
		if len(q.Items) > 0 {
			return false, nil
		}
	}
	return true, nil
}

// lanePartitions are the partitions a lane listing reads, in order: the
// lane's partition under each count the map's history kept (oldest first),
// then the partition of the lane's tail (its live members), then the
// lane's partition under the count; each once. A lane that went back to a
// partition it had before lists that partition's members where it first
// appears.
func (e *Engine) lanePartitions(ctx context.Context, lid laneID) ([]int, error) {
	m, err := e.partitionMap(ctx)
	if err != nil {
		return nil, err
	}
	t, err := e.readTail(ctx, lid)
	if err != nil {
		return nil, err
	}
	var parts []int
	seen := map[int]bool{}
	add := func(p int) {
		if !seen[p] {
			seen[p] = true
			parts = append(parts, p)
		}
	}
	for _, c := range m.hist {
		add(LanePartition(lid.ws, lid.lane, c))
	}
	if t.seq != 0 {
		add(t.p)
	}
	add(LanePartition(lid.ws, lid.lane, m.count(&e.cfg)))
	return parts, nil
}
