package outbox

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The claim fence row (design.md §3.3), `P#<partition>`/`FENCE`: its
// requests. Attributes: cv (claim version), owner, olx (the holder's lease,
// Unix ms) and inf (the in-flight map, seq -> lease expiry in Unix ms).
// What a holder knows of the row is its fenceHold (inflight.go).

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

func infName(seq int64) string { return strconv.FormatInt(seq, 10) }

// decodeInflight reads a fence row's in-flight map.
func decodeInflight(it map[string]types.AttributeValue) map[int64]time.Time {
	out := map[int64]time.Time{}
	m, ok := it[attrInflight].(*types.AttributeValueMemberM)
	if !ok {
		return out
	}
	for k, v := range m.Value {
		seq, err := strconv.ParseInt(k, 10, 64)
		n, ok := v.(*types.AttributeValueMemberN)
		if err != nil || !ok {
			continue
		}
		ms, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			continue
		}
		out[seq] = time.UnixMilli(ms).UTC()
	}
	return out
}

// fenceTake takes the claim fence of a partition (see FenceTake) and
// returns the hold with the fence row's in-flight map (ReturnValues ALL_NEW
// costs nothing). The map is created empty when missing, so that later
// writes can set and remove its entries.
func (e *Engine) fenceTake(ctx context.Context, p int, owner string, until time.Time) (*fenceHold, error) {
	now := e.clk.Now()
	out, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: e.table(),
		Key:       key(partitionPK(p), skFence),
		UpdateExpression: aws.String(
			"SET #cv = if_not_exists(#cv, :zero) + :one, #o = :o, #olx = :until, #inf = if_not_exists(#inf, :empty)"),
		ConditionExpression: aws.String(
			"attribute_not_exists(#cv) OR #olx <= :now OR #o = :o"),
		ExpressionAttributeNames: map[string]string{
			"#cv": attrClaimVersion, "#o": attrFenceOwner, "#olx": attrFenceLease, "#inf": attrInflight,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":zero": avN(0), ":one": avN(1), ":o": avS(owner), ":until": avMs(until), ":now": avMs(now),
			":empty": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}},
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	if err != nil {
		if isCondFailed(err) {
			return nil, fmt.Errorf("partition %d: %w", p, ErrFenceRefused)
		}
		return nil, fmt.Errorf("error taking claim fence of partition %d: %w", p, err)
	}
	h := newFenceHold(p, owner, getN(out.Attributes, attrClaimVersion), decodeInflight(out.Attributes))
	h.blk = decodeBlocked(out.Attributes)
	return h, nil
}

// fenceRetake takes the fence again for the same holder (a long drain: a
// new version, a longer lease, design.md §5). What the holder saw settle stays
// true only if nobody else held the fence in between, that is if the version
// rose by exactly one; otherwise that knowledge goes, and the map is taken
// as the row now has it.
func (e *Engine) fenceRetake(ctx context.Context, h *fenceHold, until time.Time) error {
	nh, err := e.fenceTake(ctx, h.p, h.owner, until)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if nh.version != h.version+1 {
		h.settled, h.looked = map[int64]bool{}, map[int64]bool{}
	}
	h.version, h.inf, h.blk = nh.version, nh.inf, nh.blk
	return nil
}

// fenceExtend lengthens the holder's lease on the claim fence to until,
// for a claim-fenced lane member about to be called near the lease's end
// (fenceCovers, ADR 0015). It keeps the version and is conditioned on the
// version and owner the holder claimed under: it lands only when no other
// drainer took the fence since (every take raises the version), so nobody
// else can have claimed in the partition since, even if the lease ran out
// meanwhile. ok is false when it was refused or got no answer.
func (e *Engine) fenceExtend(ctx context.Context, h *fenceHold, until time.Time) bool {
	h.mu.Lock()
	version := h.version
	h.mu.Unlock()
	_, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 e.table(),
		Key:                       key(partitionPK(h.p), skFence),
		UpdateExpression:          aws.String("SET #olx = :until"),
		ConditionExpression:       aws.String("#cv = :v AND #o = :o"),
		ExpressionAttributeNames:  map[string]string{"#cv": attrClaimVersion, "#o": attrFenceOwner, "#olx": attrFenceLease},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": avN(version), ":o": avS(h.owner), ":until": avMs(until)},
	})
	if err != nil {
		return false
	}
	h.setLeaseEnd(until)
	return true
}

// fenceRelease ends the hold's lease on the fence and removes the entries
// it saw settle (and writes the blocked run it found or dropped), in one
// write conditioned on still holding the fence.
func (e *Engine) fenceRelease(ctx context.Context, h *fenceHold) error {
	names := map[string]string{"#cv": attrClaimVersion, "#o": attrFenceOwner, "#olx": attrFenceLease}
	vals := map[string]types.AttributeValue{":v": avN(h.version), ":o": avS(h.owner), ":now": avMs(e.clk.Now())}
	set, rmParts := []string{"#olx = :now"}, []string(nil)
	rm := h.removable(nil)
	if len(rm) > 0 {
		rmParts = append(rmParts, infPaths(rm, "#r", names))
	}
	bw := h.blkPending()
	set, rmParts = bw.render(set, rmParts, names, vals)
	_, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 e.table(),
		Key:                       key(partitionPK(h.p), skFence),
		UpdateExpression:          aws.String(joinUpdate(set, rmParts)),
		ConditionExpression:       aws.String("#cv = :v AND #o = :o"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
	})
	if err != nil && !isCondFailed(err) {
		return fmt.Errorf("error releasing claim fence of partition %d: %w", h.p, err)
	}
	if err == nil {
		h.wrote(nil, rm)
		h.wroteBlk(bw)
	}
	return nil
}

