package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Delivery evidence: a provider's reports about an action's effect, kept
// beside the action without changing it, gone with it.

func (tb *bundle) evidenceRow(t *testing.T, a outbox.Action) map[string]types.AttributeValue {
	t.Helper()
	out, err := tb.b.DB.GetItem(tb.ctx, &dynamodb.GetItemInput{TableName: aws.String(tb.b.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("P#%d", a.Partition)},
			"sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("V#%020d", a.Seq)},
		}})
	require.NoError(t, err)
	return out.Item
}

func (tb *bundle) deliver(t *testing.T, id string, st outbox.DeliveryStatus, at time.Time) *outbox.DeliveryRecordResult {
	t.Helper()
	r, err := tb.e.DeliveryRecord(tb.ctx, id, outbox.DeliveryEvent{Status: st, At: at, Detail: "d " + string(st)})
	require.NoError(t, err)
	return r
}

var _ = register("DeliveryEvidenceBesideTheAction", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{Kind: KindMail})
	tb.drain(t)
	ended := tb.get(t, a.ID)
	require.Equal(t, outbox.StateDONE, ended.State)
	d, err := tb.e.DeliveryGet(ctx, &ended)
	require.NoError(t, err)
	require.Nil(t, d, "no evidence yet")

	t0 := tb.b.Clock.Now()
	require.Equal(t, outbox.DeliveryRecorded, tb.deliver(t, a.ID, outbox.DeliverySent, t0).Outcome)
	// Events come out of order and more than once.
	require.Equal(t, outbox.DeliveryRecorded, tb.deliver(t, a.ID, outbox.DeliveryDelivered, t0.Add(2*time.Second)).Outcome)
	require.Equal(t, outbox.DeliveryRecorded, tb.deliver(t, a.ID, outbox.DeliveryDelayed, t0.Add(time.Second)).Outcome)
	require.Equal(t, outbox.DeliveryDuplicate, tb.deliver(t, a.ID, outbox.DeliverySent, t0).Outcome)
	d, err = tb.settled().DeliveryGet(ctx, &ended)
	require.NoError(t, err)
	require.Equal(t, outbox.DeliveryDelivered, d.Status, "a delivery outranks a send and a delay")
	require.True(t, d.At.Equal(t0.Add(2*time.Second)))
	require.Equal(t, "d DELIVERED", d.Detail)
	require.Len(t, d.Events, 3)
	require.Equal(t, []outbox.DeliveryStatus{outbox.DeliverySent, outbox.DeliveryDelayed, outbox.DeliveryDelivered},
		[]outbox.DeliveryStatus{d.Events[0].Status, d.Events[1].Status, d.Events[2].Status}, "oldest first")
	// A bounce (of another recipient) outranks the delivery.
	tb.deliver(t, a.ID, outbox.DeliveryBounced, t0.Add(3*time.Second))
	d, err = tb.settled().DeliveryGet(ctx, &ended)
	require.NoError(t, err)
	require.Equal(t, outbox.DeliveryBounced, d.Status)

	require.Equal(t, ended, tb.get(t, a.ID), "the action stays as it ended")
	require.False(t, tb.deliver(t, a.ID, outbox.DeliverySent, t0.Add(time.Minute)).UncertainConfirmed, "it was DONE, not UNCERTAIN")

	// Nothing beside what is not an action with evidence.
	require.Equal(t, outbox.DeliveryUnknown, tb.deliver(t, "0-999999", outbox.DeliverySent, t0).Outcome)
	require.Equal(t, outbox.DeliveryUnknown, tb.deliver(t, "not-an-id", outbox.DeliverySent, t0).Outcome)
	other := tb.enqueue(t, outbox.EnqueueParams{Kind: KindIdem})
	require.Equal(t, outbox.DeliveryUnknown, tb.deliver(t, other.ID, outbox.DeliverySent, t0).Outcome, "its kind keeps no evidence")
	require.Empty(t, tb.evidenceRow(t, other))
	_, err = tb.e.DeliveryRecord(ctx, a.ID, outbox.DeliveryEvent{Status: "OPENED", At: t0})
	var ve *outbox.ValidationError
	require.ErrorAs(t, err, &ve)

	// An event about another effect than the action's (its provider
	// reference is not the action's readback_ref) is refused and changes
	// nothing; the same reference, or none to compare, is recorded.
	before := tb.evidenceRow(t, ended)
	r, err := tb.e.DeliveryRecord(ctx, a.ID, outbox.DeliveryEvent{Status: outbox.DeliveryComplained, At: t0.Add(4 * time.Second), Ref: "someone-else"})
	require.NoError(t, err)
	require.Equal(t, outbox.DeliveryMismatch, r.Outcome)
	require.Equal(t, before, tb.evidenceRow(t, ended), "nothing recorded")
	require.Equal(t, "ref-1", ended.ReadbackRef)
	r, err = tb.e.DeliveryRecord(ctx, a.ID, outbox.DeliveryEvent{Status: outbox.DeliveryComplained, At: t0.Add(4 * time.Second), Ref: ended.ReadbackRef})
	require.NoError(t, err)
	require.Equal(t, outbox.DeliveryRecorded, r.Outcome)
})

