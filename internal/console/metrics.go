package console

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"
)

// Metrics feeds the overview's chart: what happened each minute of the
// last hour.
type Metrics interface {
	// Source says where the figures come from, for the chart's caption.
	Source() string
	// Series returns the hour before now, minute by minute.
	Series(ctx context.Context, now time.Time) (*Series, error)
}

// SeriesMinutes is how many minutes the chart shows.
const SeriesMinutes = 60

// Series is the chart's data: one value per minute, oldest first; nil
// where there is no figure for that minute.
type Series struct {
	Minutes   []int64    `json:"minutes"` // each minute's start, Unix seconds
	Enqueued  []*float64 `json:"enqueued"`
	Delivered []*float64 `json:"delivered"` // ended DONE
	Failed    []*float64 `json:"failed"`    // ended otherwise, cancellations aside
	Deferred  []*float64 `json:"deferred"`  // put back by a provider's "not now"
	Backlog   []*float64 `json:"backlog"`   // actions due (the reaper's gauge), the minute's highest
	Source    string     `json:"source"`
}

// newSeries is an empty series of the hour ending with now's minute.
func newSeries(now time.Time, source string) *Series {
	end := now.Truncate(time.Minute)
	s := &Series{Source: source}
	for i := SeriesMinutes - 1; i >= 0; i-- {
		s.Minutes = append(s.Minutes, end.Add(-time.Duration(i)*time.Minute).Unix())
	}
	for _, col := range []*[]*float64{&s.Enqueued, &s.Delivered, &s.Failed, &s.Deferred, &s.Backlog} {
		*col = make([]*float64, SeriesMinutes)
	}
	return s
}

// at is the index of minute t in s, or -1.
func (s *Series) at(t time.Time) int {
	m := t.Truncate(time.Minute).Unix()
	first := s.Minutes[0]
	i := int((m - first) / 60)
	if m < first || i >= len(s.Minutes) {
		return -1
	}
	return i
}

// metricsJSON answers the chart's data (an operator's: the metrics are the
// instance's).
func (h *Handler) metricsJSON(w http.ResponseWriter, r *http.Request) {
	ss := h.sessions.find(r)
	switch {
	case ss == nil:
		w.WriteHeader(http.StatusUnauthorized)
		return
	case !ss.viewer.Operator || h.opts.Metrics == nil:
		w.WriteHeader(http.StatusForbidden)
		return
	}
	s, err := h.opts.Metrics.Series(r.Context(), h.opts.Clock.Now())
	if err != nil {
		h.opts.Logger.Warn("console: reading the metrics failed", slog.Any("error", err))
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(s)
}
