package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

// testAdapter stands in for a built-in kind: it validates like the fake
// outbox (webhook payloads need an https "url") and never runs.
type testAdapter struct{ kind string }

func (a testAdapter) Spec() outbox.KindSpec {
	return outbox.KindSpec{Name: a.kind, Class: outbox.IdempotentReceiver, DeliveryEvidence: a.kind == "email"}
}

func (a testAdapter) Validate(_ string, payload json.RawMessage) error {
	if a.kind != "webhook" {
		return nil
	}
	var w struct {
		URL any `json:"url"`
	}
	if err := json.Unmarshal(payload, &w); err != nil {
		return &outbox.PayloadError{Message: err.Error()}
	}
	if u, ok := w.URL.(string); !ok || !strings.HasPrefix(u, "https://") {
		return &outbox.PayloadError{Field: "url", Message: "must be an https URL"}
	}
	return nil
}

func (a testAdapter) Execute(context.Context, *outbox.Attempt) outbox.Result {
	return outbox.Done("test")
}

// setupEngine runs the handler on the real engine over the embedded
// DynamoDB; items counts every item of the table (actions, idempotency
// records, lane tails, fences and seq counters) but the table's own `M#`
// items (identity, partition map).
func setupEngine(t *testing.T) *testBundle {
	t.Helper()
	ctx := t.Context()
	clk := clock.NewManual(testStart)
	db := ddblocal.New(ddblocal.WithClock(clk))
	reg := outbox.NewRegistry()
	require.NoError(t, reg.Register(testAdapter{"webhook"}))
	require.NoError(t, reg.Register(testAdapter{"email"}))
	eng, err := outbox.New(db, clk, reg, outbox.Config{Table: "ferry", Partitions: 4})
	require.NoError(t, err)
	require.NoError(t, eng.EnsureTable(ctx))
	items := func() int {
		n := 0
		in := &dynamodb.ScanInput{TableName: aws.String("ferry")}
		for {
			out, err := db.Scan(ctx, in)
			require.NoError(t, err)
			for _, it := range out.Items {
				if pk, _ := it["pk"].(*types.AttributeValueMemberS); pk == nil || !strings.HasPrefix(pk.Value, "M#") {
					n++ // not the table's own items (identity, partition map)
				}
			}
			if len(out.LastEvaluatedKey) == 0 {
				return n
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	return newBundle(t, clk, eng, items, Limits{})
}

var _ Outbox = (*outbox.Engine)(nil)

func TestEngineRefusedRequestsWriteNothing(t *testing.T) {
	t.Parallel()
	runRefusals(t, setupEngine(t))
}

func TestEngineFlow(t *testing.T) {
	t.Parallel()
	b := setupEngine(t)
	ans := b.do(t, "POST", "/v1/actions", tokA, `{"kind":"webhook","lane_key":"order-42","idempotency_key":"k1",
		"subject_id":"s1","propose":true,"payload":{"url":"https://example.com/hook","body":{"order":42}}}`)
	require.Equal(t, http.StatusCreated, ans.Status, "%s", ans.Body)
	m := ans.json(t)
	id := m["id"].(string)
	require.Equal(t, "PROPOSED", m["state"])
	require.Equal(t, "a", m["workspace_id"])
	require.Equal(t, "2026-11-29T12:00:00Z", m["created_at"])

	again := b.do(t, "POST", "/v1/actions", tokA, `{"kind":"webhook","idempotency_key":"k1","payload":{"url":"https://example.com/x"}}`)
	require.Equal(t, http.StatusOK, again.Status, "%s", again.Body)
	require.Equal(t, id, again.json(t)["id"])

	require.Equal(t, http.StatusNotFound, b.do(t, "GET", "/v1/actions/"+id, tokB, "").Status)
	for _, bad := range []string{"not-an-id", "99-1", "1-99999999999999999999", "-1-1", "%C3%28"} {
		ans := b.do(t, "GET", "/v1/actions/"+bad, tokA, "")
		require.Equal(t, http.StatusNotFound, ans.Status, "%s: %s", bad, ans.Body)
		require.Equal(t, http.StatusNotFound, b.do(t, "POST", "/v1/actions/"+bad+"/cancel", tokA, "").Status, bad)
	}
	require.Equal(t, http.StatusNotFound, b.do(t, "POST", "/v1/actions/"+id+"/admit", tokB, "").Status)
	got := b.do(t, "GET", "/v1/actions/"+id, tokA, "")
	require.Equal(t, http.StatusOK, got.Status)
	require.Equal(t, m, got.json(t))

	ans = b.do(t, "POST", "/v1/actions/"+id+"/admit", tokA, "")
	require.Equal(t, http.StatusOK, ans.Status, "%s", ans.Body)
	require.Equal(t, "ADMITTED", ans.json(t)["state"])
	require.Equal(t, http.StatusConflict, b.do(t, "POST", "/v1/actions/"+id+"/admit", tokA, "").Status)
	ans = b.do(t, "POST", "/v1/actions/"+id+"/cancel", tokA, "")
	require.Equal(t, http.StatusOK, ans.Status, "%s", ans.Body)
	require.Equal(t, "CANCELLED", ans.json(t)["state"])
	_, hasPayload := ans.json(t)["payload"]
	require.False(t, hasPayload)

	batch := b.do(t, "POST", "/v1/actions:batch", tokAB, `{"actions":[
		{"kind":"webhook","workspace_id":"b","lane_key":"l","payload":{"url":"https://e.com/1"}},
		{"kind":"email","workspace_id":"b","lane_key":"l","subject_id":"s1","payload":{}}]}`)
	require.Equal(t, http.StatusCreated, batch.Status, "%s", batch.Body)

	list := b.do(t, "GET", "/v1/actions?workspace_id=b&lane_key=l", tokAB, "")
	require.Equal(t, http.StatusOK, list.Status, "%s", list.Body)
	require.Len(t, list.json(t)["actions"], 2)
	list = b.do(t, "GET", "/v1/actions", tokA, "")
	require.Equal(t, http.StatusOK, list.Status, "%s", list.Body)
	require.Len(t, list.json(t)["actions"], 1)

	erased := b.do(t, "DELETE", "/v1/subjects/s1", tokB, "")
	require.Equal(t, http.StatusOK, erased.Status, "%s", erased.Body)
	require.JSONEq(t, `{"erased":1}`, string(erased.Body))
}

// TestEngineGetShowsDeliveryEvidence: GET /v1/actions/{id} shows an
// email's delivery evidence, the most telling event, and only to its
// workspace; an action without evidence has no delivery field.
func TestEngineGetShowsDeliveryEvidence(t *testing.T) {
	t.Parallel()
	b := setupEngine(t)
	eng := b.ob.(*outbox.Engine)
	ans := b.do(t, "POST", "/v1/actions", tokA, `{"kind":"email","payload":{}}`)
	require.Equal(t, http.StatusCreated, ans.Status, "%s", ans.Body)
	id := ans.json(t)["id"].(string)
	_, none := b.do(t, "GET", "/v1/actions/"+id, tokA, "").json(t)["delivery"]
	require.False(t, none, "no evidence yet: no delivery field")

	at := testStart.Add(time.Second)
	for _, st := range []outbox.DeliveryStatus{outbox.DeliveryDelivered, outbox.DeliveryBounced} {
		r, err := eng.DeliveryRecord(t.Context(), id, outbox.DeliveryEvent{Status: st, At: at, Detail: "1 recipient"})
		require.NoError(t, err)
		require.Equal(t, outbox.DeliveryRecorded, r.Outcome)
		at = at.Add(time.Second)
	}
	got := b.do(t, "GET", "/v1/actions/"+id, tokA, "")
	require.Equal(t, http.StatusOK, got.Status)
	require.Equal(t, map[string]any{"status": "BOUNCED", "at": "2026-11-29T12:00:02Z", "detail": "1 recipient"}, got.json(t)["delivery"])
	require.Equal(t, "ADMITTED", got.json(t)["state"], "the action itself is unchanged")
	require.Equal(t, http.StatusNotFound, b.do(t, "GET", "/v1/actions/"+id, tokB, "").Status)
}

// TestEngineListWithAStateFilterPagesShort is issue 28, item 11 at the API:
// GET /v1/actions with a state filter examines at most 1,000 actions per
// request; a page that found fewer than limit (even none) still carries
// next_cursor, and paging finds the match.
func TestEngineListWithAStateFilterPagesShort(t *testing.T) {
	t.Parallel()
	b := setupEngine(t)
	eng := b.ob.(*outbox.Engine)
	var last string
	for range 1100 {
		r, err := eng.Enqueue(t.Context(), outbox.EnqueueParams{Kind: "webhook", WorkspaceID: "a", Payload: json.RawMessage(`{"url":"https://example.com/h"}`)})
		require.NoError(t, err)
		last = r.Action.ID
		b.clk.Advance(time.Millisecond)
	}
	require.Equal(t, http.StatusOK, b.do(t, "POST", "/v1/actions/"+last+"/cancel", tokA, "").Status)
	page := b.do(t, "GET", "/v1/actions?state=CANCELLED", tokA, "")
	require.Equal(t, http.StatusOK, page.Status, "%s", page.Body)
	m := page.json(t)
	require.Empty(t, m["actions"], "the first 1,000 actions hold no match")
	cursor, ok := m["next_cursor"].(string)
	require.True(t, ok, "a short page still has a cursor: %s", page.Body)
	page = b.do(t, "GET", "/v1/actions?state=CANCELLED&cursor="+url.QueryEscape(cursor), tokA, "")
	require.Equal(t, http.StatusOK, page.Status, "%s", page.Body)
	m = page.json(t)
	require.Len(t, m["actions"], 1)
	require.Equal(t, last, m["actions"].([]any)[0].(map[string]any)["id"])
	require.Nil(t, m["next_cursor"])
}

// TestEngineHotLaneAnswers429Not500 is issue 28, item 2: concurrent
// enqueues into one lane answered 500 internal once an enqueue's tries were
// all refused by the lane tail moving (TransactionCanceledException with
// ConditionalCheckFailed). Fifty clients enqueue into one lane at once
// through the handler on the embedded DynamoDB (a millisecond per call, so
// that their reads and writes interleave): every answer is 201 or 429
// throttled with Retry-After, never 500, and the lane holds exactly the
// actions answered 201.
func TestEngineHotLaneAnswers429Not500(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := clock.NewManual(testStart)
	db := ddblocal.New(ddblocal.WithClock(clk), ddblocal.WithFaults(ddblocal.FaultPlanFunc(func(ddblocal.Call) ddblocal.Fault {
		return ddblocal.Fault{Delay: time.Millisecond}
	})))
	reg := outbox.NewRegistry()
	require.NoError(t, reg.Register(testAdapter{"webhook"}))
	eng, err := outbox.New(db, clk, reg, outbox.Config{Table: "ferry", Partitions: 4})
	require.NoError(t, err)
	require.NoError(t, eng.EnsureTable(ctx))
	b := newBundle(t, clk, eng, func() int { return 0 }, Limits{})

	const clients, each = 50, 10
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range each {
				ans := b.do(t, "POST", "/v1/actions", tokA, `{"kind":"webhook","lane_key":"hot","payload":{"url":"https://example.com/h"}}`)
				if ans.Status == http.StatusTooManyRequests {
					code, _ := ans.errorCode(t)
					require.Equal(t, CodeThrottled, code)
					require.Equal(t, "1", ans.Header.Get("Retry-After"))
				}
				mu.Lock()
				statuses[ans.Status]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("answers: %v", statuses)
	require.Zero(t, statuses[http.StatusInternalServerError], "no 500: %v", statuses)
	require.Equal(t, clients*each, statuses[http.StatusCreated]+statuses[http.StatusTooManyRequests], "%v", statuses)
	listed, cursor := 0, ""
	for {
		res, err := eng.ActionList(ctx, outbox.ActionListParams{WorkspaceID: "a", LaneKey: "hot", Limit: 500, Cursor: cursor})
		require.NoError(t, err)
		listed += len(res.Actions)
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	require.Equal(t, statuses[http.StatusCreated], listed, "the lane holds what was answered 201, nothing of the 429s")
}
