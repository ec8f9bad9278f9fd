package example_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/adapters/example"
	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

type testBundle struct {
	engine *outbox.Engine
	db     *ddblocal.DB
	crm    *example.MemoryNotes
	clock  *clock.Manual
}

// setup registers the example kind with an engine on the embedded DynamoDB,
// as a service embedding Ferry would.
func setup(t *testing.T) *testBundle {
	t.Helper()
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	crm := example.NewMemoryNotes("contact-1", "contact-2")
	reg := outbox.NewRegistry()
	require.NoError(t, reg.Register(example.New(crm, "ferry")))
	e, err := outbox.New(db, clk, reg, outbox.Config{Table: "ferry", Partitions: 2})
	require.NoError(t, err)
	require.NoError(t, e.EnsureTable(context.Background()))
	return &testBundle{engine: e, db: db, crm: crm, clock: clk}
}

func (b *testBundle) enqueue(t *testing.T, payload string) outbox.Action {
	t.Helper()
	r, err := b.engine.Enqueue(context.Background(), outbox.EnqueueParams{
		Kind: example.Kind, WorkspaceID: "ws1", LaneKey: "contact-1", Payload: json.RawMessage(payload),
	})
	require.NoError(t, err)
	return r.Action
}

func (b *testBundle) get(t *testing.T, id string) *outbox.Action {
	t.Helper()
	a, err := b.engine.ActionGet(context.Background(), id)
	require.NoError(t, err)
	return a
}

func (b *testBundle) audit(t *testing.T, id string) map[string]types.AttributeValue {
	t.Helper()
	out, err := b.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String("ferry"),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "AUDIT#ws1"},
			"sk": &types.AttributeValueMemberS{Value: id},
		},
	})
	require.NoError(t, err)
	return out.Item
}

func str(item map[string]types.AttributeValue, name string) string {
	if s, ok := item[name].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func TestExampleKindDrainsToDone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	note := b.enqueue(t, `{"type":"note","contact_id":"contact-1","text":"Called about the renewal."}`)
	task := b.enqueue(t, `{"type":"task","contact_id":"contact-1","text":"Send the quote.","due":"2026-12-01T09:00:00Z"}`)
	require.Equal(t, example.VariantNote, note.Variant)
	require.Equal(t, example.VariantTask, task.Variant)

	require.NoError(t, b.engine.Drain(context.Background()))
	for _, id := range []string{note.ID, task.ID} {
		a := b.get(t, id)
		require.Equal(t, outbox.StateDONE, a.State)
		require.NotEmpty(t, a.ReadbackRef)
		audit := b.audit(t, id)
		require.Equal(t, "DONE", str(audit, "state"))
		require.Equal(t, a.ReadbackRef, str(audit, "note_id"))
	}
	require.Equal(t, 2, b.crm.Notes())
}

func TestExampleKindReadsBackALostResponse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.crm.LoseNextResponse = true // the note is stored, the answer lost
	a := b.enqueue(t, `{"type":"note","contact_id":"contact-2","text":"Prefers email."}`)

	// First attempt: Execute answers Reread; the action keeps its fence.
	r, err := b.engine.Sweep(context.Background(), outbox.DrainParams{})
	require.NoError(t, err)
	require.Equal(t, 1, r.Started)
	got := b.get(t, a.ID)
	require.Equal(t, outbox.StateEXECUTING, got.State)
	require.False(t, got.WriteStartedAt.IsZero())

	// Next attempt reads back, finds the note by its marker: DONE, and the
	// CRM still holds exactly one note.
	require.NoError(t, b.engine.Drain(context.Background()))
	got = b.get(t, a.ID)
	require.Equal(t, outbox.StateDONE, got.State)
	require.Equal(t, "note-1", got.ReadbackRef)
	require.Equal(t, 1, b.crm.Notes())
	require.Equal(t, "note-1", str(b.audit(t, a.ID), "note_id"))
}

func TestExampleKindCancelsWhenTheContactIsGone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.crm.RemoveContact("contact-2")
	a := b.enqueue(t, `{"type":"note","contact_id":"contact-2","text":"Too late."}`)
	require.NoError(t, b.engine.Drain(context.Background()))
	got := b.get(t, a.ID)
	require.Equal(t, outbox.StateCANCELLED, got.State)
	require.Equal(t, example.StopContactGone, got.StopReason)
	require.Equal(t, "CANCELLED", str(b.audit(t, a.ID), "state"))
	require.Zero(t, b.crm.Notes())
}

func TestExampleKindRefusesBadPayloads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, p := range []string{
		`{"type":"memo","contact_id":"contact-1","text":"x"}`,
		`{"type":"note","text":"x"}`,
		`{"type":"task","contact_id":"contact-1","text":"x"}`,
		`{"type":"note","contact_id":"contact-1","text":"x","due":"2026-12-01T09:00:00Z"}`,
	} {
		_, err := b.engine.Enqueue(context.Background(), outbox.EnqueueParams{Kind: example.Kind, WorkspaceID: "ws1", Payload: json.RawMessage(p)})
		var pe *outbox.PayloadError
		require.ErrorAs(t, err, &pe, p)
	}
}
