package console

import (
	"net/http"
	"strconv"
	"time"

	"github.com/ferryhq/ferry/internal/outbox"
)

// endedColumns are the outcomes the overview counts, in order (as `ferry
// status` shows them).
var endedColumns = []string{"DONE", "UNCERTAIN", "FAILED", "CANCELLED", "ERASED"}

// backlogRow is one line of the overview's backlog table.
type backlogRow struct {
	Name string
	outbox.PartitionStatus
	// DueClaimable: due now and claimable; BehindLane: due, but behind an
	// earlier live member of its lane (the status's DueDepth and
	// BlockedDepth).
	DueClaimable, BehindLane int
	Ended                    []int // by endedColumns
}

type overviewData struct {
	Status      *outbox.Status
	Rows        []backlogRow
	Total       backlogRow
	EndedSince  time.Time
	Columns     []string
	Workspaces  []string // the viewer's, when it is not an operator
	Chart       bool
	ChartSource string
	AllEnded    bool // counted up to the CLI's bound
	EndedBound  int  // ended rows counted per partition at most
}

func newBacklogRow(name string, ps outbox.PartitionStatus) backlogRow {
	r := backlogRow{Name: name, PartitionStatus: ps, DueClaimable: ps.DueDepth, BehindLane: ps.BlockedDepth}
	for _, c := range endedColumns {
		r.Ended = append(r.Ended, ps.Ended[c])
	}
	return r
}

// Bounds of the overview's reads: partitions read at once, and the ended
// rows counted per partition (`?ended=all`: the CLI's bound).
const (
	overviewConcurrency = 8
	overviewEndedRows   = 500
)

// overview is the first page: the backlog per partition and in total (as
// `ferry status` reads it: bounded reads of each partition's due index,
// claim fence and retention journal, eight partitions at once), the
// actions ended today by outcome (at most overviewEndedRows counted per
// partition unless `?ended=all`), and, for an operator, the chart of the
// last hour.
func (h *Handler) overview(r *http.Request, v *Viewer) (*page, error) {
	now := h.opts.Clock.Now().UTC()
	since := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	p := outbox.StatusParams{EndedSince: since, Concurrency: overviewConcurrency, MaxEndedRows: overviewEndedRows}
	all := r.URL.Query().Get("ended") == "all"
	if all {
		p.MaxEndedRows = outbox.DefaultStatusEndedRows
	}
	if !v.Operator {
		p.Workspaces = v.Workspaces
	}
	st, err := h.opts.Engine.StatusGet(r.Context(), p)
	if err != nil {
		return nil, err
	}
	d := overviewData{Status: st, EndedSince: since, Columns: endedColumns, Total: newBacklogRow("total", st.Total), AllEnded: all, EndedBound: p.MaxEndedRows}
	for _, ps := range st.Partitions {
		d.Rows = append(d.Rows, newBacklogRow(strconv.Itoa(ps.Partition), ps))
	}
	if !v.Operator {
		d.Workspaces = v.Workspaces
	}
	if h.opts.Metrics != nil && v.Operator {
		d.Chart, d.ChartSource = true, h.opts.Metrics.Source()
	}
	return &page{Title: "Overview", Template: "overview", Data: d}, nil
}
