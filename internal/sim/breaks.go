package sim

import (
	"maps"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The rewrites of the broken variants work on the expressions the engine
// builds (internal/outbox end.go, attempt.go, claim.go); each removes a
// guard and the names and values only that guard used.

var exprToken = regexp.MustCompile(`[#:][A-Za-z0-9_]+`)

// prune drops names and values no expression uses any more (DynamoDB
// refuses unused ones).
func prune(names map[string]string, vals map[string]types.AttributeValue, exprs ...*string) (map[string]string, map[string]types.AttributeValue) {
	used := map[string]bool{}
	for _, e := range exprs {
		if e != nil {
			for _, t := range exprToken.FindAllString(*e, -1) {
				used[t] = true
			}
		}
	}
	var n map[string]string
	if names != nil {
		n = map[string]string{}
		for k, v := range names {
			if used[k] {
				n[k] = v
			}
		}
	}
	var v map[string]types.AttributeValue
	if vals != nil {
		v = map[string]types.AttributeValue{}
		for k, x := range vals {
			if used[k] {
				v[k] = x
			}
		}
	}
	return n, v
}

const heldGuard = "#st = :cst AND #ep = :cep AND #own = :cown"

// deferralSet is how a deferral's write counts its run (attempt.go).
const deferralSet = ", #dfn = if_not_exists(#dfn, :zero) + :one, #dfs = if_not_exists(#dfs, :dsince)"

// breakExprs applies the broken variants to one update's expressions.
// It reports whether it changed anything.
func (w *world) breakExprs(cond, upd **string) bool {
	b := w.opt.Broken
	changed := false
	c, u := aws.ToString(*cond), aws.ToString(*upd)
	if b&BreakEpochCondition != 0 && strings.Contains(c, heldGuard) {
		c = strings.ReplaceAll(c, heldGuard, "#st = :cst")
		changed = true
	}
	if b&BreakClaimFence != 0 && strings.Contains(u, "#cv = if_not_exists") {
		c = ""
		changed = true
	}
	if b&BreakKeepPayload != 0 && strings.Contains(u, "REMOVE #pl, ") {
		u = strings.Replace(u, "REMOVE #pl, ", "REMOVE ", 1)
		changed = true
	}
	if b&BreakAdmitAnyState != 0 && strings.Contains(c, "#st = :prop AND ") {
		c = strings.Replace(c, "#st = :prop AND ", "", 1)
		changed = true
	}
	if b&BreakDueKeysDropped != 0 && strings.HasPrefix(u, "SET #st = :adm, #nat = :at, #dpk = :dpk, #dsk = :dsk") {
		u = strings.Replace(u, "SET #st = :adm, #nat = :at, #dpk = :dpk, #dsk = :dsk", "SET #st = :adm, #nat = :at", 1)
		changed = true
	}
	if b&BreakUnboundedDeferrals != 0 && strings.Contains(u, deferralSet) {
		u = strings.Replace(u, deferralSet, "", 1)
		c = strings.Replace(c, " AND ((attribute_not_exists(#dfn) OR #dfn < :dmax) AND (attribute_not_exists(#dfs) OR #dfs > :dcut))", "", 1)
		changed = true
	}
	if !changed {
		return false
	}
	if c == "" {
		*cond = nil
	} else {
		*cond = aws.String(c)
	}
	*upd = aws.String(u)
	return true
}

func (w *world) breakUpdate(_ *proc, in *dynamodb.UpdateItemInput) *dynamodb.UpdateItemInput {
	if w.opt.Broken == 0 {
		return in
	}
	in = w.breakHeld(in)
	if str(in.Key, "sk") == "FENCE" && strings.Contains(aws.ToString(in.UpdateExpression), "#inf.#s") {
		return w.breakFenceUpdate(in)
	}
	cp := *in
	if !w.breakExprs(&cp.ConditionExpression, &cp.UpdateExpression) {
		return in
	}
	cp.ExpressionAttributeNames, cp.ExpressionAttributeValues = prune(maps.Clone(in.ExpressionAttributeNames),
		maps.Clone(in.ExpressionAttributeValues), cp.ConditionExpression, cp.UpdateExpression)
	return &cp
}

// proposes reports whether a transaction puts a PROPOSED action.
func proposes(items []types.TransactWriteItem) bool {
	for _, it := range items {
		if it.Put != nil && strings.HasPrefix(str(it.Put.Item, "sk"), "A#") && str(it.Put.Item, "st") == "PROPOSED" {
			return true
		}
	}
	return false
}

func (w *world) breakTransact(in *dynamodb.TransactWriteItemsInput) *dynamodb.TransactWriteItemsInput {
	b := w.opt.Broken
	if b == 0 {
		return in
	}
	cp := *in
	cp.TransactItems = nil
	caller := false
	for _, it := range in.TransactItems {
		caller = caller || it.Put != nil && aws.ToString(it.Put.TableName) == appTable
	}
	for _, it := range in.TransactItems {
		if b&BreakItemsWithoutAction != 0 && caller && it.Put != nil && strings.HasPrefix(str(it.Put.Item, "sk"), "A#") {
			continue
		}
		if cc := it.ConditionCheck; cc != nil {
			sk := str(cc.Key, "sk")
			if b&BreakPredecessorCheck != 0 && strings.HasPrefix(sk, "A#") {
				continue
			}
			if b&BreakClaimFence != 0 && sk == "FENCE" {
				continue
			}
		}
		if pt := it.Put; pt != nil && b&BreakTailLies != 0 && proposes(in.TransactItems) && str(pt.Item, "sk") == "L" && strings.HasPrefix(str(pt.Item, "pk"), "L#") {
			// The lane's tail names the partition after its members' (only
			// behind a proposal: lanes of running members would break order
			// first, which the lanes checker catches).
			pc := *pt
			pc.Item = maps.Clone(pt.Item)
			pc.Item["p"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(num(pt.Item, "p")+1, 10)}
			it = types.TransactWriteItem{Put: &pc}
		}
		if u := it.Update; u != nil && b&BreakInflightLost != 0 && str(u.Key, "sk") == "FENCE" {
			uc := *u
			upd := aws.ToString(u.UpdateExpression)
			if i := strings.Index(upd, "REMOVE "); i >= 0 {
				upd = upd[i:]
			} else {
				upd = "SET #o = :o"
			}
			uc.UpdateExpression = aws.String(upd)
			uc.ExpressionAttributeNames, uc.ExpressionAttributeValues = prune(maps.Clone(u.ExpressionAttributeNames),
				maps.Clone(u.ExpressionAttributeValues), uc.ConditionExpression, uc.UpdateExpression)
			u = &uc
			it = types.TransactWriteItem{Update: u}
		}
		if b&BreakNoIdempotencyRecord != 0 && it.Put != nil && str(it.Put.Item, "sk") == "K" {
			continue
		}
		if b&BreakTailCondition != 0 && it.Put != nil && isTailKey(it.Put.Item) {
			pc := *it.Put
			pc.ConditionExpression, pc.ExpressionAttributeNames, pc.ExpressionAttributeValues = nil, nil, nil
			it = types.TransactWriteItem{Put: &pc}
		}
		if u := it.Update; u != nil && b&BreakClaimFence != 0 && str(u.Key, "sk") == "FENCE" {
			// The claim's fence item (design.md §3.3: an Update that also records
			// the in-flight entries) loses its version check.
			uc := *u
			uc.ConditionExpression = nil
			uc.ExpressionAttributeNames, uc.ExpressionAttributeValues = prune(maps.Clone(u.ExpressionAttributeNames),
				maps.Clone(u.ExpressionAttributeValues), uc.UpdateExpression)
			it = types.TransactWriteItem{Update: &uc}
		} else if u != nil {
			uc := *u
			if w.breakExprs(&uc.ConditionExpression, &uc.UpdateExpression) {
				uc.ExpressionAttributeNames, uc.ExpressionAttributeValues = prune(maps.Clone(u.ExpressionAttributeNames),
					maps.Clone(u.ExpressionAttributeValues), uc.ConditionExpression, uc.UpdateExpression)
				it = types.TransactWriteItem{Update: &uc}
			}
		}
		cp.TransactItems = append(cp.TransactItems, it)
	}
	return &cp
}

// breakFenceUpdate breaks a claim's fence update (ADR 0016: the update of
// the fence row that records the claimed actions' in-flight entries before
// their own updates are sent, design.md §3.3): BreakClaimFence drops its
// version check, BreakInflightLost the entries it sets.
func (w *world) breakFenceUpdate(in *dynamodb.UpdateItemInput) *dynamodb.UpdateItemInput {
	b := w.opt.Broken
	if b&(BreakClaimFence|BreakInflightLost) == 0 {
		return in
	}
	cp := *in
	if b&BreakClaimFence != 0 {
		cp.ConditionExpression = nil
	}
	if b&BreakInflightLost != 0 {
		upd := aws.ToString(in.UpdateExpression)
		if i := strings.Index(upd, "REMOVE "); i >= 0 {
			upd = upd[i:]
		} else {
			upd = "SET #o = :o"
		}
		cp.UpdateExpression = aws.String(upd)
	}
	cp.ExpressionAttributeNames, cp.ExpressionAttributeValues = prune(maps.Clone(in.ExpressionAttributeNames),
		maps.Clone(in.ExpressionAttributeValues), cp.ConditionExpression, cp.UpdateExpression)
	return &cp
}
