package operator

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ferryhq/ferry/internal/outbox"
)

// EraseParams are the options of `ferry subjects erase`.
type EraseParams struct {
	SubjectID string
	// WorkspaceID limits the erasure to one workspace; AllWorkspaces
	// erases in every workspace that holds the subject (found through the
	// subject index).
	WorkspaceID   string
	AllWorkspaces bool
	// DryRun counts what would be erased and erases nothing.
	DryRun bool
}

// eraseJSON is the answer of `ferry subjects erase -o json`.
type eraseJSON struct {
	SubjectID  string                    `json:"subject_id"`
	DryRun     bool                      `json:"dry_run"`
	Workspaces map[string]map[string]int `json:"workspaces"` // workspace -> state -> actions found
	Found      int                       `json:"found"`
	Erased     *int                      `json:"erased"` // null in a dry run
	Usage      Usage                     `json:"dynamodb"`
}

// Erase runs `ferry subjects erase`: it counts the subject's actions in
// the chosen workspaces (by state), stops there in a dry run, else asks,
// then erases them with the engine's erasure, workspace by workspace, with
// a progress bar on a terminal.
func (s *Session) Erase(ctx context.Context, p EraseParams) error {
	if p.SubjectID == "" {
		return fail(ExitUsage, "name the subject to erase")
	}
	workspaces := []string{p.WorkspaceID}
	if p.AllWorkspaces {
		r, err := s.Engine.SubjectWorkspaces(ctx, p.SubjectID)
		if err != nil {
			return classify(err)
		}
		workspaces = r.Workspaces
	}
	res := eraseJSON{SubjectID: p.SubjectID, DryRun: p.DryRun, Workspaces: map[string]map[string]int{}}
	for _, ws := range workspaces {
		counts, n, err := s.countSubject(ctx, ws, p.SubjectID)
		if err != nil {
			return err
		}
		if n > 0 {
			res.Workspaces[ws] = counts
			res.Found += n
		}
	}
	if !s.JSON {
		s.printf("subject %s: %d actions%s\n", p.SubjectID, res.Found, s.byWorkspace(res.Workspaces))
	}
	if p.DryRun || res.Found == 0 {
		if !s.JSON {
			if p.DryRun {
				s.printf("dry run: nothing erased\n")
			}
			s.usageLine()
			return nil
		}
		res.Usage = s.Meter.Usage()
		return writeJSON(s.Out, res)
	}
	if err := s.confirm(EraseQuestion(res.Found, p.SubjectID)); err != nil {
		return err
	}
	erased := 0
	bar := s.progress(res.Found)
	for _, ws := range slices.Sorted(maps.Keys(res.Workspaces)) {
		base := erased
		n, err := s.Engine.SubjectErase(ctx, outbox.SubjectEraseParams{WorkspaceID: ws, SubjectID: p.SubjectID,
			Progress: func(k int) { bar(base + k) }})
		erased += n
		if err != nil {
			bar(-1)
			return classify(fmt.Errorf("erased %d of %d actions, then: %w", erased, res.Found, err))
		}
	}
	bar(-1)
	if s.JSON {
		res.Erased, res.Usage = &erased, s.Meter.Usage()
		return writeJSON(s.Out, res)
	}
	s.printf("erased %d actions of subject %s\n", erased, p.SubjectID)
	s.printf("%s\n", ErasedNote)
	s.usageLine()
	return nil
}

// EraseQuestion is the confirmation `ferry subjects erase` (and the
// console) asks before erasing n actions of a subject.
func EraseQuestion(n int, subject string) string {
	return fmt.Sprintf("Erase %d actions of subject %s, their idempotency records and delivery evidence? This cannot be undone", n, subject)
}

// ErasedNote is what `ferry subjects erase` (and the console) says after
// an erasure.
const ErasedNote = "An action already claimed may still make its one provider call (an idempotent receiver from its claim, any other kind from its write fence); nothing erased is carried out again."

// countSubject counts a subject's actions in one workspace by state.
func (s *Session) countSubject(ctx context.Context, ws, subject string) (map[string]int, int, error) {
	return CountSubject(ctx, s.Engine, ws, subject)
}

// CountSubject counts a subject's actions in one workspace by state, as
// `ferry subjects erase` does before it asks.
func CountSubject(ctx context.Context, e *outbox.Engine, ws, subject string) (map[string]int, int, error) {
	counts := map[string]int{}
	n := 0
	p := outbox.ActionFindParams{WorkspaceID: ws, SubjectID: subject, Limit: 1000}
	for {
		r, err := e.ActionFind(ctx, p)
		if err != nil {
			return nil, 0, classify(err)
		}
		for _, a := range r.Actions {
			counts[string(a.State)]++
			n++
		}
		if r.NextCursor == "" {
			return counts, n, nil
		}
		p.Cursor = r.NextCursor
	}
}

func (s *Session) byWorkspace(m map[string]map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, ws := range slices.Sorted(maps.Keys(m)) {
		var st []string
		for _, state := range slices.Sorted(maps.Keys(m[ws])) {
			st = append(st, state+" "+strconv.Itoa(m[ws][state]))
		}
		name := ws
		if name == "" {
			name = "(instance-level)"
		}
		parts = append(parts, fmt.Sprintf("%s: %s", name, strings.Join(st, ", ")))
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// progress returns a function that draws a progress bar of total on Err
// (a terminal only; -1 ends the bar).
func (s *Session) progress(total int) func(done int) {
	if !s.Interactive || s.JSON || total == 0 {
		return func(int) {}
	}
	const width = 30
	return func(done int) {
		if done < 0 {
			fmt.Fprintln(s.Err)
			return
		}
		filled := width * done / total
		fmt.Fprintf(s.Err, "\rerasing [%s%s] %d/%d", strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total)
	}
}
