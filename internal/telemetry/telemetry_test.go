package telemetry

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/outbox"
)

type testBundle struct {
	out *bytes.Buffer
	obs *Observer
	clk *clock.Manual
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	out := &bytes.Buffer{}
	w := NewLockedWriter(out)
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	m := NewMetrics(w, clk, map[string]string{"function": "drainer"})
	return &testBundle{out: out, obs: NewObserver(m, NewLogger(w, slog.LevelDebug)), clk: clk}
}

func lines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var docs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.Bytes()))
	for sc.Scan() {
		var doc map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &doc), "line %q", sc.Text())
		docs = append(docs, doc)
	}
	return docs
}

func emfLines(t *testing.T, b *bytes.Buffer) []map[string]any {
	var out []map[string]any
	for _, d := range lines(t, b) {
		if _, ok := d["_aws"]; ok {
			out = append(out, d)
		}
	}
	return out
}

func TestObserver(t *testing.T) {
	t.Parallel()

	action := &outbox.Action{
		ID: "3-00000000000000000007", Kind: "webhook", State: outbox.StateEXECUTING, Attempt: 1, Partition: 3,
		LaneKey: "lane-secret", SubjectID: "subject-secret", IdempotencyKey: "key-secret",
		Payload: json.RawMessage(`{"url":"https://x.test/payload-secret"}`),
	}

	t.Run("CountersAggregateUntilFlush", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.obs.AttemptStarted(action)
		b.obs.AttemptStarted(action)
		b.obs.ActionEnded(action, outbox.OutcomeDone, outbox.StopDone)
		b.obs.ClaimFinished(3, 2, 1, true)
		b.obs.FenceRefused(action)
		require.Empty(t, emfLines(t, b.out))

		require.NoError(t, b.obs.Flush())
		docs := emfLines(t, b.out)
		require.Len(t, docs, 3) // [Kind] (attempts and fence refusals), [Kind,Outcome,StopReason], []

		byMetric := map[string]map[string]any{}
		for _, d := range docs {
			meta := d["_aws"].(map[string]any)
			require.EqualValues(t, b.clk.Now().UnixMilli(), meta["Timestamp"])
			dir := meta["CloudWatchMetrics"].([]any)[0].(map[string]any)
			require.Equal(t, "Ferry", dir["Namespace"])
			require.Equal(t, "drainer", d["function"])
			for _, m := range dir["Metrics"].([]any) {
				byMetric[m.(map[string]any)["Name"].(string)] = d
			}
		}
		require.EqualValues(t, 2, byMetric["Attempts"]["Attempts"])
		require.Equal(t, "webhook", byMetric["Attempts"]["Kind"])
		require.EqualValues(t, 1, byMetric["FenceRefusals"]["FenceRefusals"])
		ended := byMetric["ActionsEnded"]
		require.EqualValues(t, 1, ended["ActionsEnded"])
		require.Equal(t, "DONE", ended["Outcome"])
		require.Equal(t, "DONE", ended["StopReason"])
		require.EqualValues(t, 1, byMetric["ClaimConflicts"]["ClaimConflicts"])
		require.EqualValues(t, 1, byMetric["ShortBatches"]["ShortBatches"])
		require.EqualValues(t, 2, byMetric["ClaimedActions"]["ClaimedActions"])

		// A second flush has nothing left to write.
		b.out.Reset()
		require.NoError(t, b.obs.Flush())
		require.Empty(t, b.out.String())
	})

	t.Run("LogsNameTheActionNeverItsData", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.obs.AttemptStarted(action)
		b.obs.ActionEnded(action, outbox.OutcomeFailed, outbox.StopRejected)
		b.obs.FenceRefused(action)
		logs := lines(t, b.out)
		require.Len(t, logs, 3)
		for _, l := range logs {
			require.Equal(t, action.ID, l[KeyActionID])
			require.Equal(t, "webhook", l[KeyActionKind])
		}
		require.Equal(t, "WARN", logs[1]["level"])
		require.Equal(t, "REJECTED", logs[1]["stop_reason"])
		// A deferral run that ran out ends FAILED (the engine observes it
		// so, issue 28): a warning too, counted under its own stop reason
		// (issue 13) and under Outcome FAILED, as the alarm reads it.
		exhausted := *action
		exhausted.State = outbox.StateFAILED
		b.out.Reset()
		b.obs.ActionEnded(&exhausted, outbox.OutcomeFailed, outbox.StopDeferralsExhausted)
		require.NoError(t, b.obs.Flush())
		require.Contains(t, b.out.String(), `"level":"WARN"`)
		require.Contains(t, b.out.String(), `"outcome":"FAILED"`)
		require.Contains(t, b.out.String(), `"Outcome":"FAILED"`)
		require.Contains(t, b.out.String(), `"stop_reason":"DEFERRALS_EXHAUSTED"`)
		require.Contains(t, b.out.String(), `"StopReason":"DEFERRALS_EXHAUSTED"`)
		for _, secret := range []string{"payload-secret", "lane-secret", "subject-secret", "key-secret"} {
			require.NotContains(t, b.out.String(), secret)
		}
	})

	t.Run("BacklogGauges", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.NoError(t, b.obs.RecordBacklog([]Backlog{
			{Partition: 0, DueDepth: 3, ClaimedDepth: 1, OldestDueAge: 12.5},
			{Partition: 1, DueDepth: 2, BlockedDepth: 5, StuckLaneHeads: 1, OldestDueAge: 40, OldestBlockedAge: 1200},
		}))
		docs := emfLines(t, b.out)
		require.Len(t, docs, 3)
		require.Equal(t, "0", docs[0]["Partition"])
		require.EqualValues(t, 3, docs[0]["BacklogDepth"])
		total := docs[2]
		require.NotContains(t, total, "Partition")
		require.EqualValues(t, 5, total["BacklogDepth"])
		require.EqualValues(t, 1, total["ClaimedDepth"])
		require.EqualValues(t, 1, total["StuckLaneHeads"])
		require.EqualValues(t, 40, total["OldestDueAge"])
		require.EqualValues(t, 5, total["BlockedDepth"])
		require.EqualValues(t, 1200, total["OldestBlockedAge"])
		dir := total["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
		require.Equal(t, []any{[]any{}}, dir["Dimensions"])
	})
}

