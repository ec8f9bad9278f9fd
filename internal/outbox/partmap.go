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

// The partition map row (design.md §3.12): one item the engines read
// (consistently) and cache for at most MapTTL.
const (
	pkPartMap  = "M#partitions"
	skPartMap  = "M"
	attrMapVer = "v"    // N: version; every update is conditioned on it
	attrMapN   = "n"    // N: the count for new lanes and keyless actions
	attrMapDep = "dep"  // N: the last Config.Partitions a reaper applied
	attrMapLiv = "live" // N: every partition that may hold a live row is below it
	attrMapKep = "kept" // N: every partition that may hold any action row is below it
	attrMapChg = "chg"  // N: when n last changed (Unix ms)
	// attrMapHist lists the counts applied, oldest first (at most
	// mapHistMax): a lane listing reads the lane's partition under each.
	attrMapHist = "hist"
)

// mapHistMax bounds the counts the map's history keeps.
const mapHistMax = 8

// MapTTL is how long an engine uses the partition map it read before it
// reads it again.
const MapTTL = 30 * time.Second

// MaxPartitions is the most partitions a table can have: an id's partition
// field holds 15 bits, Config.Partitions is at most this, and a partition
// named by an id or a stream record is checked against it, whatever the
// count (ADR 0011 §2).
const MaxPartitions = 4096

// partitionMap is the partition map row as read.
type partitionMap struct {
	found bool
	v     int64
	// n, dep, live, kept: 0 when absent (a table whose creator wrote no
	// map, the CDK stack's, before its first engine recorded one:
	// Config.Partitions stands for them).
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
	m := partitionMap{found: true, v: getN(it, attrMapVer),
		n: int(getN(it, attrMapN)), dep: int(getN(it, attrMapDep)), live: int(getN(it, attrMapLiv)), kept: int(getN(it, attrMapKep))}
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

// mapUpdate is a change of the partition map row: its SET clauses with
// their names and values.
type mapUpdate struct {
	set   []string
	names map[string]string
	vals  map[string]types.AttributeValue
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

// updatePartitionMap applies u to the map row read as m, raising its
// version: refused (ok false) when another writer changed it since.
func (e *Engine) updatePartitionMap(ctx context.Context, m partitionMap, u *mapUpdate) (bool, error) {
	u.setTo(attrMapVer, avN(m.v+1))
	upd := "SET " + strings.Join(u.set, ", ")
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
// its count.
func (e *Engine) createPartitionMap(ctx context.Context) error {
	u := setCount(partitionMap{}, &e.cfg, e.cfg.Partitions, e.clk.Now()).setTo(attrMapDep, avN(int64(e.cfg.Partitions)))
	_, err := e.updatePartitionMap(ctx, partitionMap{}, u)
	return err
}

// recordCount records this engine's Config.Partitions as the count of a
// map that has none (a table the CDK stack created), before the engine uses
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
	if n < 1 || n > MaxPartitionCount {
		return &ValidationError{Field: "partitions", Message: fmt.Sprintf("must be between 1 and %d, got %d", MaxPartitionCount, n)}
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
	// Recorded: the map holds them (its creator or an engine recorded a
	// count); otherwise they are the engine's Config.Partitions.
	Recorded bool
	// History lists the counts applied, oldest first (at most 8; a lane
	// listing reads a lane's partition under each); Changed is when the
	// count last changed (zero: never).
	History []int
	Changed time.Time
}

// PartitionLayout returns the table's partition layout (a consistent read
// of the map).
func (e *Engine) PartitionLayout(ctx context.Context) (PartitionLayout, error) {
	m, err := e.readPartitionMap(ctx, true)
	if err != nil {
		return PartitionLayout{}, err
	}
	return PartitionLayout{Count: m.count(&e.cfg), Live: m.liveUpTo(&e.cfg), Kept: m.keptUpTo(&e.cfg), Recorded: m.n > 0,
		History: append([]int(nil), m.hist...), Changed: m.changed}, nil
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
// that are empty (ADR 0011 §2): live over the top partitions that hold no
// live row, then kept over those of them that hold no action row and no
// retention journal item. From the top, each partition checked after the
// one above it was found empty, at most MaxRetirePerRun checks a call, one
// map update for all of them; and only retireGrace after the count
// changed. Nothing can land in a partition above the count once every
// engine uses it (a lane member joins one only behind a live member), so a
// partition found empty stays empty until the update; an update after a
// count change meanwhile is refused by the map's version.
func (e *Engine) retirePartitions(ctx context.Context) error {
	m, err := e.readPartitionMap(ctx, true)
	if err != nil || m.n == 0 || e.clk.Now().Sub(m.changed) < retireGrace {
		return err
	}
	live, kept := m.liveUpTo(&e.cfg), m.keptUpTo(&e.cfg)
	checks := 0
	// A failed check keeps what the checks before it found.
	newLive, checkErr := e.retireFrom(ctx, live, m.n, &checks, e.noLiveRow)
	newKept := kept
	if checkErr == nil {
		newKept, checkErr = e.retireFrom(ctx, kept, newLive, &checks, e.noRow)
	}
	if newLive == live && newKept == kept {
		return checkErr
	}
	u := newMapUpdate().setTo(attrMapLiv, avN(int64(newLive))).setTo(attrMapKep, avN(int64(newKept)))
	if _, err := e.updatePartitionMap(ctx, m, u); err != nil {
		return err
	}
	e.forgetPartitionMap()
	return checkErr
}

// retireFrom lowers a watermark from top towards floor over the partitions
// empty (the check) from the top down, while checks stay under
// MaxRetirePerRun; it returns the new watermark.
func (e *Engine) retireFrom(ctx context.Context, top, floor int, checks *int, empty func(context.Context, int) (bool, error)) (int, error) {
	for top > floor && *checks < MaxRetirePerRun {
		*checks++
		ok, err := empty(ctx, top-1)
		if err != nil || !ok {
			return top, err
		}
		top--
	}
	return top, nil
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

// noRow reports whether partition p holds no action row, no retention
// journal item and no held rows' listing (H#, R#: one range, nothing else
// sorts between them).
func (e *Engine) noRow(ctx context.Context, p int) (bool, error) {
	for _, r := range [][2]string{{"A#", "A#~"}, {heldPrefix, journalPrefix + "~"}} {
		q, err := e.db.Query(ctx, &dynamodb.QueryInput{
			TableName: e.table(), KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :a AND :z"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avS(partitionPK(p)), ":a": avS(r[0]), ":z": avS(r[1])},
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
