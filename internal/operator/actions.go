package operator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ferryhq/ferry/internal/outbox"
)

// ListParams are the filters of `ferry actions list`.
type ListParams = outbox.ActionFindParams

// List runs `ferry actions list`: one page of actions matching p, in key
// order, and the cursor of the next page.
func (s *Session) List(ctx context.Context, p ListParams) error {
	res, err := s.Engine.ActionFind(ctx, p)
	if err != nil {
		return classify(err)
	}
	if s.JSON {
		acts := make([]ActionJSON, 0, len(res.Actions))
		for i := range res.Actions {
			acts = append(acts, newActionJSON(&res.Actions[i]))
		}
		return writeJSON(s.Out, map[string]any{
			"actions": acts, "next_cursor": opt(res.NextCursor), "examined": res.Examined, "dynamodb": s.Meter.Usage(),
		})
	}
	rows := make([][]string, 0, len(res.Actions))
	for _, a := range res.Actions {
		rows = append(rows, []string{a.ID, a.Kind, dash(a.WorkspaceID), string(a.State), dash(string(a.StopReason)),
			fmt.Sprintf("%d/%d", a.Attempt, a.MaxAttempts), dash(a.LaneKey), when(a.CreatedAt), when(a.EndedAt)})
	}
	if err := table(s.Out, []string{"ID", "KIND", "WORKSPACE", "STATE", "STOP", "ATTEMPTS", "LANE", "CREATED", "ENDED"}, rows); err != nil {
		return err
	}
	s.printf("\n%d actions (%d rows examined)\n", len(res.Actions), res.Examined)
	if res.NextCursor != "" {
		s.printf("more: --cursor %s\n", res.NextCursor)
	}
	s.usageLine()
	return nil
}

// Get runs `ferry actions get`: the action, its lane neighbours, what the
// table keeps of its attempts, and, for an ended action, what the
// application must enqueue to try again.
func (s *Session) Get(ctx context.Context, id string) error {
	a, err := s.Engine.ActionGet(ctx, id)
	if err != nil {
		return classify(err)
	}
	n, err := s.Engine.ActionNeighbours(ctx, a)
	if err != nil {
		return classify(err)
	}
	d, err := s.Engine.DeliveryGet(ctx, a)
	if err != nil {
		return classify(err)
	}
	if s.JSON {
		out := map[string]any{"action": newActionJSON(a), "lane": laneJSON(n), "delivery": newDeliveryJSON(d), "dynamodb": s.Meter.Usage()}
		if a.State.Ended() {
			out["enqueue_again"] = enqueueAgain(a)
		}
		return writeJSON(s.Out, out)
	}
	rows := [][]string{
		{"action", a.ID},
		{"kind", a.Kind},
		{"workspace", dash(a.WorkspaceID)},
		{"state", stateLine(a)},
		{"attempts", fmt.Sprintf("%d of %d (epoch %d)", a.Attempt, a.MaxAttempts, a.Epoch)},
		{"created", when(a.CreatedAt)},
	}
	if !a.State.Ended() {
		rows = append(rows, []string{"next attempt", when(a.NextAttemptAt)})
	}
	if a.State == outbox.StateEXECUTING {
		rows = append(rows, []string{"lease", fmt.Sprintf("until %s, held by %s", when(a.LeaseExpiresAt), dash(a.Owner))})
	}
	rows = append(rows,
		[]string{"write fence", when(a.WriteStartedAt) + fenceNote(a)},
		[]string{"expires", when(a.ExpiresAt)},
		[]string{"readback ref", dash(a.ReadbackRef)},
		[]string{"subject", dash(a.SubjectID)},
		[]string{"idempotency key", dash(a.IdempotencyKey)},
		[]string{"lane", laneLine(a, n)},
		[]string{"partition", strconv.Itoa(a.Partition)},
		[]string{"delivery", deliveryLine(d)},
	)
	if d != nil && len(d.Events) > 1 {
		for _, ev := range d.Events {
			rows = append(rows, []string{"  event", fmt.Sprintf("%s %s %s", when(ev.At), ev.Status, ev.Detail)})
		}
	}
	if err := table(s.Out, []string{"FIELD", "VALUE"}, rows); err != nil {
		return err
	}
	s.printf("\nThe table keeps each action's latest attempt only: its count, epoch, write fence and lease; the attempts' logs are in the drainer's log group (action.id %s).\n", a.ID)
	if a.State.Ended() {
		s.printf("\n%s\n", enqueueAgainText(a))
		if a.State == outbox.StateUNCERTAIN && d != nil && d.Status.WentOut() {
			s.printf("Its delivery evidence says SES took it on (%s at %s): enqueuing it again sends it twice.\n", d.Status, when(d.At))
		}
	}
	s.usageLine()
	return nil
}