func TestParseLevel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]slog.Level{"": slog.LevelInfo, "DEBUG": slog.LevelDebug, "warn": slog.LevelWarn, "error": slog.LevelError} {
		got, err := ParseLevel(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := ParseLevel("loud")
	require.ErrorContains(t, err, "loud")
}

// TestEveryMetricCarriesTheStack: with a stack set, every line's one
// dimension set starts with Stack (counters, per-partition and total
// gauges alike), so two stacks' metrics never mix; without one the sets
// are as before.
func TestEveryMetricCarriesTheStack(t *testing.T) {
	t.Parallel()
	out := &bytes.Buffer{}
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	m := NewMetrics(NewLockedWriter(out), clk, nil).WithBase(Dim{DimStack, "FerryOrders"})
	obs := NewObserver(m, NewLogger(NewLockedWriter(&bytes.Buffer{}), slog.LevelError))
	obs.ActionEnded(&outbox.Action{ID: "1-1", Kind: "email"}, outbox.OutcomeDone, outbox.StopDone)
	obs.ClaimFinished(1, 3, 0, false)
	require.NoError(t, obs.RecordBacklog([]Backlog{{Partition: 0, DueDepth: 2}}))
	require.NoError(t, obs.Flush())
	docs := emfLines(t, out)
	require.Len(t, docs, 4) // partition gauges, total gauges, two counter sets
	for _, d := range docs {
		require.Equal(t, "FerryOrders", d["Stack"])
		sets := d["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Dimensions"].([]any)
		require.Len(t, sets, 1)
		require.Equal(t, "Stack", sets[0].([]any)[0], "%v", sets)
	}
	var totals []any
	for _, d := range docs {
		if _, ok := d["BacklogDepth"]; ok && d["Partition"] == nil {
			totals = d["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Dimensions"].([]any)[0].([]any)
		}
	}
	require.Equal(t, []any{"Stack"}, totals, "the totals are per stack")

	plain := &bytes.Buffer{}
	m = NewMetrics(NewLockedWriter(plain), clk, nil).WithBase(Dim{DimStack, ""})
	m.Count("Attempts", 1, Dim{"Kind", "email"})
	require.NoError(t, m.Flush())
	d := emfLines(t, plain)[0]
	require.NotContains(t, d, "Stack", "no stack configured: no Stack dimension")
	require.Equal(t, []any{[]any{"Kind"}}, d["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Dimensions"])
}

// TestDeferralsAreCounted: a Defer outcome that put its action back to
// wait is counted as Deferrals by kind (the console's chart and the
// dashboard read it); a Retry is not.
func TestDeferralsAreCounted(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	clk := clock.NewManual(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	o := NewObserver(NewMetrics(&out, clk, nil), slog.New(slog.DiscardHandler))
	a := &outbox.Action{ID: "x", Kind: "webhook"}
	o.AttemptFinished(a, outbox.Result{Outcome: outbox.OutcomeDefer}, outbox.StateADMITTED)
	o.AttemptFinished(a, outbox.Result{Outcome: outbox.OutcomeDefer}, outbox.StateADMITTED)
	o.AttemptFinished(a, outbox.Result{Outcome: outbox.OutcomeRetry}, outbox.StateADMITTED)
	require.NoError(t, o.Flush())
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	require.Equal(t, 2.0, doc[MetricDeferrals])
	require.Equal(t, "webhook", doc["Kind"])
}
