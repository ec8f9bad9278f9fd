package console

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/ferryhq/ferry/internal/operator"
	"github.com/ferryhq/ferry/internal/outbox"
)

type proposalsData struct {
	Workspace  string
	Workspaces []string
	Actions    []outbox.Action
	Examined   int
	Next       string
	Changes    bool
}

// proposals lists the PROPOSED actions, to admit or cancel (each after a
// confirmation page). A workspace principal lists one of its workspaces
// through the workspace index; an operator every workspace (a scan,
// bounded per page) or one.
func (h *Handler) proposals(r *http.Request, v *Viewer) (*page, error) {
	q := r.URL.Query()
	d := proposalsData{Workspace: q.Get("ws"), Changes: h.opts.AllowChanges}
	if !v.Operator {
		d.Workspaces = v.Workspaces
		if d.Workspace == "" {
			d.Workspace = v.Workspaces[0]
		}
	}
	if d.Workspace != "" && !v.Sees(d.Workspace) {
		return nil, &userError{status: http.StatusForbidden, msg: "The workspace " + d.Workspace + " is not one you may see."}
	}
	res, err := h.opts.Engine.ActionFind(r.Context(), outbox.ActionFindParams{WorkspaceID: d.Workspace, State: outbox.StatePROPOSED,
		Cursor: q.Get("cursor"), Limit: pageSize, MaxRows: listRows})
	if err != nil {
		return nil, err
	}
	d.Examined = res.Examined
	for _, a := range res.Actions {
		if v.Sees(a.WorkspaceID) {
			a.Payload = nil
			d.Actions = append(d.Actions, a)
		}
	}
	if res.NextCursor != "" {
		next := url.Values{"cursor": {res.NextCursor}}
		if d.Workspace != "" {
			next.Set("ws", d.Workspace)
		}
		d.Next = Prefix + "/proposals?" + next.Encode()
	}
	return &page{Title: "Proposals", Template: "proposals", Data: d}, nil
}

// verbs are the changes the console makes, as `ferry actions admit` and
// `ferry actions cancel` make them.
var verbs = map[string]struct {
	question func(*outbox.Action) string
	do       func(h *Handler, r *http.Request, a *outbox.Action) (*outbox.Action, error)
	done     string
}{
	"admit": {operator.AdmitQuestion, func(h *Handler, r *http.Request, a *outbox.Action) (*outbox.Action, error) {
		return operator.AdmitAction(r.Context(), h.opts.Engine, a)
	}, "admitted"},
	"cancel": {operator.CancelQuestion, func(h *Handler, r *http.Request, a *outbox.Action) (*outbox.Action, error) {
		return operator.CancelAction(r.Context(), h.opts.Engine, a)
	}, "cancelled"},
}

type confirmData struct {
	A        *outbox.Action
	Verb     string
	Question string
}

// confirm asks before a change, with the question the CLI asks.
func (h *Handler) confirm(r *http.Request, v *Viewer) (*page, error) {
	vb, ok := verbs[r.PathValue("verb")]
	if !ok {
		return nil, &userError{status: http.StatusNotFound, msg: "There is no such page."}
	}
	if !h.opts.AllowChanges {
		return nil, errReadOnly
	}
	a, err := h.visibleAction(r, v)
	if err != nil {
		return nil, err
	}
	return &page{Title: "Confirm", Template: "confirm", still: true, Data: confirmData{A: a, Verb: r.PathValue("verb"), Question: vb.question(a)}}, nil
}

var errReadOnly = &userError{status: http.StatusForbidden, msg: "This console only reads: start it with --allow-changes to admit or cancel."}

// refusedData is the answer to a change the rules refused, with the exit
// code `ferry actions` gives the same refusal.
type refusedData struct {
	A        *outbox.Action
	Message  string
	ExitCode int
}

// change admits or cancels an action after its confirmation: the form
// must come from this console (its origin) and carry the session's CSRF
// token; the change is the CLI's, refused by the same rules.
func (h *Handler) change(r *http.Request, v *Viewer) (*page, error) {
	vb, ok := verbs[r.PathValue("verb")]
	if !ok {
		return nil, &userError{status: http.StatusNotFound, msg: "There is no such page."}
	}
	if !h.opts.AllowChanges {
		return nil, errReadOnly
	}
	if err := h.checkForm(r); err != nil {
		return nil, err
	}
	a, err := h.visibleAction(r, v)
	if err != nil {
		return nil, err
	}
	changed, err := vb.do(h, r, a)
	if err != nil {
		var oe *operator.Error
		if !errors.As(err, &oe) || oe.Code != operator.ExitRefused {
			return nil, err
		}
		return &page{Title: "Refused", Template: "refused", Status: http.StatusConflict, still: true,
			Data: refusedData{A: a, Message: oe.Error(), ExitCode: oe.Code}}, nil
	}
	h.opts.Logger.Info("console: "+vb.done, "action.id", changed.ID, "viewer", v.ID)
	if vb.done == "admitted" && h.opts.OnAdmitted != nil {
		h.opts.OnAdmitted(changed)
	}
	return &page{redirect: Prefix + "/actions/" + url.PathEscape(changed.ID) + "?done=" + vb.done}, nil
}

// checkForm refuses a change whose form did not come from this console.
func (h *Handler) checkForm(r *http.Request) error {
	ss := h.sessions.find(r)
	forbidden := &userError{status: http.StatusForbidden, msg: "Refused: the form did not come from this console's page (its CSRF token is missing or wrong). Load the page again and retry."}
	if ss == nil || !sameOrigin(r) {
		return forbidden
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil || !ss.validCSRF(r.PostForm.Get("csrf")) {
		return forbidden
	}
	return nil
}