var _ = register("DeliveryEvidenceConfirmsAnUncertainActionOnce", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{Kind: KindMail, Payload: Payload(Script{Do: []string{"uncertain"}})})
	b := tb.enqueue(t, outbox.EnqueueParams{Kind: KindMail, Payload: Payload(Script{Do: []string{"uncertain"}})})
	tb.drain(t)
	require.Equal(t, outbox.StateUNCERTAIN, tb.get(t, a.ID).State)
	t0 := tb.b.Clock.Now()
	r := tb.deliver(t, a.ID, outbox.DeliverySent, t0)
	require.True(t, r.UncertainConfirmed, "the first evidence that it went out")
	require.Equal(t, a.ID, r.Action.ID)
	require.False(t, tb.deliver(t, a.ID, outbox.DeliveryDelivered, t0.Add(time.Second)).UncertainConfirmed, "counted once")
	require.False(t, tb.deliver(t, b.ID, outbox.DeliveryRejected, t0).UncertainConfirmed, "a rejection: nothing went out")
	require.True(t, tb.deliver(t, b.ID, outbox.DeliveryDelivered, t0.Add(time.Second)).UncertainConfirmed)
})

var _ = register("DeliveryEvidenceFollowsRetention", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, func(c *outbox.Config) { c.Retention = time.Hour })
	a := tb.enqueue(t, outbox.EnqueueParams{Kind: KindMail})
	tb.drain(t)
	tb.deliver(t, a.ID, outbox.DeliveryDelivered, tb.b.Clock.Now())
	ended := tb.get(t, a.ID)
	ttl := func(it map[string]types.AttributeValue) string { return it["ttl"].(*types.AttributeValueMemberN).Value }
	full, err := tb.b.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tb.b.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "P#0"}, "sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("A#%020d", a.Seq)}}})
	require.NoError(t, err)
	require.Equal(t, ttl(full.Item), ttl(tb.evidenceRow(t, a)), "the evidence expires with its action")

	tb.b.Clock.Advance(2 * time.Hour)
	d, err := tb.e.DeliveryGet(ctx, &ended)
	require.NoError(t, err)
	require.Nil(t, d, "past its TTL it reads as gone, like its action")
	rr, err := tb.settled().Retain(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rr.Deleted)
	require.Empty(t, tb.evidenceRow(t, a), "retention deleted it with its action")

	// Past the row cap, a trimmed action's evidence goes too.
	tb2 := setup(ctx, t, nb, func(c *outbox.Config) { c.RowCap = 1 })
	old := tb2.enqueue(t, outbox.EnqueueParams{Kind: KindMail})
	tb2.drain(t)
	tb2.deliver(t, old.ID, outbox.DeliverySent, tb2.b.Clock.Now())
	tb2.b.Clock.Advance(time.Minute)
	tb2.enqueue(t, outbox.EnqueueParams{Kind: KindMail})
	tb2.drain(t)
	rr, err = tb2.settled().Retain(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rr.Trimmed)
	require.Empty(t, tb2.evidenceRow(t, old))
})

var _ = register("DeliveryEvidenceFollowsErasure", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	first := tb.enqueue(t, outbox.EnqueueParams{Kind: KindMail, SubjectID: "s", LaneKey: "L", Payload: Payload(Script{Do: []string{"retry"}})})
	second := tb.enqueue(t, outbox.EnqueueParams{Kind: KindMail, SubjectID: "s", LaneKey: "L"}) // waits behind: erased into a tombstone
	lone := tb.enqueue(t, outbox.EnqueueParams{Kind: KindMail, SubjectID: "s"})
	now := tb.b.Clock.Now()
	for _, a := range []outbox.Action{first, second, lone} {
		require.Equal(t, outbox.DeliveryRecorded, tb.deliver(t, a.ID, outbox.DeliverySent, now).Outcome)
	}
	n, err := tb.settled().EraseSubject(ctx, "ws", "s")
	require.NoError(t, err)
	require.Equal(t, 3, n)
	for _, a := range []outbox.Action{first, second, lone} {
		require.Empty(t, tb.evidenceRow(t, a), "%s: erased with its action", a.ID)
	}
	require.Equal(t, outbox.DeliveryErased, tb.deliver(t, second.ID, outbox.DeliveryDelivered, now).Outcome, "a tombstone: erased")
	require.Equal(t, outbox.DeliveryUnknown, tb.deliver(t, lone.ID, outbox.DeliveryDelivered, now).Outcome, "deleted: unknown")
	require.Empty(t, tb.evidenceRow(t, second))
	require.Empty(t, tb.evidenceRow(t, lone))
})

// erasingDB erases a subject just before the first evidence write it
// sees: an erasure between DeliveryRecord's read of the action and its
// write.
type erasingDB struct {
	outbox.DynamoDB
	erase func()
	done  bool
}

func (d *erasingDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if sk, ok := in.Item["sk"].(*types.AttributeValueMemberS); ok && !d.done && len(sk.Value) > 2 && sk.Value[:2] == "V#" {
		d.done = true
		d.erase()
	}
	return d.DynamoDB.PutItem(ctx, in, o...)
}

var _ = register("DeliveryEvidenceRacingAnErasureIsNotKept", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{Kind: KindMail, SubjectID: "s"})
	db := &erasingDB{DynamoDB: tb.b.DB, erase: func() {
		n, err := tb.settled().EraseSubject(ctx, "ws", "s")
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}}
	racer, err := outbox.New(db, tb.b.Clock, Registry(tb.rec, tb.b.Table, false), tb.cfg)
	require.NoError(t, err)
	r, err := racer.DeliveryRecord(ctx, a.ID, outbox.DeliveryEvent{Status: outbox.DeliverySent, At: tb.b.Clock.Now()})
	require.NoError(t, err)
	require.True(t, db.done)
	require.Equal(t, outbox.DeliveryErased, r.Outcome)
	require.Empty(t, tb.evidenceRow(t, a), "the write that came after the erasure was taken back")
})
