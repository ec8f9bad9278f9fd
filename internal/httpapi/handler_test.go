package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/outbox"
	"github.com/ferryhq/ferry/internal/version"
)

var testStart = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Tokens of the tests: tokA may use workspace "a", tokAB "a" and "b",
// tokB "b".
const (
	tokA  = "tok-a"
	tokAB = "tok-ab"
	tokB  = "tok-b"
)

type testBundle struct {
	h    *Handler
	ob   Outbox
	fake *fakeOutbox // nil on the real engine
	clk  *clock.Manual
	logs *syncBuffer
	// items counts the records of the store behind ob.
	items func() int
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testAuth(t *testing.T) Authenticator {
	t.Helper()
	auth, err := NewBearerTokens(map[string][]string{tokA: {"a"}, tokAB: {"b", "a"}, tokB: {"b"}})
	require.NoError(t, err)
	return auth
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	clk := clock.NewManual(testStart)
	fake := newFakeOutbox(clk)
	b := newBundle(t, clk, fake, fake.items, Limits{})
	b.fake = fake
	return b
}

func newBundle(t *testing.T, clk *clock.Manual, ob Outbox, items func() int, lim Limits) *testBundle {
	t.Helper()
	logs := &syncBuffer{}
	h, err := New(Options{
		Outbox: ob, Auth: testAuth(t), Clock: clk, Limits: lim,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	require.NoError(t, err)
	return &testBundle{h: h, ob: ob, clk: clk, logs: logs, items: items}
}

type answer struct {
	Status int
	Header http.Header
	Body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(a.Body, &m), "body: %s", a.Body)
	return m
}

func (a answer) errorCode(t *testing.T) (code, field string) {
	t.Helper()
	var e struct {
		Error struct {
			Code, Message, Field string
		}
	}
	require.NoError(t, json.Unmarshal(a.Body, &e), "body: %s", a.Body)
	require.NotEmpty(t, e.Error.Code, "body: %s", a.Body)
	require.NotEmpty(t, e.Error.Message, "body: %s", a.Body)
	return e.Error.Code, e.Error.Field
}

func (b *testBundle) do(t *testing.T, method, path, token, body string) answer {
	t.Helper()
	var r *http.Request
	if body == "" {
		r = httptest.NewRequest(method, path, nil)
	} else {
		r = httptest.NewRequest(method, path, strings.NewReader(body))
	}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	b.h.ServeHTTP(w, r)
	// Every answer a test sees must be one the OpenAPI document lists.
	if rt, ok := routeFor(b.h, r); ok {
		require.Contains(t, documentedStatuses(rt), w.Code, "%s %s answered an undocumented status", rt.Method, rt.Path)
		requireMatchesSchema(t, rt, w.Code, w.Body.Bytes())
	}
	require.Equal(t, "application/json", w.Header().Get("Content-Type"))
	require.True(t, json.Valid(w.Body.Bytes()), "body: %s", w.Body.String())
	return answer{Status: w.Code, Header: w.Header(), Body: w.Body.Bytes()}
}

const webhookBody = `{"kind":"webhook","payload":{"url":"https://example.com/hook","body":{"order":42}}}`

func TestEnqueue(t *testing.T) {
	t.Parallel()

	t.Run("CreatedWithEveryField", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ans := b.do(t, "POST", "/v1/actions", tokA, `{
			"kind": "webhook", "workspace_id": "a", "lane_key": "order-42",
			"idempotency_key": "order-42-shipped",
			"payload": {"url": "https://example.com/hook", "body": {"order": 42}},
			"subject_id": "account-9", "max_attempts": 3,
			"expires_at": "2026-12-01T01:00:00+01:00", "propose": true}`)
		require.Equal(t, http.StatusCreated, ans.Status, "%s", ans.Body)
		m := ans.json(t)
		require.Equal(t, "/v1/actions/"+m["id"].(string), ans.Header.Get("Location"))
		want := map[string]any{
			"id": m["id"], "kind": "webhook", "workspace_id": "a", "lane_key": "order-42",
			"idempotency_key": "order-42-shipped", "subject_id": "account-9", "state": "PROPOSED",
			"attempt": float64(0), "max_attempts": float64(3), "stop_reason": nil, "readback_ref": nil,
			"created_at": "2026-11-29T12:00:00Z", "next_attempt_at": "2026-11-29T12:00:00Z",
			"expires_at": "2026-12-01T00:00:00Z", "ended_at": nil,
			"payload": map[string]any{"url": "https://example.com/hook", "body": map[string]any{"order": float64(42)}},
		}
		require.Equal(t, want, m)
	})

	t.Run("DefaultsAndNulls", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ans := b.do(t, "POST", "/v1/actions", tokA, webhookBody)
		require.Equal(t, http.StatusCreated, ans.Status, "%s", ans.Body)
		m := ans.json(t)
		require.Equal(t, "a", m["workspace_id"])
		require.Equal(t, "ADMITTED", m["state"])
		for _, k := range []string{"lane_key", "idempotency_key", "subject_id", "stop_reason", "readback_ref", "expires_at", "ended_at"} {
			v, ok := m[k]
			require.True(t, ok, "field %s must be present", k)
			require.Nil(t, v, "field %s", k)
		}
	})

	t.Run("IdempotentReplay", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		body := `{"kind":"webhook","idempotency_key":"k1","payload":{"url":"https://example.com/a"}}`
		first := b.do(t, "POST", "/v1/actions", tokA, body)
		require.Equal(t, http.StatusCreated, first.Status)
		items := b.items()
		again := b.do(t, "POST", "/v1/actions", tokA, `{"kind":"webhook","idempotency_key":"k1","payload":{"url":"https://example.com/b"}}`)
		require.Equal(t, http.StatusOK, again.Status)
		require.Equal(t, first.json(t)["id"], again.json(t)["id"])
		require.Equal(t, items, b.items())
	})

	t.Run("WorkspaceChosen", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ans := b.do(t, "POST", "/v1/actions", tokAB, `{"kind":"email","workspace_id":"b","payload":{}}`)
		require.Equal(t, http.StatusCreated, ans.Status)
		require.Equal(t, "b", ans.json(t)["workspace_id"])
	})

	t.Run("Batch", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ans := b.do(t, "POST", "/v1/actions:batch", tokA, `{"actions":[`+webhookBody+`,{"kind":"email","lane_key":"l","payload":{"to":["x@example.com"]}}]}`)
		require.Equal(t, http.StatusCreated, ans.Status, "%s", ans.Body)
		var out struct{ Actions []map[string]any }
		require.NoError(t, json.Unmarshal(ans.Body, &out))
		require.Len(t, out.Actions, 2)
		require.Equal(t, "webhook", out.Actions[0]["kind"])
		require.Equal(t, "l", out.Actions[1]["lane_key"])
		require.Equal(t, 2, b.items())
	})
}

