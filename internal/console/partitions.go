package console

import (
	"net/http"
	"time"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Sweep is one pass of a drainer as `ferry dev` records it.
type Sweep struct {
	At         time.Time
	Took       time.Duration
	Partitions []int // the partitions drained (nil: every partition, a sweep)
	Claimed    int
	Ended      int
	Err        string // why it failed ("" when it did not)
}

type partitionsData struct {
	Layout outbox.PartitionLayout
	Fences []outbox.ClaimFence
	Sweeps []Sweep
	Now    time.Time
}

// partitions shows the partition map (count, live, kept, the counts
// applied), each partition's claim fence (how many claims took it, who took
// it last and until when, what it tracks) and, in ferry dev, the drainer's
// last passes. The instance's layout is an operator's page.
func (h *Handler) partitions(r *http.Request, v *Viewer) (*page, error) {
	if !v.Operator {
		return nil, errOperatorsOnly
	}
	l, err := h.opts.Engine.PartitionLayout(r.Context())
	if err != nil {
		return nil, err
	}
	f, err := h.opts.Engine.ClaimFencesGet(r.Context())
	if err != nil {
		return nil, err
	}
	d := partitionsData{Layout: l, Fences: f, Now: h.opts.Clock.Now()}
	if h.opts.Sweeps != nil {
		d.Sweeps = h.opts.Sweeps()
	}
	return &page{Title: "Partitions", Template: "partitions", Data: d}, nil
}
