package example

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Kind is the name of the example kind.
const Kind = "crm_note"

// The payload variants, named by the payload's "type" property.
const (
	VariantNote = "note"
	VariantTask = "task"
)

// StopContactGone ends an action whose contact no longer exists.
const StopContactGone outbox.StopReason = "CONTACT_GONE"

// payload is both variants' shape; Due is only for tasks.
type payload struct {
	Type      string    `json:"type"`
	ContactID string    `json:"contact_id"`
	Text      string    `json:"text"`
	Due       time.Time `json:"due,omitzero"`
}

// Adapter carries out crm_note actions.
type Adapter struct {
	svc   NoteService
	table string // the outbox table, for the audit items of Ended
}

// The interfaces the adapter implements, checked at compile time.
var (
	_ outbox.Adapter    = (*Adapter)(nil)
	_ outbox.Preparer   = (*Adapter)(nil)
	_ outbox.ReadBacker = (*Adapter)(nil)
	_ outbox.EndedHook  = (*Adapter)(nil)
)

// New returns the adapter; table is the outbox's table (audit items go
// there, under their own partition keys).
func New(svc NoteService, table string) *Adapter { return &Adapter{svc: svc, table: table} }

// Spec declares the kind: read-back (the CRM finds a note by its marker),
// two payload variants told apart by the "type" property.
func (a *Adapter) Spec() outbox.KindSpec {
	return outbox.KindSpec{
		Name:        Kind,
		Class:       outbox.ReadBack,
		VariantMode: outbox.TaggedShape,
		TagProperty: "type",
		Variants:    []string{VariantNote, VariantTask},
	}
}

// Validate decodes the payload of a variant at enqueue time. The engine has
// already checked that "type" names one of Spec().Variants.
func (a *Adapter) Validate(variant string, raw json.RawMessage) error {
	_, err := decode(variant, raw)
	return err
}

func decode(variant string, raw json.RawMessage) (*payload, error) {
	var p payload
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, &outbox.PayloadError{Message: err.Error()}
	}
	switch {
	case p.ContactID == "":
		return nil, &outbox.PayloadError{Field: "contact_id", Message: "required"}
	case strings.TrimSpace(p.Text) == "":
		return nil, &outbox.PayloadError{Field: "text", Message: "required"}
	case variant == VariantTask && p.Due.IsZero():
		return nil, &outbox.PayloadError{Field: "due", Message: "a task needs a due time"}
	case variant == VariantNote && !p.Due.IsZero():
		return nil, &outbox.PayloadError{Field: "due", Message: "a note has no due time"}
	}
	return &p, nil
}

// marker is what Ferry leaves on the note so a later attempt can find it.
// The action id is unique in the table and the same on every attempt.
func marker(actionID string) string { return "ferry:" + actionID }

// Prepare runs before every attempt, before the write fence: nothing has
// been written yet, so it may cancel (the contact is gone) or retry (the CRM
// cannot tell now) freely. What it builds is handed to Execute.
func (a *Adapter) Prepare(ctx context.Context, att *outbox.Attempt) outbox.Result {
	p, err := decode(att.Action.Variant, att.Action.Payload)
	if err != nil {
		return outbox.Failed(outbox.StopRejected, err)
	}
	active, err := a.svc.ContactActive(ctx, p.ContactID)
	if err != nil {
		return outbox.Retry(fmt.Errorf("crm_note: checking contact: %w", err))
	}
	if !active {
		return outbox.Cancelled(StopContactGone, nil)
	}
	att.Prepared = Note{ContactID: p.ContactID, Text: p.Text, Due: p.Due, Marker: marker(att.Action.ID)}
	return outbox.Result{}
}

// ReadBack runs before the fence of an attempt that follows one which may
// have written (its fence was set but no outcome recorded). Found → Done;
// proven absent and still wanted → OutcomeNone (the attempt goes on to
// Prepare and Execute); absent and no longer wanted → Cancelled (ABSENT);
// the CRM cannot tell → Reread, to look again later.
func (a *Adapter) ReadBack(ctx context.Context, att *outbox.Attempt) outbox.Result {
	p, err := decode(att.Action.Variant, att.Action.Payload)
	if err != nil {
		return outbox.Failed(outbox.StopRejected, err)
	}
	id, found, err := a.svc.FindNote(ctx, p.ContactID, marker(att.Action.ID))
	if err != nil {
		return outbox.Reread(30*time.Second, fmt.Errorf("crm_note: read-back: %w", err))
	}
	if found {
		return outbox.Done(id)
	}
	active, err := a.svc.ContactActive(ctx, p.ContactID)
	if err != nil {
		return outbox.Reread(30*time.Second, fmt.Errorf("crm_note: read-back: %w", err))
	}
	if !active {
		return outbox.Cancelled(outbox.StopAbsent, nil)
	}
	return outbox.Result{}
}

// Execute writes the note. It runs after the fence, so every failure that
// may have reached the CRM answers Reread: the next attempt reads back
// before writing again. Only answers that prove nothing was written may say
// Failed or Defer.
func (a *Adapter) Execute(ctx context.Context, att *outbox.Attempt) outbox.Result {
	note, ok := att.Prepared.(Note)
	if !ok {
		return outbox.Retry(errors.New("crm_note: Execute without Prepare"))
	}
	id, err := a.svc.CreateNote(ctx, note)
	if err == nil {
		return outbox.Done(id)
	}
	var pe *ProviderError
	if errors.As(err, &pe) {
		switch {
		case pe.Status == 429:
			return outbox.Defer(pe.RetryAfter, err)
		case pe.Status >= 400 && pe.Status <= 499:
			return outbox.Failed(outbox.StopRejected, err)
		}
	}
	return outbox.Reread(10*time.Second, fmt.Errorf("crm_note: %w", err))
}

// Ended adds an audit record to the transaction that ends the action, so
// the record exists exactly when the action has ended. It must not touch
// the action's own item; it writes under its own partition key.
func (a *Adapter) Ended(_ context.Context, ended outbox.EndedAction) ([]types.TransactWriteItem, error) {
	item := map[string]types.AttributeValue{
		"pk":          &types.AttributeValueMemberS{Value: "AUDIT#" + ended.Action.WorkspaceID},
		"sk":          &types.AttributeValueMemberS{Value: ended.Action.ID},
		"state":       &types.AttributeValueMemberS{Value: string(ended.State)},
		"stop_reason": &types.AttributeValueMemberS{Value: string(ended.StopReason)},
	}
	if ref := ended.Result.ReadbackRef; ref != "" {
		item["note_id"] = &types.AttributeValueMemberS{Value: ref}
	}
	return []types.TransactWriteItem{{Put: &types.Put{TableName: &a.table, Item: item}}}, nil
}