func repeat(n int, s string) string { return strings.Repeat(s, n) }

func batchOf(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = webhookBody
	}
	return `{"actions":[` + strings.Join(parts, ",") + `]}`
}

// TestRefusedRequestsWriteNothing sends every kind of bad request and
// checks its status, its error code and field, and that the store holds
// exactly what it held before.
func TestRefusedRequestsWriteNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	runRefusals(t, b)
}

type refusal struct {
	name, method, path, token, body string
	status                          int
	code, field                     string
}

func refusals() []refusal {
	bigPayload := `{"kind":"webhook","payload":{"url":"https://example.com/","pad":"` + repeat(200*1024, "x") + `"}}`
	bigBody := `{"kind":"webhook","payload":{"url":"https://example.com/"}}` + repeat(256*1024, " ")
	P, A := "POST", "/v1/actions"
	return []refusal{
		{"NoToken", P, A, "", webhookBody, 401, CodeUnauthenticated, ""},
		{"BadToken", P, A, "nope", webhookBody, 401, CodeUnauthenticated, ""},
		{"Empty", P, A, tokA, ``, 400, CodeMalformedJSON, ""},
		{"NotJSON", P, A, tokA, `kind=webhook`, 400, CodeMalformedJSON, ""},
		{"NotObject", P, A, tokA, `[1]`, 400, CodeInvalidField, ""},
		{"Truncated", P, A, tokA, `{"kind":"webhook"`, 400, CodeMalformedJSON, ""},
		{"TrailingData", P, A, tokA, webhookBody + `x`, 400, CodeMalformedJSON, ""},
		{"TwoValues", P, A, tokA, webhookBody + webhookBody, 400, CodeMalformedJSON, ""},
		{"UnknownField", P, A, tokA, `{"kind":"webhook","colour":"red","payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "colour"},
		{"FieldCaseVariant", P, A, tokA, `{"KIND":"webhook","kind":"webhook","payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "KIND"},
		{"DuplicateKey", P, A, tokA, `{"kind":"webhook","kind":"email","payload":{"url":"https://e.com"}}`, 400, CodeMalformedJSON, "kind"},
		{"DuplicateEscapedKey", P, A, tokA, `{"kind":"webhook","\u006bind":"email","payload":{"url":"https://e.com"}}`, 400, CodeMalformedJSON, "kind"},
		{"DuplicateKeyInPayload", P, A, tokA, `{"kind":"webhook","payload":{"url":"https://e.com","body":{"a":1,"a":2}}}`, 400, CodeMalformedJSON, "payload.body.a"},
		{"DuplicateKeyInArray", P, A, tokA, `{"kind":"webhook","payload":{"url":"https://e.com","body":[{"a":1,"a":2}]}}`, 400, CodeMalformedJSON, "payload.body[0].a"},
		{"InvalidUTF8", P, A, tokA, "{\"kind\":\"webhook\",\"lane_key\":\"\xff\",\"payload\":{\"url\":\"https://e.com\"}}", 400, CodeMalformedJSON, "lane_key"},
		{"InvalidUTF8InPayload", P, A, tokA, "{\"kind\":\"webhook\",\"payload\":{\"url\":\"https://e.com\",\"x\":\"\xc3\x28\"}}", 400, CodeMalformedJSON, "payload.x"},
		{"LoneSurrogate", P, A, tokA, `{"kind":"webhook","payload":{"url":"https://e.com","x":"\ud800"}}`, 400, CodeMalformedJSON, "payload.x"},
		{"TooDeep", P, A, tokA, `{"kind":"webhook","payload":{"url":"https://e.com","x":` + repeat(100, "[") + repeat(100, "]") + `}}`, 400, CodeMalformedJSON, "payload.x" + repeat(62, "[0]")},
		{"KindMissing", P, A, tokA, `{"payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "kind"},
		{"KindNull", P, A, tokA, `{"kind":null,"payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "kind"},
		{"KindWrongType", P, A, tokA, `{"kind":5,"payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "kind"},
		{"KindEmpty", P, A, tokA, `{"kind":"","payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "kind"},
		{"KindTooLong", P, A, tokA, `{"kind":"` + repeat(65, "k") + `","payload":{}}`, 400, CodeInvalidField, "kind"},
		{"PayloadMissing", P, A, tokA, `{"kind":"webhook"}`, 400, CodeInvalidField, "payload"},
		{"PayloadNull", P, A, tokA, `{"kind":"webhook","payload":null}`, 400, CodeInvalidField, "payload"},
		{"PayloadNotObject", P, A, tokA, `{"kind":"webhook","payload":"https://e.com"}`, 400, CodeInvalidField, "payload"},
		{"LaneKeyEmpty", P, A, tokA, `{"kind":"webhook","lane_key":"","payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "lane_key"},
		{"LaneKeyWrongType", P, A, tokA, `{"kind":"webhook","lane_key":7,"payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "lane_key"},
		{"LaneKeyControl", P, A, tokA, `{"kind":"webhook","lane_key":"a\u0000b","payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "lane_key"},
		{"IdempotencyKeyTooLong", P, A, tokA, `{"kind":"webhook","idempotency_key":"` + repeat(257, "k") + `","payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "idempotency_key"},
		{"SubjectControl", P, A, tokA, `{"kind":"webhook","subject_id":"a\nb","payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "subject_id"},
		{"MaxAttemptsString", P, A, tokA, `{"kind":"webhook","max_attempts":"8","payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "max_attempts"},
		{"MaxAttemptsFraction", P, A, tokA, `{"kind":"webhook","max_attempts":8.5,"payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "max_attempts"},
		{"MaxAttemptsZero", P, A, tokA, `{"kind":"webhook","max_attempts":0,"payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "max_attempts"},
		{"MaxAttemptsTooMany", P, A, tokA, `{"kind":"webhook","max_attempts":101,"payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "max_attempts"},
		{"MaxAttemptsHuge", P, A, tokA, `{"kind":"webhook","max_attempts":1e400,"payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "max_attempts"},
		{"ExpiresAtNotTime", P, A, tokA, `{"kind":"webhook","expires_at":"tomorrow","payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "expires_at"},
		{"ExpiresAtNoZone", P, A, tokA, `{"kind":"webhook","expires_at":"2026-12-01T00:00:00","payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "expires_at"},
		{"ExpiresAtOneDigitHour", P, A, tokA, `{"kind":"webhook","expires_at":"2030-01-01T0:00:00Z","payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "expires_at"},
		{"ExpiresAtPast", P, A, tokA, `{"kind":"webhook","expires_at":"2026-11-29T11:59:59Z","payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "expires_at"},
		{"ProposeWrongType", P, A, tokA, `{"kind":"webhook","propose":"yes","payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "propose"},
		{"WorkspaceNotPrincipals", P, A, tokA, `{"kind":"webhook","workspace_id":"b","payload":{"url":"https://e.com"}}`, 403, CodeForbidden, "workspace_id"},
		{"WorkspaceAmbiguous", P, A, tokAB, webhookBody, 400, CodeInvalidField, "workspace_id"},
		{"WorkspaceWithHash", P, A, tokA, `{"kind":"webhook","workspace_id":"a#b","payload":{"url":"https://e.com"}}`, 400, CodeInvalidField, "workspace_id"},
		{"BodyTooLarge", P, A, tokA, bigBody, 413, CodeBodyTooLarge, ""},
		{"PayloadTooLarge", P, A, tokA, bigPayload, 413, CodePayloadTooLarge, "payload"},
		{"UnknownKind", P, A, tokA, `{"kind":"carrier-pigeon","payload":{}}`, 422, CodeUnknownKind, "kind"},
		{"PayloadRejected", P, A, tokA, `{"kind":"webhook","payload":{"url":"ftp://e.com"}}`, 422, CodeInvalidPayload, "payload.url"},
		{"BatchMissing", P, A + ":batch", tokA, `{}`, 400, CodeInvalidField, "actions"},
		{"BatchEmpty", P, A + ":batch", tokA, `{"actions":[]}`, 400, CodeInvalidField, "actions"},
		{"BatchNotArray", P, A + ":batch", tokA, `{"actions":{}}`, 400, CodeInvalidField, "actions"},
		{"BatchTooMany", P, A + ":batch", tokA, batchOf(26), 400, CodeInvalidField, "actions"},
		{"BatchUnknownField", P, A + ":batch", tokA, `{"actions":[` + webhookBody + `],"atomic":true}`, 400, CodeInvalidField, "atomic"},
		{"BatchItemInvalid", P, A + ":batch", tokA, `{"actions":[` + webhookBody + `,{"kind":"webhook","max_attempts":0,"payload":{}}]}`, 400, CodeInvalidField, "actions[1].max_attempts"},
		{"BatchItemNotObject", P, A + ":batch", tokA, `{"actions":[` + webhookBody + `,3]}`, 400, CodeInvalidField, "actions[1]"},
		{"BatchItemDuplicate", P, A + ":batch", tokA, `{"actions":[{"kind":"webhook","kind":"webhook","payload":{}}]}`, 400, CodeMalformedJSON, "actions[0].kind"},
		{"BatchItemForbidden", P, A + ":batch", tokA, `{"actions":[` + webhookBody + `,{"kind":"webhook","workspace_id":"b","payload":{}}]}`, 403, CodeForbidden, "actions[1].workspace_id"},
		{"BatchItemUnknownKind", P, A + ":batch", tokA, `{"actions":[` + webhookBody + `,{"kind":"fax","payload":{}}]}`, 422, CodeUnknownKind, "actions[1].kind"},
		{"BatchItemRejected", P, A + ":batch", tokA, `{"actions":[` + webhookBody + `,{"kind":"webhook","payload":{"url":1}}]}`, 422, CodeInvalidPayload, "actions[1].payload.url"},
		{"BatchNoToken", P, A + ":batch", "", batchOf(1), 401, CodeUnauthenticated, ""},
		{"EraseForbiddenWorkspace", "DELETE", "/v1/subjects/s1?workspace_id=b", tokA, ``, 403, CodeForbidden, "workspace_id"},
		{"EraseUnknownParam", "DELETE", "/v1/subjects/s1?all=1", tokA, ``, 400, CodeInvalidField, "all"},
		{"EraseNoToken", "DELETE", "/v1/subjects/s1", "", ``, 401, CodeUnauthenticated, ""},
		{"AdmitUnknown", P, "/v1/actions/0-999/admit", tokA, ``, 404, CodeNotFound, ""},
		{"AdmitBodyTooLarge", P, "/v1/actions/0-1/admit", tokA, `{}` + repeat(300*1024, " "), 413, CodeBodyTooLarge, ""},
		{"CancelNotJSON", P, "/v1/actions/0-1/cancel", tokA, `please`, 400, CodeMalformedJSON, ""},
		{"GetUnknownParam", "GET", "/v1/actions/0-1?verbose=1", tokA, ``, 400, CodeInvalidField, "verbose"},
		{"CancelWithBody", P, "/v1/actions/0-1/cancel", tokA, `{"reason":"x"}`, 400, CodeInvalidField, "reason"},
		{"WrongMethod", "PUT", A, tokA, webhookBody, 405, CodeMethodNotAllowed, ""},
		{"NoRoute", P, "/v2/actions", tokA, webhookBody, 404, CodeNotFound, ""},
	}
}

func runRefusals(t *testing.T, b *testBundle) {
	t.Helper()
	// One existing action so that cancel-with-body has a target.
	require.Equal(t, http.StatusCreated, b.do(t, "POST", "/v1/actions", tokA, webhookBody).Status)
	before := b.items()
	require.Positive(t, before, "the store's count must see the action")
	for _, tc := range refusals() {
		t.Run(tc.name, func(t *testing.T) {
			ans := b.do(t, tc.method, tc.path, tc.token, tc.body)
			require.Equal(t, tc.status, ans.Status, "%s", ans.Body)
			code, field := ans.errorCode(t)
			require.Equal(t, tc.code, code, "%s", ans.Body)
			require.Equal(t, tc.field, field, "%s", ans.Body)
			if field != "" {
				require.Contains(t, string(ans.Body), field, "the message names the field")
			}
			require.Equal(t, before, b.items(), "a refused request must write nothing")
		})
	}
}

func TestTenancy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mk := func(tok, body string) string {
		ans := b.do(t, "POST", "/v1/actions", tok, body)
		require.Equal(t, http.StatusCreated, ans.Status, "%s", ans.Body)
		return ans.json(t)["id"].(string)
	}
	inA := mk(tokA, `{"kind":"webhook","propose":true,"subject_id":"s1","payload":{"url":"https://e.com"}}`)
	inB := mk(tokB, `{"kind":"webhook","propose":true,"subject_id":"s1","payload":{"url":"https://e.com"}}`)

	t.Run("OtherWorkspaceIsNotFound", func(t *testing.T) {
		for _, req := range []struct{ method, path string }{
			{"GET", "/v1/actions/" + inB},
			{"POST", "/v1/actions/" + inB + "/admit"},
			{"POST", "/v1/actions/" + inB + "/cancel"},
		} {
			ans := b.do(t, req.method, req.path, tokA, "")
			require.Equal(t, http.StatusNotFound, ans.Status, "%s %s", req.method, req.path)
			code, _ := ans.errorCode(t)
			require.Equal(t, CodeNotFound, code)
		}
		got := b.do(t, "GET", "/v1/actions/"+inB, tokB, "")
		require.Equal(t, http.StatusOK, got.Status)
		require.Equal(t, "PROPOSED", got.json(t)["state"], "the refused admit/cancel changed nothing")
		require.Equal(t, http.StatusOK, b.do(t, "GET", "/v1/actions/"+inA, tokAB, "").Status)
	})

	t.Run("ListFiltersByWorkspace", func(t *testing.T) {
		ans := b.do(t, "GET", "/v1/actions", tokA, "")
		require.Equal(t, http.StatusOK, ans.Status)
		var out struct{ Actions []map[string]any }
		require.NoError(t, json.Unmarshal(ans.Body, &out))
		require.Len(t, out.Actions, 1)
		require.Equal(t, inA, out.Actions[0]["id"])
		require.Equal(t, http.StatusForbidden, b.do(t, "GET", "/v1/actions?workspace_id=b", tokA, "").Status)
		amb := b.do(t, "GET", "/v1/actions", tokAB, "")
		require.Equal(t, http.StatusBadRequest, amb.Status)
		_, field := amb.errorCode(t)
		require.Equal(t, "workspace_id", field)
		require.Equal(t, http.StatusOK, b.do(t, "GET", "/v1/actions?workspace_id=b", tokAB, "").Status)
	})

	t.Run("EraseOnlyOwnWorkspaces", func(t *testing.T) {
		ans := b.do(t, "DELETE", "/v1/subjects/s1", tokA, "")
		require.Equal(t, http.StatusOK, ans.Status)
		require.JSONEq(t, `{"erased":1}`, string(ans.Body))
		require.Equal(t, http.StatusNotFound, b.do(t, "GET", "/v1/actions/"+inA, tokA, "").Status)
		require.Equal(t, http.StatusOK, b.do(t, "GET", "/v1/actions/"+inB, tokB, "").Status)
		ans = b.do(t, "DELETE", "/v1/subjects/s1?workspace_id=b", tokAB, "")
		require.JSONEq(t, `{"erased":1}`, string(ans.Body))
	})
}

func TestTransitions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ans := b.do(t, "POST", "/v1/actions", tokA, `{"kind":"webhook","propose":true,"payload":{"url":"https://e.com"}}`)
	id := ans.json(t)["id"].(string)

	ans = b.do(t, "POST", "/v1/actions/"+id+"/admit", tokA, "")
	require.Equal(t, http.StatusOK, ans.Status, "%s", ans.Body)
	require.Equal(t, "ADMITTED", ans.json(t)["state"])

	ans = b.do(t, "POST", "/v1/actions/"+id+"/admit", tokA, "{}")
	require.Equal(t, http.StatusConflict, ans.Status)
	code, _ := ans.errorCode(t)
	require.Equal(t, CodeTransition, code)

	ans = b.do(t, "POST", "/v1/actions/"+id+"/cancel", tokA, "")
	require.Equal(t, http.StatusOK, ans.Status)
	m := ans.json(t)
	require.Equal(t, "CANCELLED", m["state"])
	require.Equal(t, "CANCELLED", m["stop_reason"])
	require.Equal(t, "2026-11-29T12:00:00Z", m["ended_at"])
	_, hasPayload := m["payload"]
	require.False(t, hasPayload, "payload is absent once ended")
	require.Nil(t, m["next_attempt_at"])

	require.Equal(t, http.StatusConflict, b.do(t, "POST", "/v1/actions/"+id+"/cancel", tokA, "").Status)
}

func TestList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 5 {
		body := fmt.Sprintf(`{"kind":"webhook","lane_key":"l%d","payload":{"url":"https://e.com"}}`, i%2)
		require.Equal(t, http.StatusCreated, b.do(t, "POST", "/v1/actions", tokA, body).Status)
	}
	var ids []any
	cursor := ""
	for page := 0; ; page++ {
		path := "/v1/actions?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		ans := b.do(t, "GET", path, tokA, "")
		require.Equal(t, http.StatusOK, ans.Status, "%s", ans.Body)
		m := ans.json(t)
		nc, present := m["next_cursor"]
		require.True(t, present, "next_cursor is always present")
		for _, a := range m["actions"].([]any) {
			ids = append(ids, a.(map[string]any)["id"])
		}
		if nc == nil {
			break
		}
		cursor = nc.(string)
		require.Less(t, page, 5)
	}
	require.Len(t, ids, 5)

	ans := b.do(t, "GET", "/v1/actions?lane_key=l1&state=ADMITTED", tokA, "")
	require.Equal(t, http.StatusOK, ans.Status)
	require.Len(t, ans.json(t)["actions"], 2)
	require.Equal(t, outbox.ActionListParams{WorkspaceID: "a", State: outbox.StateADMITTED, LaneKey: "l1", Limit: DefaultListLimit}, b.fake.lastLst)

	for _, tc := range []struct{ query, field string }{
		{"state=RUNNING", "state"},
		{"limit=0", "limit"},
		{"limit=101", "limit"},
		{"limit=x", "limit"},
		{"limit=1&limit=2", "limit"},
		{"sort=asc", "sort"},
		{"lane_key=", "lane_key"},
	} {
		ans := b.do(t, "GET", "/v1/actions?"+tc.query, tokA, "")
		require.Equal(t, http.StatusBadRequest, ans.Status, tc.query)
		_, field := ans.errorCode(t)
		require.Equal(t, tc.field, field, tc.query)
	}
}

type apiErr struct{ code string }

func (e apiErr) Error() string                 { return e.code }
func (e apiErr) ErrorCode() string             { return e.code }
func (e apiErr) ErrorMessage() string          { return e.code }
func (e apiErr) ErrorFault() smithy.ErrorFault { return smithy.FaultServer }

func TestEngineFailures(t *testing.T) {
	t.Parallel()

	t.Run("ThrottleIs429", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.fake.fail = fmt.Errorf("enqueue: %w", apiErr{"ProvisionedThroughputExceededException"})
		ans := b.do(t, "POST", "/v1/actions", tokA, webhookBody)
		require.Equal(t, http.StatusTooManyRequests, ans.Status)
		require.Equal(t, "1", ans.Header.Get("Retry-After"))
		code, _ := ans.errorCode(t)
		require.Equal(t, CodeThrottled, code)
	})

	t.Run("InternalIs500WithoutDetails", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.fake.fail = errors.New("dial tcp 10.1.2.3:443: secret-internal-detail")
		ans := b.do(t, "GET", "/v1/actions/0-1", tokA, "")
		require.Equal(t, http.StatusInternalServerError, ans.Status)
		require.NotContains(t, string(ans.Body), "secret-internal-detail")
		require.JSONEq(t, `{"error":{"code":"internal","message":"internal error"}}`, string(ans.Body))
		require.Contains(t, b.logs.String(), "secret-internal-detail", "the log line keeps the cause")
	})

	t.Run("ValidationErrorNamesField", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.fake.fail = &outbox.ValidationError{Field: "lane_key", Message: "too long"}
		ans := b.do(t, "POST", "/v1/actions", tokA, webhookBody)
		require.Equal(t, http.StatusBadRequest, ans.Status)
		_, field := ans.errorCode(t)
		require.Equal(t, "lane_key", field)
	})

	t.Run("TooLargeIs413", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.fake.fail = &outbox.TooLargeError{Size: 300000, Max: 204800}
		ans := b.do(t, "POST", "/v1/actions", tokA, webhookBody)
		require.Equal(t, http.StatusRequestEntityTooLarge, ans.Status)
	})
}

func TestHealthAndOpenAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ans := b.do(t, "GET", "/healthz", "", "")
	require.Equal(t, http.StatusOK, ans.Status)
	require.JSONEq(t, `{"status":"ok","version":"`+version.String()+`"}`, string(ans.Body))
	ans = b.do(t, "GET", "/v1/openapi.json", "", "")
	require.Equal(t, http.StatusOK, ans.Status)
	require.Equal(t, "3.1.0", ans.json(t)["openapi"])
	require.Equal(t, version.String(), ans.json(t)["info"].(map[string]any)["version"])
}

// TestLogsNeverCarryPayloads checks the log lines of successful and refused
// requests: JSON, one per request, and no payload or body text in them.
func TestLogsNeverCarryPayloads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const secret = "payload-secret-7f3a"
	b.do(t, "POST", "/v1/actions", tokA, `{"kind":"webhook","payload":{"url":"https://e.com/`+secret+`"}}`)
	b.do(t, "POST", "/v1/actions", tokA, `{"kind":"webhook","payload":{"url":"ftp://`+secret+`"}}`)
	b.do(t, "POST", "/v1/actions", tokA, `{"kind":"webhook","x":"`+secret+`","payload":{}}`)
	b.do(t, "POST", "/v1/actions", tokA, `{"kind":"webhook","payload":{"a":"`+secret+`","a":1}}`)
	logs := b.logs.String()
	require.NotContains(t, logs, secret)
	require.NotContains(t, logs, tokA, "tokens are never logged")
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	require.Len(t, lines, 4)
	for i, line := range lines {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		require.Equal(t, "POST /v1/actions", m["http.route"])
		if i == 0 {
			require.Equal(t, "0-1", m["action.id"], "a created action's log line names it")
			require.Equal(t, "webhook", m["action.kind"])
		}
	}
}

// TestBodyCapWithoutLength: a body of unknown length (chunked) is cut at
// the cap, not read whole.
func TestBodyCapWithoutLength(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := io.MultiReader(strings.NewReader(`{"kind":"webhook","payload":{"url":"https://e.com","pad":"`),
		strings.NewReader(repeat(DefaultMaxBody, "x")), strings.NewReader(`"}}`))
	r := httptest.NewRequest("POST", "/v1/actions", body)
	require.EqualValues(t, -1, r.ContentLength)
	r.Header.Set("Authorization", "Bearer "+tokA)
	w := httptest.NewRecorder()
	b.h.ServeHTTP(w, r)
	require.Equal(t, http.StatusRequestEntityTooLarge, w.Code, w.Body.String())
	require.Equal(t, 0, b.items())
}
