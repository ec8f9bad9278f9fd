package console

import (
	"net/http"
	"slices"
	"strings"

	"github.com/ferryhq/ferry/internal/operator"
	"github.com/ferryhq/ferry/internal/outbox"
)

// eraseData is the erasure's confirmation, and then its result.
type eraseData struct {
	Workspace, Subject string
	Counts             []stateCount
	Found              int
	Question           string
	Erased             int
	Done               bool
	Note               string
}

type stateCount struct {
	State string
	N     int
}

// subjectOf reads and checks the subject and its workspace from the
// query: a viewer erases only in a workspace it may see.
func subjectOf(r *http.Request, v *Viewer) (ws, subject string, err error) {
	q := r.URL.Query()
	ws, subject = q.Get("ws"), q.Get("subject")
	switch {
	case subject == "" || ws == "":
		return "", "", badRequest("Name the subject and its workspace (an erasure is within one workspace).")
	case !v.Sees(ws):
		return "", "", &userError{status: http.StatusForbidden, msg: "The workspace " + ws + " is not one you may see."}
	}
	return ws, subject, nil
}

// eraseConfirm counts the subject's actions by state and asks what `ferry
// subjects erase` asks.
func (h *Handler) eraseConfirm(r *http.Request, v *Viewer) (*page, error) {
	if !h.opts.AllowChanges {
		return nil, errReadOnly
	}
	ws, subject, err := subjectOf(r, v)
	if err != nil {
		return nil, err
	}
	counts, n, err := operator.CountSubject(r.Context(), h.opts.Engine, ws, subject)
	if err != nil {
		return nil, err
	}
	d := eraseData{Workspace: ws, Subject: subject, Found: n, Question: operator.EraseQuestion(n, subject)}
	for _, st := range slices.Sorted(mapKeys(counts)) {
		d.Counts = append(d.Counts, stateCount{st, counts[st]})
	}
	return &page{Title: "Erase a subject", Template: "erase", Data: d, still: true}, nil
}

func mapKeys(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// erase erases the subject's actions in the workspace with the engine's
// erasure, as `ferry subjects erase --workspace` does, after the
// confirmation's form (its CSRF token, this console's origin).
func (h *Handler) erase(r *http.Request, v *Viewer) (*page, error) {
	if !h.opts.AllowChanges {
		return nil, errReadOnly
	}
	if err := h.checkForm(r); err != nil {
		return nil, err
	}
	ws, subject, err := subjectOf(r, v)
	if err != nil {
		return nil, err
	}
	n, err := h.opts.Engine.SubjectErase(r.Context(), outbox.SubjectEraseParams{WorkspaceID: ws, SubjectID: subject})
	if err != nil {
		return nil, err
	}
	h.opts.Logger.Info("console: subject erased", "workspace", ws, "erased", n, "viewer", v.ID)
	return &page{Title: "Erased", Template: "erase", still: true,
		Data: eraseData{Workspace: ws, Subject: subject, Erased: n, Done: true, Note: strings.TrimSpace(operator.ErasedNote)}}, nil
}