// infPaths renders map entry paths for an update expression ("#inf.#r0,
// #inf.#r1"), adding their names.
func infPaths(seqs []int64, prefix string, names map[string]string) string {
	names["#inf"] = attrInflight
	s := ""
	for i, seq := range seqs {
		n := prefix + strconv.Itoa(i)
		names[n] = infName(seq)
		if i > 0 {
			s += ", "
		}
		s += "#inf." + n
	}
	return s
}

// readFenceHold reads the fence row for a claim made without a hold (a
// caller of the exported FenceTake and Claim): the claim still finds the
// expired entries; its transaction checks the version as always.
func (e *Engine) readFenceHold(ctx context.Context, p int, owner string, version int64) (*fenceHold, error) {
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: e.table(), Key: key(partitionPK(p), skFence), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("error reading claim fence of partition %d: %w", p, err)
	}
	h := newFenceHold(p, owner, version, decodeInflight(out.Item))
	h.blk = decodeBlocked(out.Item)
	return h, nil
}

// fenceUpdate renders a fence write's update expression (a claim's fence
// update, design.md §5 step 4, or the holder's lone map write): set entries,
// then removals, and the blocked run's write bw.
func fenceUpdate(h *fenceHold, set map[int64]time.Time, rm []int64, bw blkWrite) (string, map[string]string, map[string]types.AttributeValue) {
	names := map[string]string{"#cv": attrClaimVersion, "#o": attrFenceOwner, "#inf": attrInflight}
	vals := map[string]types.AttributeValue{":v": avN(h.version), ":o": avS(h.owner)}
	seqs := make([]int64, 0, len(set))
	for seq := range set {
		seqs = append(seqs, seq)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	var setParts, rmParts []string
	for i, seq := range seqs {
		n, v := "#s"+strconv.Itoa(i), ":s"+strconv.Itoa(i)
		names[n], vals[v] = infName(seq), avMs(set[seq])
		setParts = append(setParts, "#inf."+n+" = "+v)
	}
	if len(rm) > 0 {
		rmParts = append(rmParts, infPaths(rm, "#r", names))
	}
	setParts, rmParts = bw.render(setParts, rmParts, names, vals)
	return joinUpdate(setParts, rmParts), names, vals
}

// fitFence bounds a claim's fence write so that its update expression stays
// under maxFenceExpr: the claimed entries always go (a claim takes fewer
// than 100 actions: Config.BatchSize), then removals, then renewals, as
// many as fit. What is left out waits: a removal for the holder's next
// write, a renewal for the next claim's read of the entry.
func fitFence(h *fenceHold, claimed, renew map[int64]time.Time, rm []int64) (map[int64]time.Time, []int64) {
	set := make(map[int64]time.Time, len(claimed)+len(renew))
	for seq, t := range claimed {
		set[seq] = t
	}
	// Sizes of one part: "#inf.#sNNN = :sNNN, " and "#inf.#rNNN, ".
	size := len(" REMOVE ") + 4 + 20*len(set)
	n := 0
	for n < len(rm) && size+12 <= maxFenceExpr {
		size += 12
		n++
	}
	rm = rm[:n]
	rs := make([]int64, 0, len(renew))
	for seq := range renew {
		if _, ok := set[seq]; !ok {
			rs = append(rs, seq)
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i] < rs[j] })
	for _, seq := range rs {
		if size+20 > maxFenceExpr {
			break
		}
		size += 20
		set[seq] = renew[seq]
	}
	return set, rm
}

// inflightWrite writes the holder's pending removals and renewals alone, when
// a claim found nothing to take: a big map still shrinks claim by claim.
// Refused (the fence moved on) it does nothing; the next holder reads the
// entries again.
func (e *Engine) inflightWrite(ctx context.Context, h *fenceHold, renew map[int64]time.Time) error {
	set, rm := fitFence(h, nil, renew, h.removable(renew))
	bw := h.blkPending()
	if len(set) == 0 && len(rm) == 0 && bw.set == nil && !bw.drop {
		return nil
	}
	upd, names, vals := fenceUpdate(h, set, rm, bw)
	_, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 e.table(),
		Key:                       key(partitionPK(h.p), skFence),
		UpdateExpression:          aws.String(upd),
		ConditionExpression:       aws.String("#cv = :v AND #o = :o"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
	})
	if err != nil {
		if isCondFailed(err) {
			return nil
		}
		return fmt.Errorf("error updating in-flight map of partition %d: %w", h.p, err)
	}
	h.wrote(set, rm)
	h.wroteBlk(bw)
	return nil
}
