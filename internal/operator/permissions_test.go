package operator

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/iamaction"
	"github.com/ferryhq/ferry/internal/outbox"
)

// TestPermissionsDocCoversTheCalls runs each operator command's paths and
// maps every request (each transaction item by itself) to its IAM action:
// docs/operations.md's permissions table must name each one in the
// command's row or in the row every command shares.
func TestPermissionsDocCoversTheCalls(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	var mu sync.Mutex
	seen := map[string]bool{}
	tb.s.Meter.Record = func(in any) {
		ps, err := iamaction.ForInput(in)
		require.NoError(t, err)
		mu.Lock()
		defer mu.Unlock()
		for _, p := range ps {
			seen[strings.TrimPrefix(p.Action, "dynamodb:")] = true
		}
	}
	took := func(run func()) []string {
		mu.Lock()
		clear(seen)
		mu.Unlock()
		run()
		mu.Lock()
		defer mu.Unlock()
		return slices.Sorted(func(yield func(string) bool) {
			for a := range seen {
				if !yield(a) {
					return
				}
			}
		})
	}
	ok := func(err error) { require.NoError(t, err) }
	tb.s.Yes = true

	// A table with every path's rows: lanes, subjects, keys, proposals,
	// claimed rows in a fence's in-flight map, endings today.
	first := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", SubjectID: "s", IdempotencyKey: "k1"})
	tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L", SubjectID: "s"})
	prop := tb.enqueue(t, outbox.EnqueueParams{Propose: true, LaneKey: "L2", IdempotencyKey: "k2"})
	prop2 := tb.enqueue(t, outbox.EnqueueParams{Propose: true})
	mail := tb.enqueue(t, outbox.EnqueueParams{Kind: "email", SubjectID: "s"})
	_, err := tb.s.Engine.DeliveryRecord(tb.ctx, mail.ID, outbox.DeliveryEvent{Status: outbox.DeliverySent, At: tb.clk.Now()})
	ok(err)
	v, err := tb.s.Engine.FenceTake(tb.ctx, 0, "o", tb.clk.Now().Add(60e9))
	ok(err)
	_, err = tb.s.Engine.Claim(tb.ctx, 0, outbox.ClaimParams{Owner: "o", Version: v, Limit: 1})
	ok(err)
	_, err = tb.s.Engine.Cancel(tb.ctx, tb.enqueue(t, outbox.EnqueueParams{}).ID)
	ok(err)

	calls := map[string][]string{
		"ferry status": took(func() { ok(tb.s.Status(tb.ctx, StatusParams{})) }),
		"ferry actions list": took(func() {
			ok(tb.s.List(tb.ctx, ListParams{}))
			ok(tb.s.List(tb.ctx, ListParams{WorkspaceID: "default"}))
			ok(tb.s.List(tb.ctx, ListParams{WorkspaceID: "default", SubjectID: "s"}))
			ok(tb.s.List(tb.ctx, ListParams{WorkspaceID: "default", LaneKey: "L"}))
		}),
		"ferry actions get": took(func() {
			ok(tb.s.Get(tb.ctx, first.ID))
			ok(tb.s.Get(tb.ctx, mail.ID))
		}),
		"ferry actions cancel": took(func() { ok(tb.s.Cancel(tb.ctx, prop.ID)) }),
		"`admit`":              took(func() { ok(tb.s.Admit(tb.ctx, prop2.ID)) }),
		"ferry subjects erase": took(func() { ok(tb.s.Erase(tb.ctx, EraseParams{SubjectID: "s", AllWorkspaces: true})) }),
		"ferry partitions":     took(func() { ok(tb.s.Partitions(tb.ctx, 8)) }),
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	require.NoError(t, err)
	doc := string(raw)
	row := func(cmd string) string {
		for _, line := range strings.Split(doc, "\n") {
			if strings.HasPrefix(line, "| ") && strings.Contains(strings.SplitN(line[2:], "|", 2)[0], cmd) {
				return line
			}
		}
		t.Fatalf("docs/operations.md has no permissions row for %s", cmd)
		return ""
	}
	every := row("every command")
	for cmd, actions := range calls {
		r := row(cmd)
		t.Logf("%s: %v", cmd, actions)
		require.NotEmpty(t, actions, cmd)
		for _, a := range actions {
			require.True(t, strings.Contains(r, "`"+a+"`") || strings.Contains(every, "`"+a+"`"),
				"docs/operations.md: %s calls dynamodb:%s, which its row does not name: %s", cmd, a, r)
		}
	}
}
