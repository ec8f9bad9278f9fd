package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Delivery evidence (design.md §3.x): what a provider's delivery events
// (Amazon SES's Send, Delivery, Bounce, …) say about an action's effect,
// kept in a row of its own beside the action, so the action stays as it
// ended:
//
//	pk = P#<partition>, sk = V#<seq, 20 digits>
//	st (S): the most telling status so far; at (N, ms): its time; dt (S): its detail
//	ev (S): every distinct event, JSON, oldest first, at most maxDeliveryEvents
//	uc (BOOL): counted once as an UNCERTAIN action confirmed
//	ver (N): the row's version (each write is conditioned on the one read)
//	ttl (N): the action's TTL (its expiry once ended; else now + the kind's retention)
//
// Only kinds whose KindSpec.DeliveryEvidence is set have it. Retention and
// erasure delete it with its action.

// DeliveryStatus is what delivery events say happened to an action's effect.
// The string values are part of the public contract.
type DeliveryStatus string

// The delivery statuses, from the least to the most telling (deliveryRank).
const (
	DeliverySent       DeliveryStatus = "SENT"       // the provider accepted it
	DeliveryDelayed    DeliveryStatus = "DELAYED"    // delivery is delayed; the provider keeps trying
	DeliveryDelivered  DeliveryStatus = "DELIVERED"  // the recipient's server accepted it
	DeliveryBounced    DeliveryStatus = "BOUNCED"    // the recipient's server refused it for good
	DeliveryComplained DeliveryStatus = "COMPLAINED" // delivered, and the recipient marked it as spam
	DeliveryRejected   DeliveryStatus = "REJECTED"   // the provider accepted the call but refused to send it
)

// deliveryRank orders the statuses: the evidence shows the most telling
// event. A bounce or a complaint (of one recipient) outranks a delivery (to
// another), a delivery a delay; a rejection means nothing went out at all.
var deliveryRank = map[DeliveryStatus]int{
	DeliverySent: 1, DeliveryDelayed: 2, DeliveryDelivered: 3, DeliveryBounced: 4, DeliveryComplained: 5, DeliveryRejected: 6,
}

// Valid reports whether s is one of the statuses.
func (s DeliveryStatus) Valid() bool { return deliveryRank[s] > 0 }

// WentOut reports whether the status proves the provider took the effect
// on (everything but a rejection): an UNCERTAIN action with such evidence
// did go out.
func (s DeliveryStatus) WentOut() bool { return s.Valid() && s != DeliveryRejected }

// DeliveryEvent is one provider event about an action's effect.
type DeliveryEvent struct {
	Status DeliveryStatus `json:"status"`
	At     time.Time      `json:"at"`
	Detail string         `json:"detail,omitempty"` // no personal data: counts, types, codes
	// Ref is the provider's reference of the effect the event is about
	// (SES: the message id), checked against the action's readback_ref
	// when both are known; never stored.
	Ref string `json:"-"`
}

// Delivery is an action's delivery evidence: its most telling event (the
// status, when and the detail) and every distinct event recorded.
type Delivery struct {
	DeliveryEvent
	Events []DeliveryEvent
}

// maxDeliveryEvents bounds the events a row lists (an email to many
// recipients has an event per recipient and type): the oldest go first.
const maxDeliveryEvents = 25

// DeliveryOutcome says what DeliveryRecord did with an event.
type DeliveryOutcome string

// The outcomes of DeliveryRecord.
const (
	DeliveryRecorded  DeliveryOutcome = "RECORDED"
	DeliveryDuplicate DeliveryOutcome = "DUPLICATE" // the same event was recorded before (providers deliver events at least once)
	DeliveryUnknown   DeliveryOutcome = "UNKNOWN"   // no such action (never was, past its retention, or of a kind without evidence)
	DeliveryErased    DeliveryOutcome = "ERASED"    // its action was erased: nothing is kept
	// DeliveryMismatch: the event names another effect than the action's
	// (its Ref is not the action's readback_ref); nothing is recorded.
	DeliveryMismatch DeliveryOutcome = "MISMATCH"
)

// DeliveryRecordResult is what DeliveryRecord did.
type DeliveryRecordResult struct {
	Outcome DeliveryOutcome
	// Action is the action as read (RECORDED and DUPLICATE).
	Action *Action
	// UncertainConfirmed: the action ended UNCERTAIN and this is the first
	// recorded event proving that it went out (counted once per action).
	UncertainConfirmed bool
}

const (
	attrDelStatus  = "st"
	attrDelAt      = "at"
	attrDelDetail  = "dt"
	attrDelEvents  = "ev"
	attrDelCounted = "uc"
	attrDelVersion = "ver"
	skEvidence     = "V#"
)

