package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ferryhq/ferry/internal/outbox"
)

// listRows bounds the rows one page of a listing examines: a filter that
// matches few rows answers a short page with a cursor rather than read on.
const listRows = 1000

// pageSize is how many actions a listing shows per page.
const pageSize = 50

// listData is the actions page: the filters as given, the page and where
// the next one starts.
type listData struct {
	Filter     listFilter
	Workspaces []string // the viewer's (empty: an operator, any)
	States     []outbox.State
	Actions    []outbox.Action
	Examined   int
	Next       string // the next page's URL ("" on the last)
	Source     string // what the listing read, in words
	Changes    bool   // the console may change actions (erase a subject)
}

// listFilter is the actions page's query.
type listFilter struct {
	Workspace, State, Kind, Lane, Subject, From, Before, Cursor string
}

var allStates = []outbox.State{outbox.StatePROPOSED, outbox.StateADMITTED, outbox.StateEXECUTING,
	outbox.StateDONE, outbox.StateUNCERTAIN, outbox.StateFAILED, outbox.StateCANCELLED}

// timeForm is how the filters' times are written (an <input
// type="datetime-local">, read as UTC).
const timeForm = "2006-01-02T15:04"

// findParams turns the query into the engine's listing parameters for
// viewer v: a workspace principal lists one of its own workspaces (the
// first when none is named), never another's.
func findParams(q url.Values, v *Viewer) (listFilter, outbox.ActionFindParams, error) {
	f := listFilter{Workspace: q.Get("ws"), State: q.Get("state"), Kind: q.Get("kind"), Lane: q.Get("lane"),
		Subject: q.Get("subject"), From: q.Get("from"), Before: q.Get("before"), Cursor: q.Get("cursor")}
	if f.Workspace == "" && !v.Operator {
		f.Workspace = v.Workspaces[0]
	}
	if f.Workspace != "" && !v.Sees(f.Workspace) {
		return f, outbox.ActionFindParams{}, &userError{status: http.StatusForbidden, msg: "The workspace " + f.Workspace + " is not one you may see."}
	}
	p := outbox.ActionFindParams{WorkspaceID: f.Workspace, State: outbox.State(f.State), Kind: f.Kind, LaneKey: f.Lane,
		SubjectID: f.Subject, Cursor: f.Cursor, Limit: pageSize, MaxRows: listRows}
	for _, t := range []struct {
		field, in string
		to        *time.Time
	}{{"from", f.From, &p.CreatedFrom}, {"before", f.Before, &p.CreatedBefore}} {
		if t.in == "" {
			continue
		}
		at, err := time.Parse(timeForm, t.in)
		if err != nil {
			return f, p, badRequest("%s: want a time as 2026-12-01T09:30 (UTC), not %q", t.field, t.in)
		}
		*t.to = at
	}
	if (f.Lane != "" || f.Subject != "") && f.Workspace == "" {
		return f, p, badRequest("A lane or a subject is named within a workspace: choose the workspace too.")
	}
	return f, p, nil
}

// actions lists actions with the page's filters, one bounded page at a
// time. A workspace is read through the workspace index (or its lane, or
// its subject's index), never by a scan; only an operator's listing of
// every workspace scans.
func (h *Handler) actions(r *http.Request, v *Viewer) (*page, error) {
	q := r.URL.Query()
	f, p, err := findParams(q, v)
	if err != nil {
		return nil, err
	}
	res, err := h.opts.Engine.ActionFind(r.Context(), p)
	if err != nil {
		return nil, err
	}
	d := listData{Filter: f, States: allStates, Examined: res.Examined, Source: sourceWords(p), Changes: h.opts.AllowChanges}
	if !v.Operator {
		d.Workspaces = v.Workspaces
	}
	for _, a := range res.Actions {
		// The engine filters by workspace; this keeps a wrong cursor from
		// ever showing another workspace's action.
		if v.Sees(a.WorkspaceID) {
			a.Payload = nil
			d.Actions = append(d.Actions, a)
		}
	}
	if res.NextCursor != "" {
		next := cloneValues(q)
		next.Set("cursor", res.NextCursor)
		d.Next = Prefix + "/actions?" + next.Encode()
	}
	return &page{Title: "Actions", Template: "actions", Data: d}, nil
}

func cloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, vs := range q {
		out[k] = slices.Clone(vs)
	}
	return out
}

func sourceWords(p outbox.ActionFindParams) string {
	switch {
	case p.SubjectID != "":
		return "the subject index of workspace " + p.WorkspaceID
	case p.LaneKey != "":
		return "the lane's partition, in lane order"
	case p.WorkspaceID != "":
		return "the workspace index of " + p.WorkspaceID + ", oldest first"
	}
	return "a scan of the table (every workspace), in key order"
}

// actionData is the detail page of one action.
type actionData struct {
	A          *outbox.Action
	Payload    string // indented JSON; "" once ended
	Steps      []step
	Timeline   []event
	Attempts   []AttemptEvent
	Neighbours *outbox.LaneNeighbours
	Wait       string
	Delivery   *outbox.Delivery
	Done       string // what a change just did
	Changes    bool
	Lease      time.Duration
}

// action shows one action: where it is in its state machine, what the
// table keeps of its attempts, its delivery evidence, its lane neighbours
// and, while it has one, its payload. An action of a workspace the viewer
// may not see is "not found", as the API answers.
func (h *Handler) action(r *http.Request, v *Viewer) (*page, error) {
	a, err := h.visibleAction(r, v)
	if err != nil {
		return nil, err
	}
	n, err := h.opts.Engine.ActionNeighbours(r.Context(), a)
	if err != nil {
		return nil, err
	}
	dl, err := h.opts.Engine.DeliveryGet(r.Context(), a)
	if err != nil {
		return nil, err
	}
	now := h.opts.Clock.Now()
	cfg := h.opts.Engine.Config()
	d := actionData{A: a, Steps: stateSteps(a.State), Neighbours: n, Delivery: dl, Wait: waitReason(a, n.Prev, now),
		Timeline: timeline(a, dl, cfg.Lease), Changes: h.opts.AllowChanges, Lease: cfg.Lease}
	switch r.URL.Query().Get("done") {
	case "admitted":
		d.Done = "Admitted: it is due now."
	case "cancelled":
		d.Done = "Cancelled: it will never be carried out."
	}
	d.Payload = prettyJSON(a.Payload)
	if h.opts.Attempts != nil {
		d.Attempts = h.opts.Attempts(a.ID)
	}
	return &page{Title: "Action " + a.ID, Template: "action", Data: d}, nil
}

// prettyJSON indents a payload for people, its characters as they are
// (`<` rather than `\u003c`: html/template escapes the page, not the
// JSON); "" for none.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// visibleAction reads the action the path names, if the viewer may see it.
func (h *Handler) visibleAction(r *http.Request, v *Viewer) (*outbox.Action, error) {
	id := r.PathValue("id")
	if id == "" || len(id) > 64 || strings.ContainsAny(id, "/ \t\r\n") {
		return nil, errNotFound
	}
	a, err := h.opts.Engine.ActionGet(r.Context(), id)
	if err != nil {
		return nil, err
	}
	if !v.Sees(a.WorkspaceID) {
		return nil, errNotFound
	}
	return a, nil
}

// step is one state of the state machine as the detail page draws it.
type step struct {
	State   outbox.State
	Current bool
	Passed  bool
}

// stateSteps lays the state machine out (design.md §3.1): proposed,
// admitted, executing, then the one end it reached.
func stateSteps(st outbox.State) []step {
	order := []outbox.State{outbox.StatePROPOSED, outbox.StateADMITTED, outbox.StateEXECUTING}
	at := slices.Index(order, st)
	var out []step
	for i, s := range order {
		out = append(out, step{State: s, Current: i == at, Passed: at < 0 || i < at})
	}
	if st.Ended() {
		out = append(out, step{State: st, Current: true})
	} else {
		out = append(out, step{State: "ended"})
	}
	return out
}
