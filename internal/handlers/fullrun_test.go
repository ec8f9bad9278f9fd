package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/adapters/email"
	"github.com/ferryhq/ferry/internal/adapters/ssrfguard"
	"github.com/ferryhq/ferry/internal/adapters/webhook"
	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/handlers"
	"github.com/ferryhq/ferry/internal/outbox"
	"github.com/ferryhq/ferry/internal/telemetry"
)

// TestFullRunLogsNoPayload runs actions from enqueue to their end through
// the real engine on the embedded DynamoDB and the Lambda handlers (drainer,
// reaper, retention), capturing everything they write to stdout in Lambda
// (logs and EMF metrics), and fails if any payload value appears there.
func TestFullRunLogsNoPayload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))

	var mu sync.Mutex
	flaky := 0
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/flaky-pv-path":
			flaky++
			if flaky == 1 {
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = w.Write([]byte("pv-error-body"))
				return
			}
		case "/gone":
			w.WriteHeader(http.StatusGone)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer rcv.Close()

	out := &bytes.Buffer{}
	w := telemetry.NewLockedWriter(out)
	log := telemetry.NewLogger(w, slog.LevelDebug)
	obs := telemetry.NewObserver(telemetry.NewMetrics(w, clk, map[string]string{"function": "test"}), log)

	reg := outbox.NewRegistry()
	secrets, err := webhook.NewStaticSecrets(nil, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.NoError(t, err)
	wh, err := webhook.New(webhook.Options{Secrets: secrets, Clock: clk, Policy: ssrfguard.Policy{AllowPrivate: true}})
	require.NoError(t, err)
	mailDir := t.TempDir()
	sink, err := email.NewMailDirSender(mailDir, clk)
	require.NoError(t, err)
	em, err := email.New(email.Options{Sender: sink})
	require.NoError(t, err)
	require.NoError(t, reg.Register(wh))
	require.NoError(t, reg.Register(em))

	eng, err := outbox.New(ddblocal.New(ddblocal.WithClock(clk)), clk, reg,
		outbox.Config{Table: "ferry", Partitions: 2, Lease: time.Minute, WriteMargin: 10 * time.Second},
		outbox.WithObserver(obs))
	require.NoError(t, err)
	require.NoError(t, eng.EnsureTable(ctx))

	payloads := map[string]string{
		"hook":  `{"url":"` + rcv.URL + `/hook","body":{"order":"pv-order-1"}}`,
		"flaky": `{"url":"` + rcv.URL + `/flaky-pv-path","headers":{"X-Note":"pv-header-2"},"body":{"n":"pv-body-3"}}`,
		"gone":  `{"url":"` + rcv.URL + `/gone","body":["pv-list-4"]}`,
		"email": `{"from":"shop@example.com","to":["pv-rcpt@example.com"],"subject":"pv-subject-5","text":"pv-text-6"}`,
	}
	ids := map[string]string{}
	for name, p := range payloads {
		kind := "webhook"
		if name == "email" {
			kind = "email"
		}
		res, err := eng.Enqueue(ctx, outbox.EnqueueParams{Kind: kind, WorkspaceID: "default", LaneKey: "lane-pv-7",
			SubjectID: "subject-pv-8", Payload: json.RawMessage(p)})
		require.NoError(t, err, name)
		ids[name] = res.Action.ID
	}

	drainer := lambda.NewHandler((&handlers.DrainerHandler{
		// Both partitions at once, as the functions sweep (coldstart.SweepPartitions).
		Engine: handlers.EnginePorts{Engine: eng, Partitions: 2}, Clock: clk, Log: log, Metrics: obs,
	}).Invoke)
	schedule, err := os.ReadFile(filepath.Join("..", "..", "events", "eventbridge-schedule.json"))
	require.NoError(t, err)
	ended := func() bool {
		for _, id := range ids {
			a, err := eng.ActionGet(ctx, id)
			require.NoError(t, err)
			if !a.State.Ended() {
				return false
			}
		}
		return true
	}
	for round := 0; round < 20 && !ended(); round++ {
		_, err := drainer.Invoke(ctx, schedule)
		require.NoError(t, err)
		clk.Advance(time.Minute) // past any retry backoff
	}
	require.True(t, ended(), "every action ended")

	for name, want := range map[string]outbox.State{
		"hook": outbox.StateDONE, "flaky": outbox.StateDONE, "gone": outbox.StateFAILED, "email": outbox.StateDONE,
	} {
		a, err := eng.ActionGet(ctx, ids[name])
		require.NoError(t, err)
		require.Equal(t, want, a.State, name)
	}

	mu.Lock()
	require.Equal(t, 2, flaky, "the flaky webhook was retried once")
	mu.Unlock()

	reaper := lambda.NewHandler((&handlers.ReaperHandler{Engine: handlers.EnginePorts{Engine: eng}, Obs: obs, Log: log}).Invoke)
	_, err = reaper.Invoke(ctx, schedule)
	require.NoError(t, err)
	retention := lambda.NewHandler((&handlers.RetentionHandler{Engine: handlers.EnginePorts{Engine: eng}, Obs: obs, Log: log}).Invoke)
	_, err = retention.Invoke(ctx, schedule)
	require.NoError(t, err)

	logs := out.String()
	for name, id := range ids {
		require.Contains(t, logs, `"action.id":"`+id+`"`, name)
	}
	require.Contains(t, logs, `"ActionsEnded"`)
	require.Contains(t, logs, `"BacklogDepth"`)
	for _, line := range strings.Split(logs, "\n") {
		require.NotContains(t, line, "pv-", "a payload value (or lane, subject) leaked into the output")
	}
}