func evidenceKey(p int, seq int64) map[string]types.AttributeValue {
	return key(partitionPK(p), fmt.Sprintf("%s%020d", skEvidence, seq))
}

// keepsEvidence reports whether actions of kind may have delivery evidence:
// its adapter says so, or this build does not know the kind (a rolling
// upgrade: deleting a row that is not there costs one write, keeping one
// that is would outlive its action).
func (e *Engine) keepsEvidence(kind string) bool {
	ad, ok := e.reg.Lookup(kind)
	return !ok || ad.Spec().DeliveryEvidence
}

// DeliveryRecord records a provider's event about action id's effect
// beside the action, which it never changes. An event for an action that
// does not exist, or whose kind has no evidence, is UNKNOWN; for an erased
// action ERASED; an event recorded before DUPLICATE; an event whose Ref is
// not the action's readback_ref (both known) MISMATCH. The row is written
// under a condition on the version read (concurrent events of one action
// merge), and the action is read again after the write: an erasure that
// came between finds the row gone, or this write deletes it.
func (e *Engine) DeliveryRecord(ctx context.Context, id string, ev DeliveryEvent) (*DeliveryRecordResult, error) {
	if !ev.Status.Valid() {
		return nil, &ValidationError{Field: "status", Message: fmt.Sprintf("unknown delivery status %q", ev.Status)}
	}
	ev.At = ev.At.UTC()
	a, outcome, err := e.evidenceAction(ctx, id)
	if err != nil || outcome != "" {
		return &DeliveryRecordResult{Outcome: outcome}, err
	}
	if ev.Ref != "" && a.ReadbackRef != "" && ev.Ref != a.ReadbackRef {
		return &DeliveryRecordResult{Outcome: DeliveryMismatch}, nil
	}
	res := &DeliveryRecordResult{Outcome: DeliveryRecorded, Action: a}
	for try := 0; ; try++ {
		old, ver, err := e.readEvidence(ctx, a.Partition, a.Seq, true)
		if err != nil {
			return nil, err
		}
		d, changed := mergeDelivery(old, ev)
		if !changed {
			res.Outcome = DeliveryDuplicate
			return res, nil
		}
		counted := old != nil && old.counted
		confirm := a.State == StateUNCERTAIN && ev.Status.WentOut() && !counted
		err = e.putEvidence(ctx, a, d, ver, counted || confirm)
		if isCondFailed(err) && try < 5 {
			continue // another event of the action landed between: merge again
		}
		if err != nil {
			return nil, err
		}
		res.UncertainConfirmed = confirm
		break
	}
	// An erasure between the first read and the write has deleted the
	// action, and perhaps the evidence before it was written: look again.
	if _, outcome, err := e.evidenceAction(ctx, id); err != nil || outcome != "" {
		if err == nil {
			err = e.deleteEvidence(ctx, a.Partition, a.Seq)
		}
		return &DeliveryRecordResult{Outcome: DeliveryErased}, err
	}
	return res, nil
}

// evidenceAction reads the action an event is about: the action, or why
// there is none to record evidence beside.
func (e *Engine) evidenceAction(ctx context.Context, id string) (*Action, DeliveryOutcome, error) {
	p, seq, err := ParseActionID(id)
	if err != nil || p >= MaxPartitions {
		return nil, DeliveryUnknown, nil
	}
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: e.table(), Key: actionKey(p, seq), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, "", fmt.Errorf("error reading action %s: %w", id, err)
	}
	it := out.Item
	switch {
	case it == nil || expiredByTTL(it, e.clk.Now()):
		return nil, DeliveryUnknown, nil
	case !has(it, attrKind):
		return nil, DeliveryErased, nil // an erasure tombstone
	}
	if getS(it, attrID) != id {
		return nil, DeliveryUnknown, nil // the key of another id (design.md §3.10)
	}
	a, _ := decodeAction(it)
	if ad, ok := e.reg.Lookup(a.Kind); !ok || !ad.Spec().DeliveryEvidence {
		return nil, DeliveryUnknown, nil
	}
	a.Payload = nil
	return &a, "", nil
}

// evidenceRow is a delivery evidence row as read.
type evidenceRow struct {
	Delivery
	counted bool
}

// readEvidence reads the evidence row of (p, seq): nil when there is none
// (or its TTL passed), with its version.
func (e *Engine) readEvidence(ctx context.Context, p int, seq int64, consistent bool) (*evidenceRow, int64, error) {
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: e.table(), Key: evidenceKey(p, seq), ConsistentRead: aws.Bool(consistent)})
	if err != nil {
		return nil, 0, fmt.Errorf("error reading delivery evidence of %s: %w", keyLabel(p, seq), err)
	}
	it := out.Item
	if it == nil {
		return nil, 0, nil
	}
	ver := getN(it, attrDelVersion)
	if expiredByTTL(it, e.clk.Now()) {
		return nil, ver, nil
	}
	r := &evidenceRow{}
	r.Status, r.At, r.Detail = DeliveryStatus(getS(it, attrDelStatus)), getMs(it, attrDelAt), getS(it, attrDelDetail)
	if v, ok := it[attrDelCounted].(*types.AttributeValueMemberBOOL); ok {
		r.counted = v.Value
	}
	_ = json.Unmarshal([]byte(getS(it, attrDelEvents)), &r.Events)
	return r, ver, nil
}

