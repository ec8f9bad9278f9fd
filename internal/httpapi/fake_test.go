package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/outbox"
)

// fakeOutbox is an in-memory Outbox for the handler's tests. It knows the
// kinds "webhook" (payload needs a "url" string) and "email", and counts its
// records the way the table would (an action, plus an idempotency record
// when keyed), so tests can check that a refused request wrote nothing.
type fakeOutbox struct {
	mu      sync.Mutex
	clk     clock.Clock
	seq     int
	actions []outbox.Action   // in enqueue order
	idem    map[string]string // ws#key -> id
	fail    error             // returned by the next call, then cleared
	calls   map[string]int    // method -> calls
	lastLst outbox.ActionListParams
	// delivery is the evidence DeliveryGet answers, by action id.
	delivery map[string]*outbox.Delivery
}

func newFakeOutbox(clk clock.Clock) *fakeOutbox {
	return &fakeOutbox{clk: clk, idem: map[string]string{}, calls: map[string]int{}}
}

var _ Outbox = (*fakeOutbox)(nil)

func (f *fakeOutbox) items() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.actions) + len(f.idem)
}

func (f *fakeOutbox) enter(method string) error {
	f.calls[method]++
	err := f.fail
	f.fail = nil
	return err
}

func (f *fakeOutbox) validate(p outbox.EnqueueParams) error {
	switch p.Kind {
	case "webhook":
		var w struct {
			URL any `json:"url"`
		}
		if err := json.Unmarshal(p.Payload, &w); err != nil {
			return &outbox.PayloadError{Message: err.Error()}
		}
		if u, ok := w.URL.(string); !ok || !strings.HasPrefix(u, "https://") {
			return &outbox.PayloadError{Field: "url", Message: "must be an https URL"}
		}
	case "email":
	default:
		return fmt.Errorf("kind %q: %w", p.Kind, outbox.ErrUnknownKind)
	}
	return nil
}

func (f *fakeOutbox) build(p outbox.EnqueueParams) outbox.Action {
	f.seq++
	now := f.clk.Now()
	st := outbox.StateADMITTED
	if p.Propose {
		st = outbox.StatePROPOSED
	}
	ma := p.MaxAttempts
	if ma == 0 {
		ma = 8
	}
	return outbox.Action{
		ID: "0-" + strconv.Itoa(f.seq), Kind: p.Kind, WorkspaceID: p.WorkspaceID, LaneKey: p.LaneKey,
		IdempotencyKey: p.IdempotencyKey, SubjectID: p.SubjectID, State: st, MaxAttempts: ma,
		Payload: p.Payload, CreatedAt: now, NextAttemptAt: now, ExpiresAt: p.ExpiresAt, Seq: int64(f.seq),
	}
}

func (f *fakeOutbox) Enqueue(ctx context.Context, p outbox.EnqueueParams) (*outbox.EnqueueResult, error) {
	res, err := f.EnqueueBatch(ctx, []outbox.EnqueueParams{p})
	var item *outbox.BatchItemError
	if errors.As(err, &item) {
		return nil, item.Err
	}
	if err != nil {
		return nil, err
	}
	return &res[0], nil
}

func (f *fakeOutbox) EnqueueBatch(_ context.Context, ps []outbox.EnqueueParams) ([]outbox.EnqueueResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("Enqueue"); err != nil {
		return nil, err
	}
	for i, p := range ps {
		if err := f.validate(p); err != nil {
			return nil, &outbox.BatchItemError{Index: i, Err: err}
		}
	}
	out := make([]outbox.EnqueueResult, len(ps))
	for i, p := range ps {
		if p.IdempotencyKey != "" {
			if id, ok := f.idem[p.WorkspaceID+"#"+p.IdempotencyKey]; ok {
				out[i] = outbox.EnqueueResult{Action: *f.find(id), Existing: true}
				continue
			}
		}
		a := f.build(p)
		f.actions = append(f.actions, a)
		if p.IdempotencyKey != "" {
			f.idem[p.WorkspaceID+"#"+p.IdempotencyKey] = a.ID
		}
		out[i] = outbox.EnqueueResult{Action: a}
	}
	return out, nil
}

func (f *fakeOutbox) find(id string) *outbox.Action {
	for i := range f.actions {
		if f.actions[i].ID == id {
			return &f.actions[i]
		}
	}
	return nil
}

func (f *fakeOutbox) DeliveryGet(_ context.Context, a *outbox.Action) (*outbox.Delivery, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("DeliveryGet"); err != nil {
		return nil, err
	}
	return f.delivery[a.ID], nil
}

func (f *fakeOutbox) ActionGet(_ context.Context, id string) (*outbox.Action, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("ActionGet"); err != nil {
		return nil, err
	}
	a := f.find(id)
	if a == nil {
		return nil, outbox.ErrNotFound
	}
	c := *a
	return &c, nil
}

// ActionList pages newest first; the cursor is the index to start at.
func (f *fakeOutbox) ActionList(_ context.Context, p outbox.ActionListParams) (*outbox.ActionListResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("ActionList"); err != nil {
		return nil, err
	}
	f.lastLst = p
	var match []outbox.Action
	for _, a := range slices.Backward(f.actions) {
		if a.WorkspaceID == p.WorkspaceID && (p.State == "" || a.State == p.State) && (p.LaneKey == "" || a.LaneKey == p.LaneKey) {
			match = append(match, a)
		}
	}
	start := 0
	if p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 0 || n > len(match) {
			return nil, &outbox.ValidationError{Field: "cursor", Message: "invalid"}
		}
		start = n
	}
	end := min(start+p.Limit, len(match))
	res := &outbox.ActionListResult{Actions: match[start:end]}
	if end < len(match) {
		res.NextCursor = strconv.Itoa(end)
	}
	return res, nil
}

func (f *fakeOutbox) transition(method, id string, from []outbox.State, to outbox.State) (*outbox.Action, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter(method); err != nil {
		return nil, err
	}
	a := f.find(id)
	if a == nil {
		return nil, outbox.ErrNotFound
	}
	if !slices.Contains(from, a.State) {
		return nil, &outbox.TransitionError{ID: id, From: a.State, To: to}
	}
	a.State = to
	if to.Ended() {
		a.StopReason = outbox.StopCancelled
		a.EndedAt = f.clk.Now()
		a.Payload = nil
	}
	c := *a
	return &c, nil
}

func (f *fakeOutbox) Admit(_ context.Context, id string) (*outbox.Action, error) {
	return f.transition("Admit", id, []outbox.State{outbox.StatePROPOSED}, outbox.StateADMITTED)
}

func (f *fakeOutbox) Cancel(_ context.Context, id string) (*outbox.Action, error) {
	return f.transition("Cancel", id, []outbox.State{outbox.StatePROPOSED, outbox.StateADMITTED}, outbox.StateCANCELLED)
}

func (f *fakeOutbox) EraseSubject(_ context.Context, ws, subject string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("EraseSubject"); err != nil {
		return 0, err
	}
	n := 0
	f.actions = slices.DeleteFunc(f.actions, func(a outbox.Action) bool {
		if a.WorkspaceID == ws && a.SubjectID == subject {
			delete(f.idem, a.WorkspaceID+"#"+a.IdempotencyKey)
			n++
			return true
		}
		return false
	})
	return n, nil
}