// deliveryJSON is an action's delivery evidence in `ferry actions get -o
// json`: the API's delivery (status, at, detail) and every event recorded.
type deliveryJSON struct {
	Status string              `json:"status"`
	At     string              `json:"at"`
	Detail string              `json:"detail"`
	Events []deliveryEventJSON `json:"events"`
}

type deliveryEventJSON struct {
	Status string `json:"status"`
	At     string `json:"at"`
	Detail string `json:"detail"`
}

func newDeliveryJSON(d *outbox.Delivery) *deliveryJSON {
	if d == nil {
		return nil
	}
	j := &deliveryJSON{Status: string(d.Status), At: *optTime(d.At), Detail: d.Detail, Events: []deliveryEventJSON{}}
	for _, ev := range d.Events {
		j.Events = append(j.Events, deliveryEventJSON{Status: string(ev.Status), At: *optTime(ev.At), Detail: ev.Detail})
	}
	return j
}

func deliveryLine(d *outbox.Delivery) string {
	if d == nil {
		return "-"
	}
	return fmt.Sprintf("%s at %s (%s)", d.Status, when(d.At), d.Detail)
}

func stateLine(a *outbox.Action) string {
	if !a.State.Ended() {
		return string(a.State)
	}
	return fmt.Sprintf("%s (stop reason %s), ended %s", a.State, a.StopReason, when(a.EndedAt))
}

func fenceNote(a *outbox.Action) string {
	if a.WriteStartedAt.IsZero() {
		return ""
	}
	return " (the provider may have been called from then on)"
}

func laneLine(a *outbox.Action, n *outbox.LaneNeighbours) string {
	if a.LaneKey == "" {
		return "-"
	}
	side := func(x *outbox.Action) string {
		if x == nil {
			return "none found"
		}
		return fmt.Sprintf("%s (%s)", x.ID, x.State)
	}
	return fmt.Sprintf("%s; before it %s, after it %s", a.LaneKey, side(n.Prev), side(n.Next))
}

type neighbourJSON struct {
	ID    string `json:"id"`
	State string `json:"state"`
}

func laneJSON(n *outbox.LaneNeighbours) map[string]*neighbourJSON {
	j := func(a *outbox.Action) *neighbourJSON {
		if a == nil {
			return nil
		}
		return &neighbourJSON{ID: a.ID, State: string(a.State)}
	}
	return map[string]*neighbourJSON{"prev": j(n.Prev), "next": j(n.Next)}
}

// enqueueAgainJSON is what an application must send to try an ended
// action's effect again: a new action, since an ended one never changes.
type enqueueAgainJSON struct {
	Kind        string  `json:"kind"`
	WorkspaceID *string `json:"workspace_id"`
	LaneKey     *string `json:"lane_key"`
	SubjectID   *string `json:"subject_id"`
	// NewIdempotencyKey: the old key returns this ended action for as long
	// as it is retained, so a new attempt needs a new key.
	NewIdempotencyKey bool   `json:"new_idempotency_key"`
	Payload           string `json:"payload"`
}

func enqueueAgain(a *outbox.Action) enqueueAgainJSON {
	return enqueueAgainJSON{
		Kind: a.Kind, WorkspaceID: opt(a.WorkspaceID), LaneKey: opt(a.LaneKey), SubjectID: opt(a.SubjectID),
		NewIdempotencyKey: a.IdempotencyKey != "",
		Payload:           "not kept once ended: the application supplies it again",
	}
}

// enqueueAgainText says that an ended action never changes and what the
// application must enqueue to try again.
func enqueueAgainText(a *outbox.Action) string {
	var b strings.Builder
	fmt.Fprintf(&b, "An ended action never changes: there is no retry of %s. ", a.ID)
	if a.State == outbox.StateDONE {
		b.WriteString("It is DONE; nothing needs doing again.")
		return b.String()
	}
	if a.State == outbox.StateUNCERTAIN {
		b.WriteString("It is UNCERTAIN: the provider may have carried it out; check there before sending it again. ")
	}
	fmt.Fprintf(&b, "To try again, the application enqueues a new action: kind %s", a.Kind)
	if a.WorkspaceID != "" {
		fmt.Fprintf(&b, ", workspace_id %s", a.WorkspaceID)
	}
	if a.LaneKey != "" {
		fmt.Fprintf(&b, ", lane_key %s", a.LaneKey)
	}
	if a.SubjectID != "" {
		fmt.Fprintf(&b, ", subject_id %s", a.SubjectID)
	}
	b.WriteString(", and its payload (an ended action keeps none)")
	if a.IdempotencyKey != "" {
		fmt.Fprintf(&b, ", with a new idempotency_key (%s returns this action while it is retained)", a.IdempotencyKey)
	}
	b.WriteString(".")
	return b.String()
}

