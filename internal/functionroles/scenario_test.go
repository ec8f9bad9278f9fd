package functionroles

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/adapters/email"
	"github.com/ferryhq/ferry/internal/adapters/ssrfguard"
	"github.com/ferryhq/ferry/internal/adapters/webhook"
	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/handlers"
	"github.com/ferryhq/ferry/internal/httpapi"
	"github.com/ferryhq/ferry/internal/outbox"
	"github.com/ferryhq/ferry/internal/telemetry"
)

// functionScenario runs each function's handler through its work on one
// table — the enqueue function's whole HTTP API, the drainer on its
// schedule and on a stream batch with receivers that succeed, fail, refuse
// and throttle, the reaper over expired and keyed actions, retention past
// the retention period — each under its function's label.
func functionScenario(t *testing.T, rec *recorder, clk *clock.Manual) {
	ctx := t.Context()
	var mu sync.Mutex
	calls := map[string]int{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.URL.Path]++
		n := calls[r.URL.Path]
		mu.Unlock()
		switch {
		case r.URL.Path == "/flaky" && n == 1:
			w.WriteHeader(http.StatusInternalServerError)
		case r.URL.Path == "/gone":
			w.WriteHeader(http.StatusGone)
		case r.URL.Path == "/busy" && n == 1:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	defer rcv.Close()

	log := telemetry.NewLogger(io.Discard, slog.LevelError)
	obs := telemetry.NewObserver(telemetry.NewMetrics(io.Discard, clk, nil), log)
	reg := outbox.NewRegistry()
	secrets, err := webhook.NewStaticSecrets(nil, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.NoError(t, err)
	wh, err := webhook.New(webhook.Options{Secrets: secrets, Clock: clk, Policy: ssrfguard.Policy{AllowPrivate: true}})
	require.NoError(t, err)
	sink, err := email.NewMailDirSender(t.TempDir(), clk)
	require.NoError(t, err)
	em, err := email.New(email.Options{Sender: sink})
	require.NoError(t, err)
	require.NoError(t, reg.Register(wh))
	require.NoError(t, reg.Register(em))
	eng, err := outbox.New(rec, clk, reg, outbox.Config{Table: tableName, Partitions: 2, Lease: time.Minute,
		WriteMargin: 10 * time.Second, Retention: time.Hour}, outbox.WithObserver(obs))
	require.NoError(t, err)
	require.NoError(t, eng.EnsureTable(ctx))

	api, err := httpapi.New(httpapi.Options{Outbox: eng, Clock: clk, Logger: log, Health: eng.Ping,
		Auth: mustTokens(t, map[string][]string{"tok": {"default"}})})
	require.NoError(t, err)
	apiCtx := withFunction(ctx, Enqueue)
	do := func(method, path, body string) map[string]any {
		t.Helper()
		req := httptest.NewRequestWithContext(apiCtx, method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		w := httptest.NewRecorder()
		api.ServeHTTP(w, req)
		require.Less(t, w.Code, 300, "%s %s: %s", method, path, w.Body)
		var out map[string]any
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out))
		return out
	}
	hook := func(path string) string { return `"payload":{"url":"` + rcv.URL + path + `","body":{"n":1}}` }
	mail := `"payload":{"from":"shop@example.com","to":["ann@example.com"],"subject":"s","text":"t"}`

	// enqueue: every route, keyless, laned, keyed and both, single and batch.
	do("POST", "/v1/actions", `{"kind":"webhook",`+hook("/ok")+`}`)
	do("POST", "/v1/actions", `{"kind":"webhook","lane_key":"l1","subject_id":"s1",`+hook("/flaky")+`}`)
	do("POST", "/v1/actions", `{"kind":"webhook","lane_key":"l1","subject_id":"s1",`+hook("/ok")+`}`)
	do("POST", "/v1/actions", `{"kind":"email","idempotency_key":"k1",`+mail+`}`)
	do("POST", "/v1/actions", `{"kind":"email","idempotency_key":"k1",`+mail+`}`)
	do("POST", "/v1/actions", `{"kind":"webhook","idempotency_key":"k2","lane_key":"l2",`+hook("/gone")+`}`)
	do("POST", "/v1/actions:batch", `{"actions":[{"kind":"webhook","idempotency_key":"k3",`+hook("/busy")+`},`+
		`{"kind":"webhook","lane_key":"l3",`+hook("/ok")+`},{"kind":"webhook","lane_key":"l3",`+hook("/ok")+`}]}`)
	proposed := do("POST", "/v1/actions", `{"kind":"webhook","propose":true,`+hook("/ok")+`}`)["id"].(string)
	do("POST", "/v1/actions/"+proposed+"/admit", "")
	refused := do("POST", "/v1/actions", `{"kind":"webhook","propose":true,"idempotency_key":"k4","lane_key":"l4",`+hook("/ok")+`}`)["id"].(string)
	do("POST", "/v1/actions/"+refused+"/cancel", "")
	cancelled := do("POST", "/v1/actions", `{"kind":"webhook","idempotency_key":"k5",`+hook("/ok")+`}`)["id"].(string)
	do("POST", "/v1/actions/"+cancelled+"/cancel", "")
	do("GET", "/healthz", "")
	do("GET", "/v1/actions/"+proposed, "")
	do("GET", "/v1/actions", "")
	do("GET", "/v1/actions?lane_key=l1&state=ADMITTED&limit=1", "")
	expiring := do("POST", "/v1/actions", `{"kind":"webhook","idempotency_key":"k6","lane_key":"l6","expires_at":"`+
		clk.Now().Add(30*time.Second).Format(time.RFC3339)+`",`+hook("/ok")+`}`)["id"].(string)

	// A deep lane: a proposal, a member behind it that expires while the
	// proposal is live, and more members behind that one than its end walks
	// back from the tail: the end finds its successor with a Query of the
	// partition (design.md §7.3).
	deep := do("POST", "/v1/actions", `{"kind":"webhook","propose":true,"lane_key":"l7",`+hook("/ok")+`}`)["id"].(string)
	do("POST", "/v1/actions", `{"kind":"webhook","lane_key":"l7","expires_at":"`+
		clk.Now().Add(30*time.Second).Format(time.RFC3339)+`",`+hook("/ok")+`}`)
	for range 20 {
		do("POST", "/v1/actions", `{"kind":"webhook","lane_key":"l7",`+hook("/ok")+`}`)
	}

	// reaper first, while the expiring action waits: it expires unstarted.
	reaper := &handlers.ReaperHandler{Engine: handlers.EnginePorts{Engine: eng}, Obs: obs, Log: log}
	clk.Advance(time.Minute)
	_, err = reaper.Invoke(withFunction(ctx, Reaper), events.EventBridgeEvent{ID: "reap-1"})
	require.NoError(t, err)
	a, err := eng.ActionGet(ctx, expiring)
	require.NoError(t, err)
	require.Equal(t, outbox.StateCANCELLED, a.State, "the expiring action expired")
	do("POST", "/v1/actions/"+deep+"/admit", "")

	// drainer: a stream batch, then its schedule until everything ended.
	drainer := &handlers.DrainerHandler{Engine: handlers.EnginePorts{Engine: eng, Partitions: 2}, Clock: clk, Log: log, Metrics: obs}
	drainCtx := withFunction(ctx, Drainer)
	// A drainer dies right after claiming a keyed action; after its lease
	// the schedule's drainer reclaims it.
	crashed := do("POST", "/v1/actions", `{"kind":"webhook","idempotency_key":"k7",`+hook("/ok")+`}`)["id"].(string)
	ca, err := eng.ActionGet(ctx, crashed)
	require.NoError(t, err)
	v, err := eng.FenceTake(drainCtx, ca.Partition, "crashed", clk.Now().Add(time.Minute))
	require.NoError(t, err)
	cr, err := eng.Claim(drainCtx, ca.Partition, outbox.ClaimParams{Owner: "crashed", Version: v, OnlyID: crashed})
	require.NoError(t, err)
	require.Equal(t, 1, cr.Claimed)
	stream := readEvent(t, "dynamodb-stream.json")
	_, err = drainer.Invoke(drainCtx, stream)
	require.NoError(t, err)
	schedule := readEvent(t, "eventbridge-schedule.json")
	for range 10 {
		_, err := drainer.Invoke(drainCtx, schedule)
		require.NoError(t, err)
		clk.Advance(time.Minute)
	}
	list := do("GET", "/v1/actions?limit=100", "")
	for _, a := range list["actions"].([]any) {
		a := a.(map[string]any)
		require.Contains(t, []string{"DONE", "FAILED", "CANCELLED"}, a["state"], "%v", a)
	}
	// sesevents: an email's SES events (two at once for one action), and
	// one for an action that is not there.
	ses := &handlers.SESEventsHandler{Engine: eng, Obs: obs, Log: log}
	sesCtx := withFunction(ctx, SESEvents)
	var mailID string
	for _, a := range list["actions"].([]any) {
		if a := a.(map[string]any); a["kind"] == "email" {
			mailID = a["id"].(string)
		}
	}
	require.NotEmpty(t, mailID)
	ref := do("GET", "/v1/actions/"+mailID, "")["readback_ref"].(string)
	var wg sync.WaitGroup
	for _, name := range []string{"ses-send.json", "ses-delivery.json", "ses-bounce.json"} {
		wg.Go(func() {
			resp, err := ses.Invoke(sesCtx, sesEvent(t, name, mailID, ref))
			require.NoError(t, err)
			require.Equal(t, "RECORDED", resp.Outcome, name)
		})
	}
	wg.Wait()
	resp, err := ses.Invoke(sesCtx, sesEvent(t, "ses-delivery.json", "0-999999", ref))
	require.NoError(t, err)
	require.Equal(t, "UNKNOWN_ACTION", resp.Outcome)
	require.Equal(t, "BOUNCED", do("GET", "/v1/actions/"+mailID, "")["delivery"].(map[string]any)["status"])

	do("DELETE", "/v1/subjects/s1", "")
	_, err = reaper.Invoke(withFunction(ctx, Reaper), events.EventBridgeEvent{ID: "reap-2"})
	require.NoError(t, err)

	// retention: past the retention period, every ended action goes.
	clk.Advance(2 * time.Hour)
	retention := &handlers.RetentionHandler{Engine: handlers.EnginePorts{Engine: eng}, Obs: obs, Log: log}
	res, err := retention.Invoke(withFunction(ctx, Retention), events.EventBridgeEvent{ID: "retain-1"})
	require.NoError(t, err)
	require.Positive(t, res.Deleted, "retention deleted the ended actions")
}

// sesEvent loads an SES sample of events/ about action id.
// sesEvent is the sample events/<name> about action id, whose SES message
// id (readback_ref) is ref.
func sesEvent(t *testing.T, name, id, ref string) events.EventBridgeEvent {
	var ev events.EventBridgeEvent
	require.NoError(t, json.Unmarshal(readEvent(t, name), &ev))
	const sampleID = `"01m8kjt9g0bvpgyzgh00b1"` // the samples' ferry_action_id
	const sampleRef = `"0102019a1b2c3d4e-5f6a7b8c-9d0e-4f1a-8b2c-3d4e5f6a7b8c-000000"`
	require.Contains(t, string(ev.Detail), sampleID)
	detail := strings.Replace(string(ev.Detail), sampleID, `"`+email.TagValue(id)+`"`, 1)
	ev.Detail = json.RawMessage(strings.ReplaceAll(detail, sampleRef, strconv.Quote(ref)))
	return ev
}

func readEvent(t *testing.T, name string) json.RawMessage {
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	require.NoError(t, err)
	return raw
}

func mustTokens(t *testing.T, m map[string][]string) *httpapi.BearerTokens {
	a, err := httpapi.NewBearerTokens(m)
	require.NoError(t, err)
	return a
}

// newRecorder returns a recorder over a fresh embedded DynamoDB on clk.
func newRecorder(t testing.TB, clk clock.Clock) *recorder {
	return &recorder{next: ddblocal.New(ddblocal.WithClock(clk)), t: t}
}

var _ = context.Background
