package operator

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ferryhq/ferry/internal/outbox"
)

// ActionJSON is an action as the operator's commands print it: the HTTP
// API's fields (API.md) and the engine's own (partition, epoch, fence,
// lease, owner). Times are RFC 3339 UTC; unset ones are null.
type ActionJSON struct {
	ID             string  `json:"id"`
	Kind           string  `json:"kind"`
	WorkspaceID    *string `json:"workspace_id"`
	LaneKey        *string `json:"lane_key"`
	IdempotencyKey *string `json:"idempotency_key"`
	SubjectID      *string `json:"subject_id"`
	State          string  `json:"state"`
	StopReason     *string `json:"stop_reason"`
	Attempt        int     `json:"attempt"`
	MaxAttempts    int     `json:"max_attempts"`
	Epoch          int64   `json:"epoch"`
	Partition      int     `json:"partition"`
	ReadbackRef    *string `json:"readback_ref"`
	CreatedAt      *string `json:"created_at"`
	NextAttemptAt  *string `json:"next_attempt_at"`
	LeaseExpiresAt *string `json:"lease_expires_at"`
	WriteStartedAt *string `json:"write_started_at"`
	ExpiresAt      *string `json:"expires_at"`
	EndedAt        *string `json:"ended_at"`
	Owner          *string `json:"owner"`
}

func newActionJSON(a *outbox.Action) ActionJSON {
	j := ActionJSON{
		ID: a.ID, Kind: a.Kind, WorkspaceID: opt(a.WorkspaceID), LaneKey: opt(a.LaneKey),
		IdempotencyKey: opt(a.IdempotencyKey), SubjectID: opt(a.SubjectID), State: string(a.State),
		StopReason: opt(string(a.StopReason)), Attempt: a.Attempt, MaxAttempts: a.MaxAttempts, Epoch: a.Epoch,
		Partition: a.Partition, ReadbackRef: opt(a.ReadbackRef), CreatedAt: optTime(a.CreatedAt),
		WriteStartedAt: optTime(a.WriteStartedAt), ExpiresAt: optTime(a.ExpiresAt), EndedAt: optTime(a.EndedAt),
		Owner: opt(a.Owner),
	}
	if !a.State.Ended() {
		j.NextAttemptAt = optTime(a.NextAttemptAt)
		j.LeaseExpiresAt = optTime(a.LeaseExpiresAt)
	}
	return j
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// table prints rows under a header, aligned in columns.
func table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// dash shows an empty value in a table.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// when shows a time in a table: UTC to the second.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

// age shows a duration in a table, to the second.
func age(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return d.Round(time.Second).String()
}

// usageLine is the closing line of every human output: what the command
// cost in DynamoDB.
func (s *Session) usageLine() {
	u := s.Meter.Usage()
	fmt.Fprintf(s.Out, "\nDynamoDB: %d calls, %.1f read units, %.1f write units\n", u.Calls, u.ReadUnits, u.WriteUnits)
}

func (s *Session) printf(format string, args ...any) { fmt.Fprintf(s.Out, format, args...) }