// Cancel runs `ferry actions cancel`: after confirmation, the engine's
// cancel (PROPOSED or ADMITTED, not started, to CANCELLED; its condition
// refuses anything else).
func (s *Session) Cancel(ctx context.Context, id string) error {
	a, err := s.Engine.ActionGet(ctx, id)
	if err != nil {
		return classify(err)
	}
	if err := refuseEnded(a, "cancelled"); err != nil {
		return err
	}
	if err := s.confirm(CancelQuestion(a)); err != nil {
		return err
	}
	ended, err := CancelAction(ctx, s.Engine, a)
	if err != nil {
		return err
	}
	return s.transitioned(ended, fmt.Sprintf("cancelled %s (was %s)", ended.ID, a.State))
}

// CancelQuestion is the confirmation `ferry actions cancel` (and the
// console) asks before cancelling a.
func CancelQuestion(a *outbox.Action) string {
	return fmt.Sprintf("Cancel %s (%s %s, workspace %s)? It will never be carried out", a.ID, a.State, a.Kind, dash(a.WorkspaceID))
}

// CancelAction is the cancel of `ferry actions cancel` once confirmed: an
// ended action is refused with what to enqueue instead, else the engine's
// cancel, whose condition refuses a started one. Its *Error carries the
// command's exit code.
func CancelAction(ctx context.Context, e *outbox.Engine, a *outbox.Action) (*outbox.Action, error) {
	if err := refuseEnded(a, "cancelled"); err != nil {
		return nil, err
	}
	ended, err := e.Cancel(ctx, a.ID)
	if err != nil {
		return nil, refusal(err, "cancelled")
	}
	return ended, nil
}

// Admit runs `ferry actions admit`: after confirmation, the engine's admit
// (PROPOSED to ADMITTED, due now; its condition refuses anything else).
func (s *Session) Admit(ctx context.Context, id string) error {
	a, err := s.Engine.ActionGet(ctx, id)
	if err != nil {
		return classify(err)
	}
	if err := refuseEnded(a, "admitted"); err != nil {
		return err
	}
	if err := s.confirm(AdmitQuestion(a)); err != nil {
		return err
	}
	admitted, err := AdmitAction(ctx, s.Engine, a)
	if err != nil {
		return err
	}
	return s.transitioned(admitted, fmt.Sprintf("admitted %s: due now", admitted.ID))
}

// AdmitQuestion is the confirmation `ferry actions admit` (and the
// console) asks before admitting a.
func AdmitQuestion(a *outbox.Action) string {
	return fmt.Sprintf("Admit %s (%s, workspace %s)? It becomes due now and will be carried out", a.ID, a.Kind, dash(a.WorkspaceID))
}

// AdmitAction is the admit of `ferry actions admit` once confirmed, with
// the command's refusals and exit codes (see CancelAction).
func AdmitAction(ctx context.Context, e *outbox.Engine, a *outbox.Action) (*outbox.Action, error) {
	if err := refuseEnded(a, "admitted"); err != nil {
		return nil, err
	}
	admitted, err := e.Admit(ctx, a.ID)
	if err != nil {
		return nil, refusal(err, "admitted")
	}
	return admitted, nil
}

// Retry runs `ferry actions retry`, which exists to say why there is none:
// it refuses (ExitRefused) with what the application must enqueue again.
func (s *Session) Retry(ctx context.Context, id string) error {
	a, err := s.Engine.ActionGet(ctx, id)
	if err != nil {
		return classify(err)
	}
	if !a.State.Ended() {
		return fail(ExitRefused, "%s is %s, not ended: it is still carried out (or waits for an approver); nothing to retry", a.ID, a.State)
	}
	return fail(ExitRefused, "%s", enqueueAgainText(a))
}

func refuseEnded(a *outbox.Action, verb string) error {
	if a.State.Ended() {
		return fail(ExitRefused, "%s ended %s (%s) and cannot be %s. %s", a.ID, a.State, a.StopReason, verb, enqueueAgainText(a))
	}
	return nil
}

// refusal explains a transition the engine's condition refused.
func refusal(err error, verb string) error {
	var te *outbox.TransitionError
	if !errors.As(err, &te) {
		return classify(err)
	}
	why := ""
	switch te.From {
	case outbox.StateEXECUTING:
		why = ": it has started (its drainer ends it; erasing its subject stops it only before its write fence)"
	case outbox.StateADMITTED:
		why = ": only a proposal can be admitted"
	}
	if te.From.Ended() {
		why = ": it has ended, and an ended action never changes"
	}
	return &Error{Code: ExitRefused, Err: fmt.Errorf("%s is %s and cannot be %s%s", te.ID, te.From, verb, why)}
}

func (s *Session) transitioned(a *outbox.Action, msg string) error {
	if s.JSON {
		return writeJSON(s.Out, map[string]any{"action": newActionJSON(a), "dynamodb": s.Meter.Usage()})
	}
	s.printf("%s\n", msg)
	s.usageLine()
	return nil
}
