package console

import (
	"net/http"
	"net/url"

	"github.com/ferryhq/ferry/internal/outbox"
)

// laneMember is one member of a lane as the lane page lists it.
type laneMember struct {
	outbox.Action
	Head   bool
	Reason string
}

type laneData struct {
	Workspace, Lane string
	Workspaces      []string
	Members         []laneMember
	Examined        int
	Next            string
	Why             string // why the lane waits, from its head
}

// lane lists a lane's members in enqueue order (its partition under each
// of the table's last partition counts), the head highlighted with the
// reason the lane waits: one bounded page at a time.
func (h *Handler) lane(r *http.Request, v *Viewer) (*page, error) {
	q := r.URL.Query()
	d := laneData{Workspace: q.Get("ws"), Lane: q.Get("lane")}
	if !v.Operator {
		d.Workspaces = v.Workspaces
		if d.Workspace == "" {
			d.Workspace = v.Workspaces[0]
		}
	}
	if d.Lane == "" {
		return &page{Title: "Lanes", Template: "lane", Data: d}, nil
	}
	if d.Workspace == "" {
		return nil, badRequest("A lane is named within a workspace: choose the workspace too.")
	}
	if !v.Sees(d.Workspace) {
		return nil, &userError{status: http.StatusForbidden, msg: "The workspace " + d.Workspace + " is not one you may see."}
	}
	res, err := h.opts.Engine.ActionFind(r.Context(), outbox.ActionFindParams{WorkspaceID: d.Workspace, LaneKey: d.Lane,
		Cursor: q.Get("cursor"), Limit: 100, MaxRows: listRows})
	if err != nil {
		return nil, err
	}
	d.Examined = res.Examined
	now := h.opts.Clock.Now()
	var prevLive *outbox.Action
	for i := range res.Actions {
		a := res.Actions[i]
		a.Payload = nil
		m := laneMember{Action: a}
		switch {
		case a.State.Ended():
			m.Reason = "ended " + string(a.StopReason)
		case prevLive == nil && q.Get("cursor") == "":
			m.Head = true
			m.Reason = waitReason(&a, nil, now)
			d.Why = m.Reason
		default:
			m.Reason = "waits for the members before it"
		}
		if !a.State.Ended() && prevLive == nil {
			prevLive = &res.Actions[i]
		}
		d.Members = append(d.Members, m)
	}
	if d.Why == "" && q.Get("cursor") == "" {
		d.Why = "No live member: the lane is drained."
	}
	if res.NextCursor != "" {
		next := url.Values{"ws": {d.Workspace}, "lane": {d.Lane}, "cursor": {res.NextCursor}}
		d.Next = Prefix + "/lanes?" + next.Encode()
	}
	return &page{Title: "Lane " + d.Lane, Template: "lane", Data: d}, nil
}
