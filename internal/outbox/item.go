package outbox

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute and index names of the table (docs/adr/0001-table-layout.md and
// its successors). The CDK stack and `ferry table create` use the same names.
const (
	attrPK        = "pk"
	attrSK        = "sk"
	attrID        = "id"
	attrKind      = "kind"
	attrVariant   = "var"
	attrWorkspace = "ws"
	attrLane      = "lane"
	attrIKey      = "ikey"
	attrSubject   = "subj"
	attrState     = "st"
	attrAttempt   = "att"
	attrMax       = "max"
	attrEpoch     = "ep"
	attrPrev      = "prev"
	attrPayload   = "pl"
	attrCreated   = "ca"
	attrNext      = "nat"
	attrLease     = "lx"
	attrOwner     = "own"
	attrWrite     = "wsa"
	attrWriteHead = "wsh" // a member's claim fence: the seq of its group's head (ADR 0015)
	attrExpires   = "xa"
	attrEnded     = "ea"
	attrStop      = "sr"
	attrRef       = "ref"
	attrTTL       = "ttl"
	attrDuePK     = "due_pk"
	attrDueSK     = "due_sk"
	attrSubPK     = "sub_pk"
	attrDefers    = "dfn" // deferrals in a row (absent when none)
	attrDeferAt   = "dfs" // when the first deferral of the row's streak was written (Unix ms)
	// end_pk/end_sk (the `ended` index keys) are no longer written: the
	// retention journal (journal.go, design.md §3.6) replaced the index.

	// Rows other than actions.
	attrSeqNext      = "next"  // SEQ: the next unreserved seq
	attrClaimVersion = "cv"    // FENCE: claim_version
	attrFenceOwner   = "owner" // FENCE: holder
	attrFenceLease   = "olx"   // FENCE: holder's lease (Unix ms)
	attrInflight     = "inf"   // FENCE: seq -> lease expiry (Unix ms) of claimed actions out of due (design.md §3.3)
	attrTailSeq      = "seq"   // lane tail: the newest live action's seq
	attrTailPart     = "p"     // lane tail: the partition of the lane's live members (ADR 0011)

	// IndexDue, IndexSubject and IndexWorkspace are the global secondary
	// indexes (design.md §3.8).
	IndexDue       = "due"
	IndexSubject   = "subject"
	IndexWorkspace = "workspace"

	skSeq   = "SEQ"
	skFence = "FENCE"
	skIdem  = "K"
	// skLaneTail is the sort key of a lane's tail, whose pk is the lane's
	// own (laneTailPK; ADR 0011).
	skLaneTail = "L"
)

func partitionPK(p int) string  { return "P#" + strconv.Itoa(p) }
func actionSK(seq int64) string { return fmt.Sprintf("A#%020d", seq) }

// laneTailPK is the pk of a lane's tail (design.md §3.4): the lane's own
// key, out of every partition.
func laneTailPK(ws, lane string) string { return "L#" + ws + "#" + lane }
func idemPK(ws, key string) string      { return "K#" + ws + "#" + key }
func subPK(ws, subj string) string      { return ws + "#" + subj }

// LanePartition is the partition of a lane: FNV-1a 32 of the workspace and
// lane key, modulo the partition count. The workspace is part of a lane's
// identity, so two tenants' lanes of the same name do not serialise.
func LanePartition(workspace, lane string, partitions int) int {
	h := fnv.New32a()
	h.Write([]byte(workspace))
	h.Write([]byte{0})
	h.Write([]byte(lane))
	return int(h.Sum32() % uint32(partitions))
}

func avS(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func avN(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
func avMs(t time.Time) types.AttributeValue { return avN(t.UnixMilli()) }

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: avS(pk), attrSK: avS(sk)}
}

func actionKey(p int, seq int64) map[string]types.AttributeValue {
	return key(partitionPK(p), actionSK(seq))
}

func getS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(item map[string]types.AttributeValue, name string) int64 {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

func getMs(item map[string]types.AttributeValue, name string) time.Time {
	if _, ok := item[name]; !ok {
		return time.Time{}
	}
	return time.UnixMilli(getN(item, name)).UTC()
}

func has(item map[string]types.AttributeValue, name string) bool {
	_, ok := item[name]
	return ok
}

// actionItem encodes a new action as its base-table item.
func actionItem(a *Action) map[string]types.AttributeValue {
	it := actionKey(a.Partition, a.Seq)
	it[attrID] = avS(a.ID)
	it[attrKind] = avS(a.Kind)
	if a.Variant != "" {
		it[attrVariant] = avS(a.Variant)
	}
	if a.WorkspaceID != "" {
		it[attrWorkspace] = avS(a.WorkspaceID)
	}
	if a.LaneKey != "" {
		it[attrLane] = avS(a.LaneKey)
	}
	if a.IdempotencyKey != "" {
		it[attrIKey] = avS(a.IdempotencyKey)
	}
	if a.SubjectID != "" {
		it[attrSubject] = avS(a.SubjectID)
		it[attrSubPK] = avS(subPK(a.WorkspaceID, a.SubjectID))
	}
	it[attrState] = avS(string(a.State))
	it[attrAttempt] = avN(int64(a.Attempt))
	it[attrMax] = avN(int64(a.MaxAttempts))
	it[attrEpoch] = avN(a.Epoch)
	if a.PrevSeq != 0 {
		it[attrPrev] = avN(a.PrevSeq)
	}
	if len(a.Payload) > 0 {
		it[attrPayload] = avS(string(a.Payload))
	}
	it[attrCreated] = avMs(a.CreatedAt)
	it[attrNext] = avMs(a.NextAttemptAt)
	if !a.ExpiresAt.IsZero() {
		it[attrExpires] = avMs(a.ExpiresAt)
	}
	switch {
	case a.State == StateADMITTED:
		it[attrDuePK] = avS(duePK(a.Partition))
		it[attrDueSK] = avS(timeSK(a.NextAttemptAt, a.Seq))
	case a.State == StatePROPOSED && !a.ExpiresAt.IsZero():
		// A proposal is never claimed, but the reaper must find it when it
		// expires.
		it[attrDuePK] = avS(duePK(a.Partition))
		it[attrDueSK] = avS(timeSK(a.ExpiresAt, a.Seq))
	}
	return it
}

// seqFromActionSK reads the seq back from an action row's sort key.
func seqFromActionSK(sk string) (int64, bool) {
	if len(sk) < 3 || sk[:2] != "A#" {
		return 0, false
	}
	seq, err := strconv.ParseInt(sk[2:], 10, 64)
	return seq, err == nil
}

// decodeAction reads an action item (from the base table or the due index's
// projection). ok is false for rows that are not actions.
func decodeAction(it map[string]types.AttributeValue) (Action, bool) {
	pk, sk := getS(it, attrPK), getS(it, attrSK)
	if !strings.HasPrefix(pk, "P#") || !strings.HasPrefix(sk, "A#") {
		return Action{}, false
	}
	p, err := strconv.Atoi(pk[2:])
	seq, ok := seqFromActionSK(sk)
	if err != nil || !ok {
		return Action{}, false
	}
	a := Action{
		ID:             getS(it, attrID),
		Kind:           getS(it, attrKind),
		Variant:        getS(it, attrVariant),
		WorkspaceID:    getS(it, attrWorkspace),
		LaneKey:        getS(it, attrLane),
		IdempotencyKey: getS(it, attrIKey),
		SubjectID:      getS(it, attrSubject),
		State:          State(getS(it, attrState)),
		Attempt:        int(getN(it, attrAttempt)),
		MaxAttempts:    int(getN(it, attrMax)),
		Epoch:          getN(it, attrEpoch),
		StopReason:     StopReason(getS(it, attrStop)),
		ReadbackRef:    getS(it, attrRef),
		Partition:      p,
		Seq:            seq,
		PrevSeq:        getN(it, attrPrev),
		CreatedAt:      getMs(it, attrCreated),
		NextAttemptAt:  getMs(it, attrNext),
		LeaseExpiresAt: getMs(it, attrLease),
		WriteStartedAt: getMs(it, attrWrite),
		ExpiresAt:      getMs(it, attrExpires),
		EndedAt:        getMs(it, attrEnded),
		Owner:          getS(it, attrOwner),
		Deferrals:      int(getN(it, attrDefers)),
		DeferredSince:  getMs(it, attrDeferAt),
	}
	if pl := getS(it, attrPayload); pl != "" {
		a.Payload = json.RawMessage(pl)
	}
	return a, true
}

// expiredByTTL reports whether DynamoDB's TTL would have deleted the item:
// TTL deletes days late, so reads treat ttl < now as gone.
func expiredByTTL(it map[string]types.AttributeValue, now time.Time) bool {
	return has(it, attrTTL) && getN(it, attrTTL) < now.Unix()
}
