package sim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/outbox"
)

// A model of the laned enqueue of a build before ADR 0011 (Options.Upgrade):
// what it read and wrote, from internal/outbox/enqueue.go, lanelink.go,
// item.go and idemfirst.go at beb9e4e (the parent of ADR 0011's first
// commit), not the engine's code. Such a build keeps a lane's tail in the
// lane's partition under its own Config.Partitions (`P#<p>` /
// `L#<ws>#<lane>`, attribute `seq` only), never reads the tail's own item
// nor the partition map, and conditions the tail's put on the seq it read
// (or on its absence). Everything else of that build (keyless enqueues,
// drainers, the reaper) wrote what the new build writes for the rows it
// shares, so the run uses the engine for them.

// preLanedEnqueue enqueues t (laned, a new token) as the build before ADR
// 0011 did: read the lane's tail in its partition (consistent), reserve a
// seq from the partition's counter, then one transaction of the action's
// put, its idempotency record's put (keyed) and the tail's put. A refused
// transaction is prepared again from fresh reads, eight times at most
// (EnqueueBatch's rounds).
func (w *world) preLanedEnqueue(ctx context.Context, h *host, ep outbox.EnqueueParams, variant string) (*outbox.Action, error) {
	db := w.wrap
	table := aws.String(w.cfg.Table)
	part := preLanePartition(ep.WorkspaceID, ep.LaneKey, h.parts)
	pk := "P#" + strconv.Itoa(part)
	tailKey := map[string]types.AttributeValue{"pk": avS(pk), "sk": avS("L#" + ep.WorkspaceID + "#" + ep.LaneKey)}
	ident, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": avS("M#table"), "sk": avS("M")}})
	if err != nil {
		return nil, fmt.Errorf("error reading the table's identity: %w", err)
	}
	tableID := uint64(num(ident.Item, "tid"))
	for round := 0; ; round++ {
		got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: tailKey, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, fmt.Errorf("error reading lane tail of partition %d: %w", part, err)
		}
		prev := num(got.Item, "seq")
		ctr, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: table, Key: map[string]types.AttributeValue{"pk": avS(pk), "sk": avS("SEQ")},
			UpdateExpression:          aws.String("ADD #n :b"),
			ExpressionAttributeNames:  map[string]string{"#n": "next"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":b": avN(1)},
			ReturnValues:              types.ReturnValueUpdatedNew,
		})
		if err != nil {
			return nil, fmt.Errorf("error reserving seq block of partition %d: %w", part, err)
		}
		seq := num(ctr.Attributes, "next")
		now := h.now().UTC().Truncate(time.Millisecond)
		a := &outbox.Action{ID: outbox.NewActionID(now, tableID, part, seq), Partition: part, Seq: seq, PrevSeq: prev}
		items := []types.TransactWriteItem{{Put: &types.Put{TableName: table, Item: preActionItem(a, ep, variant, now, w.cfg.MaxAttempts),
			ConditionExpression: aws.String("attribute_not_exists(pk)")}}}
		if ep.IdempotencyKey != "" {
			rec := map[string]types.AttributeValue{"pk": avS("K#" + ep.WorkspaceID + "#" + ep.IdempotencyKey), "sk": avS("K"), "id": avS(a.ID)}
			if ep.SubjectID != "" {
				rec["sub_pk"] = avS(ep.WorkspaceID + "#" + ep.SubjectID)
			}
			items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: table, Item: rec,
				ConditionExpression: aws.String("attribute_not_exists(pk)")}})
		}
		tail := map[string]types.AttributeValue{"pk": tailKey["pk"], "sk": tailKey["sk"], "seq": avN(seq)}
		tput := &types.Put{TableName: table, Item: tail, ConditionExpression: aws.String("attribute_not_exists(pk)")}
		if prev != 0 {
			tput.ConditionExpression = aws.String("#s = :old")
			tput.ExpressionAttributeNames = map[string]string{"#s": "seq"}
			tput.ExpressionAttributeValues = map[string]types.AttributeValue{":old": avN(prev)}
		}
		items = append(items, types.TransactWriteItem{Put: tput})
		_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			return a, nil
		}
		var tc *types.TransactionCanceledException
		if !errors.As(err, &tc) || round >= 8 {
			return nil, fmt.Errorf("error enqueueing: %w", err)
		}
		// The tail moved (or a seq collided): prepare again. The token is
		// new, so its idempotency key was never seen.
	}
}

// preLanePartition is LanePartition as the build before ADR 0011 computed
// it (FNV-1a 32 of workspace, NUL, lane; modulo its own count).
func preLanePartition(ws, lane string, partitions int) int {
	f := fnv.New32a()
	f.Write([]byte(ws))
	f.Write([]byte{0})
	f.Write([]byte(lane))
	return int(f.Sum32() % uint32(partitions))
}

// preActionItem is the action row the build before ADR 0011 wrote
// (item.go actionItem at beb9e4e) for a new laned action.
func preActionItem(a *outbox.Action, ep outbox.EnqueueParams, variant string, now time.Time, maxAttempts int) map[string]types.AttributeValue {
	it := map[string]types.AttributeValue{
		"pk": avS("P#" + strconv.Itoa(a.Partition)), "sk": avS(fmt.Sprintf("A#%020d", a.Seq)),
		"id": avS(a.ID), "kind": avS(ep.Kind), "ws": avS(ep.WorkspaceID), "lane": avS(ep.LaneKey),
		"att": avN(0), "ep": avN(0), "pl": avS(string(ep.Payload)),
		"ca": avN(now.UnixMilli()), "nat": avN(now.UnixMilli()),
	}
	if ep.MaxAttempts != 0 {
		maxAttempts = ep.MaxAttempts
	}
	it["max"] = avN(int64(maxAttempts))
	if variant != "" {
		it["var"] = avS(variant)
	}
	if ep.IdempotencyKey != "" {
		it["ikey"] = avS(ep.IdempotencyKey)
	}
	if ep.SubjectID != "" {
		it["subj"] = avS(ep.SubjectID)
		it["sub_pk"] = avS(ep.WorkspaceID + "#" + ep.SubjectID)
	}
	if a.PrevSeq != 0 {
		it["prev"] = avN(a.PrevSeq)
	}
	if !ep.ExpiresAt.IsZero() {
		it["xa"] = avN(ep.ExpiresAt.UTC().UnixMilli())
	}
	st := outbox.StateADMITTED
	if ep.Propose {
		st = outbox.StatePROPOSED
	}
	it["st"] = avS(string(st))
	switch {
	case st == outbox.StateADMITTED:
		it["due_pk"], it["due_sk"] = avS("D#"+strconv.Itoa(a.Partition)), avS(fmt.Sprintf("%013d#%020d", now.UnixMilli(), a.Seq))
	case !ep.ExpiresAt.IsZero():
		it["due_pk"], it["due_sk"] = avS("D#"+strconv.Itoa(a.Partition)), avS(fmt.Sprintf("%013d#%020d", ep.ExpiresAt.UTC().UnixMilli(), a.Seq))
	}
	return it
}

func avS(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func avN(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