// mergeDelivery adds ev to the evidence read (nil: none yet) and reports
// whether anything changed.
func mergeDelivery(old *evidenceRow, ev DeliveryEvent) (Delivery, bool) {
	var d Delivery
	if old != nil {
		d = old.Delivery
	}
	for _, x := range d.Events {
		if x.Status == ev.Status && x.At.Equal(ev.At) && x.Detail == ev.Detail {
			return d, false
		}
	}
	d.Events = append(slices.Clone(d.Events), ev)
	slices.SortStableFunc(d.Events, func(a, b DeliveryEvent) int { return a.At.Compare(b.At) })
	if len(d.Events) > maxDeliveryEvents {
		d.Events = d.Events[len(d.Events)-maxDeliveryEvents:]
	}
	best := deliveryRank[d.Status]
	if r := deliveryRank[ev.Status]; r > best || (r == best && ev.At.After(d.At)) {
		d.DeliveryEvent = ev
	}
	return d, true
}

// putEvidence writes the evidence row of a, conditioned on the version
// read (0: none), with the action's TTL.
func (e *Engine) putEvidence(ctx context.Context, a *Action, d Delivery, ver int64, counted bool) error {
	expiry := e.clk.Now().UTC().Add(e.retentionOf(a.Kind))
	if a.State.Ended() {
		expiry = a.EndedAt.Add(e.retentionOf(a.Kind))
	}
	evs, err := json.Marshal(d.Events)
	if err != nil {
		return fmt.Errorf("error encoding delivery events: %w", err)
	}
	it := evidenceKey(a.Partition, a.Seq)
	it[attrID] = avS(a.ID)
	it[attrDelStatus] = avS(string(d.Status))
	it[attrDelAt] = avMs(d.At)
	if d.Detail != "" {
		it[attrDelDetail] = avS(d.Detail)
	}
	it[attrDelEvents] = avS(string(evs))
	it[attrDelCounted] = &types.AttributeValueMemberBOOL{Value: counted}
	it[attrDelVersion] = avN(ver + 1)
	it[attrTTL] = avN(expiry.Unix())
	c := "attribute_not_exists(#ver)"
	vals := map[string]types.AttributeValue(nil)
	if ver > 0 {
		c = "#ver = :ver"
		vals = map[string]types.AttributeValue{":ver": avN(ver)}
	}
	_, err = e.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: e.table(), Item: it, ConditionExpression: aws.String(c),
		ExpressionAttributeNames: map[string]string{"#ver": attrDelVersion}, ExpressionAttributeValues: vals,
	})
	if err != nil && !isCondFailed(err) {
		return fmt.Errorf("error writing delivery evidence of %s: %w", a.ID, err)
	}
	return err
}

// deleteEvidence deletes the evidence row of (p, seq), if any.
func (e *Engine) deleteEvidence(ctx context.Context, p int, seq int64) error {
	if _, err := e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: e.table(), Key: evidenceKey(p, seq)}); err != nil {
		return fmt.Errorf("error deleting delivery evidence of %s: %w", keyLabel(p, seq), err)
	}
	return nil
}

// DeliveryGet reads a's delivery evidence (an eventually consistent read,
// only for kinds that have evidence): nil when there is none.
func (e *Engine) DeliveryGet(ctx context.Context, a *Action) (*Delivery, error) {
	if ad, ok := e.reg.Lookup(a.Kind); !ok || !ad.Spec().DeliveryEvidence {
		return nil, nil
	}
	r, _, err := e.readEvidence(ctx, a.Partition, a.Seq, false)
	if err != nil || r == nil {
		return nil, err
	}
	return &r.Delivery, nil
}

// deleteEvidenceOf deletes the delivery evidence of an action row just
// deleted or erased (old: its attributes before), when its kind may have
// some: evidence follows its action's retention and erasure.
func (e *Engine) deleteEvidenceOf(ctx context.Context, old map[string]types.AttributeValue) error {
	kind := getS(old, attrKind)
	if kind == "" || !e.keepsEvidence(kind) {
		return nil
	}
	a, ok := decodeAction(old)
	if !ok {
		return nil
	}
	return e.deleteEvidence(ctx, a.Partition, a.Seq)
}
