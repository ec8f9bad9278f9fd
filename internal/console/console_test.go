package console

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/httpapi"
	"github.com/ferryhq/ferry/internal/operator"
	"github.com/ferryhq/ferry/internal/outbox"
)

// noteAdapter is a kind whose effect does nothing: the console's tests
// only need actions in every state.
type noteAdapter struct{}

func (noteAdapter) Spec() outbox.KindSpec {
	return outbox.KindSpec{Name: "note", Class: outbox.IdempotentReceiver}
}
func (noteAdapter) Validate(string, json.RawMessage) error { return nil }
func (noteAdapter) Execute(context.Context, *outbox.Attempt) outbox.Result {
	return outbox.Done("")
}

type testBundle struct {
	srv    *httptest.Server
	engine *outbox.Engine
	clk    *clock.Manual
	h      *Handler
}

// setup serves a console over a fresh embedded table with two workspace
// tokens ("ta" for workspace a, "tb" for b) and an operator token "op".
func setup(t *testing.T, opts Options) *testBundle {
	t.Helper()
	clk := clock.NewManual(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	reg := outbox.NewRegistry()
	require.NoError(t, reg.Register(noteAdapter{}))
	cfg := outbox.Config{Table: "ferry", Partitions: 2}
	e, err := outbox.New(db, clk, reg, cfg)
	require.NoError(t, err)
	require.NoError(t, e.EnsureTable(context.Background()))
	ce, err := outbox.New(operator.NewMeter(db), clk, reg, cfg)
	require.NoError(t, err)
	api, err := httpapi.NewBearerTokens(map[string][]string{"ta": {"a"}, "tb": {"b"}})
	require.NoError(t, err)
	opts.Engine, opts.Login, opts.Clock = ce, TokenLogin(api, []string{"op"}), clk
	h, err := New(opts)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testBundle{srv: srv, engine: e, clk: clk, h: h}
}

func (b *testBundle) enqueue(t *testing.T, p outbox.EnqueueParams) *outbox.Action {
	t.Helper()
	if p.Kind == "" {
		p.Kind = "note"
	}
	if p.Payload == nil {
		p.Payload = json.RawMessage(`{"n":1}`)
	}
	r, err := b.engine.Enqueue(context.Background(), p)
	require.NoError(t, err)
	b.clk.Advance(time.Millisecond)
	return &r.Action
}

// browser is a signed-in client that does not follow redirects.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func (b *testBundle) signIn(t *testing.T, token string) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	br := &browser{t: t, base: b.srv.URL, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	resp := br.post("/console/login", url.Values{"token": {token}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "sign-in with %q", token)
	return br
}

func (br *browser) get(path string, hdr map[string]string) (*http.Response, string) {
	br.t.Helper()
	req, err := http.NewRequest(http.MethodGet, br.base+path, nil)
	require.NoError(br.t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := br.c.Do(req)
	require.NoError(br.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(br.t, err)
	return resp, string(body)
}

func (br *browser) post(path string, form url.Values, hdr map[string]string) *http.Response {
	br.t.Helper()
	req, err := http.NewRequest(http.MethodPost, br.base+path, strings.NewReader(form.Encode()))
	require.NoError(br.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := br.c.Do(req)
	require.NoError(br.t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (br *browser) csrf(path string) string {
	br.t.Helper()
	_, body := br.get(path, nil)
	m := csrfField.FindStringSubmatch(body)
	require.NotNil(br.t, m, "no CSRF field on %s", path)
	return m[1]
}

// TestTenancyWithTwoWorkspaces: a workspace token sees its workspace's
// actions and nothing of the other's — another workspace's action is "not
// found" (as the API answers), naming its workspace is refused, the
// instance's pages are an operator's — and an operator sees both.
func TestTenancyWithTwoWorkspaces(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{AllowChanges: true})
	mine := b.enqueue(t, outbox.EnqueueParams{WorkspaceID: "a", LaneKey: "shared-lane", Propose: true})
	theirs := b.enqueue(t, outbox.EnqueueParams{WorkspaceID: "b", LaneKey: "shared-lane", Propose: true, SubjectID: "s1"})
	b.enqueue(t, outbox.EnqueueParams{WorkspaceID: "b"})
	a := b.signIn(t, "ta")

	resp, body := a.get("/console/actions", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, mine.ID)
	require.NotContains(t, body, theirs.ID)

	for _, path := range []string{"/console/actions/" + theirs.ID, "/console/actions/" + theirs.ID + "/cancel"} {
		resp, body = a.get(path, nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		require.NotContains(t, body, theirs.ID)
	}
	require.Equal(t, http.StatusNotFound, a.post("/console/actions/"+theirs.ID+"/cancel", url.Values{"csrf": {a.csrf("/console/")}}, nil).StatusCode)
	for _, path := range []string{"/console/actions?ws=b", "/console/lanes?ws=b&lane=shared-lane", "/console/proposals?ws=b", "/console/actions?ws=b&subject=s1"} {
		resp, body = a.get(path, nil)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, path)
		require.NotContains(t, body, theirs.ID)
	}
	for _, path := range []string{"/console/partitions", "/console/metrics.json"} {
		resp, _ = a.get(path, nil)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, path)
	}
	_, body = a.get("/console/proposals", nil)
	require.Contains(t, body, mine.ID)
	require.NotContains(t, body, theirs.ID)
	_, body = a.get("/console/lanes?lane=shared-lane", nil)
	require.Contains(t, body, mine.ID)
	require.NotContains(t, body, theirs.ID)

	// The overview counts only the viewer's workspaces: a's one proposal
	// is not in the backlog, b's ADMITTED action is not due for a.
	_, body = a.get("/console/", nil)
	require.Regexp(t, `<tr id="backlog-total"><th scope="row">Total</th><td>0</td>`, body)
	op := b.signIn(t, "op")
	_, body = op.get("/console/", nil)
	require.Regexp(t, `<tr id="backlog-total"><th scope="row">Total</th><td>1</td>`, body)
	_, body = op.get("/console/actions/"+theirs.ID, nil)
	require.Contains(t, body, theirs.ID)
	_, body = op.get("/console/proposals", nil)
	require.Contains(t, body, mine.ID)
	require.Contains(t, body, theirs.ID)
}

// TestHostileValuesAreEscaped: lane keys, subject ids, idempotency keys,
// kinds' payloads full of markup are shown as text on every page, never as
// markup.
func TestHostileValuesAreEscaped(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{AllowChanges: true})
	evil := `"><script>alert(1)</script><img src=x onerror=alert(2)>`
	a := b.enqueue(t, outbox.EnqueueParams{WorkspaceID: "a", LaneKey: "lane" + evil, SubjectID: "sub" + evil, IdempotencyKey: "key" + evil,
		Payload: json.RawMessage(`{"html":"` + strings.ReplaceAll(evil, `"`, `\"`) + `","u":"javascript:alert(3)"}`), Propose: true})
	br := b.signIn(t, "ta")
	pages := []string{"/console/actions/" + a.ID, "/console/actions?ws=a", "/console/lanes?" + url.Values{"ws": {"a"}, "lane": {a.LaneKey}}.Encode(),
		"/console/proposals", "/console/actions/" + a.ID + "/cancel", "/console/actions?" + url.Values{"ws": {"a"}, "subject": {a.SubjectID}, "kind": {evil}}.Encode()}
	for _, p := range pages {
		resp, body := br.get(p, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, p)
		require.NotContains(t, body, "<script>alert", p)
		require.NotContains(t, body, "<img src=x", p)
		require.NotContains(t, body, `href="javascript:`, p)
	}
	_, body := br.get("/console/actions/"+a.ID, nil)
	require.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;")
}

// TestChangesNeedTheFormOfThisConsole: an admit or a cancel is refused
// without the session's CSRF token, with another's, or from another
// origin, and changes nothing; with them it is the CLI's change. A
// read-only console refuses every change.
func TestChangesNeedTheFormOfThisConsole(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{AllowChanges: true})
	p := b.enqueue(t, outbox.EnqueueParams{WorkspaceID: "a", Propose: true})
	br := b.signIn(t, "ta")
	other := b.signIn(t, "ta")
	path := "/console/actions/" + p.ID + "/admit"
	token := br.csrf(path)
	for name, tc := range map[string]struct {
		form url.Values
		hdr  map[string]string
	}{
		"NoToken":      {url.Values{}, nil},
		"WrongToken":   {url.Values{"csrf": {"x" + token}}, nil},
		"OtherSession": {url.Values{"csrf": {other.csrf(path)}}, nil},
		"CrossSite":    {url.Values{"csrf": {token}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		"OtherOrigin":  {url.Values{"csrf": {token}}, map[string]string{"Origin": "http://evil.example"}},
	} {
		resp := br.post(path, tc.form, tc.hdr)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, name)
	}
	got, err := b.engine.ActionGet(context.Background(), p.ID)
	require.NoError(t, err)
	require.Equal(t, outbox.StatePROPOSED, got.State)

	resp := br.post(path, url.Values{"csrf": {token}}, map[string]string{"Origin": b.srv.URL, "Sec-Fetch-Site": "same-origin"})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/console/actions/"+p.ID+"?done=admitted", resp.Header.Get("Location"))
	got, err = b.engine.ActionGet(context.Background(), p.ID)
	require.NoError(t, err)
	require.Equal(t, outbox.StateADMITTED, got.State)

	// Admitting again is refused as `ferry actions admit` refuses it.
	resp = br.post(path, url.Values{"csrf": {token}}, nil)
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	_, body := br.get("/console/actions/"+p.ID, nil)
	require.Contains(t, body, "Cancel…")

	ro := setup(t, Options{})
	q := ro.enqueue(t, outbox.EnqueueParams{WorkspaceID: "a", Propose: true})
	rb := ro.signIn(t, "ta")
	r, _ := rb.get("/console/actions/"+q.ID+"/cancel", nil)
	require.Equal(t, http.StatusForbidden, r.StatusCode)
	require.Equal(t, http.StatusForbidden, rb.post("/console/actions/"+q.ID+"/cancel", url.Values{"csrf": {rb.csrf("/console/")}}, nil).StatusCode)
}

// TestRefusalsSayWhatTheCLISays: cancelling an ended action is refused
// with the CLI's message and exit code 4 (refused).
func TestRefusalsSayWhatTheCLISays(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{AllowChanges: true})
	p := b.enqueue(t, outbox.EnqueueParams{WorkspaceID: "a", Propose: true})
	_, err := b.engine.Cancel(context.Background(), p.ID)
	require.NoError(t, err)
	br := b.signIn(t, "ta")
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+"/console/actions/"+p.ID+"/cancel", strings.NewReader(url.Values{"csrf": {br.csrf("/console/")}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := br.c.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	require.Contains(t, string(body), "ended CANCELLED (CANCELLED) and cannot be cancelled")
	require.Contains(t, string(body), "exit code 4")
}

// TestSignIn: a refused token gets the form again (401), a session cookie
// is HttpOnly and SameSite=Strict and holds no token, `next` never leaves
// the console, and signing out ends the session.
func TestSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	anon := &browser{t: t, base: b.srv.URL, c: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	resp, _ := anon.get("/console/actions?ws=a", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/console/login?next="+url.QueryEscape("/console/actions?ws=a"), resp.Header.Get("Location"))
	require.Equal(t, http.StatusUnauthorized, anon.post("/console/login", url.Values{"token": {"nope"}}, nil).StatusCode)
	resp = anon.post("/console/login", url.Values{"token": {"ta"}, "next": {"//evil.example/x"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/console/", resp.Header.Get("Location"))
	c := resp.Cookies()[0]
	require.Equal(t, sessionCookie, c.Name)
	require.True(t, c.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, c.SameSite)
	require.NotContains(t, c.Value, "ta")
	require.Equal(t, http.StatusForbidden, anon.post("/console/login", url.Values{"token": {"ta"}}, map[string]string{"Sec-Fetch-Site": "cross-site"}).StatusCode)

	br := b.signIn(t, "op")
	token := br.csrf("/console/")
	require.Equal(t, http.StatusSeeOther, br.post("/console/logout", url.Values{"csrf": {token}}, nil).StatusCode)
	resp, _ = br.get("/console/", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "signed out")
}

// TestPagesCarryTheirCostAndAStrictPolicy: every page and asset carries
// the Content-Security-Policy (own scripts and styles only, no inline
// ones); a page's footer says what its reads cost; a page's own refresh
// answers its region with an ETag, and 304 while it has not changed.
func TestPagesCarryTheirCostAndAStrictPolicy(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{Refresh: 2 * time.Second})
	b.enqueue(t, outbox.EnqueueParams{WorkspaceID: "a"})
	br := b.signIn(t, "op")
	for _, p := range []string{"/console/", "/console/assets/console.js", "/console/assets/vendor/uplot/uPlot.iife.min.js", "/console/nope"} {
		resp, body := br.get(p, nil)
		csp := resp.Header.Get("Content-Security-Policy")
		require.Contains(t, csp, "script-src 'self'", p)
		require.Contains(t, csp, "style-src 'self'", p)
		require.NotContains(t, csp, "unsafe", p)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
		if strings.HasSuffix(p, "/") {
			require.NotContains(t, body, "<script>", "no inline script")
			require.NotContains(t, body, "style=", "no inline style")
			require.Regexp(t, `This page: \d+ DynamoDB calls, [0-9.]+ read units`, body)
		}
	}
	resp, region := br.get("/console/", map[string]string{liveHeader: "1"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, region, "<html")
	etag := resp.Header.Get("ETag")
	require.NotEmpty(t, etag)
	require.NotEmpty(t, resp.Header.Get("X-Console-Footer"))
	resp, _ = br.get("/console/", map[string]string{liveHeader: "1", "If-None-Match": etag})
	require.Equal(t, http.StatusNotModified, resp.StatusCode)
	b.enqueue(t, outbox.EnqueueParams{WorkspaceID: "a"})
	resp, _ = br.get("/console/", map[string]string{liveHeader: "1", "If-None-Match": etag})
	require.Equal(t, http.StatusOK, resp.StatusCode, "a new action changes the region")
}

// TestRecorderSeries: the in-process metrics count per minute what the
// engine reported (ferry dev) or the functions' EMF lines said (ferry
// local), and the chart's JSON has the last hour of them.
func TestRecorderSeries(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 12, 1, 9, 0, 30, 0, time.UTC))
	r := NewRecorder(clk, nil)
	a := &outbox.Action{ID: "x", Kind: "note", Attempt: 1, Epoch: 1}
	r.Enqueued(3)
	r.AttemptStarted(a)
	clk.Advance(20 * time.Millisecond)
	r.AttemptFinished(a, outbox.Result{Outcome: outbox.OutcomeDefer, Wait: 30 * time.Second}, outbox.StateADMITTED)
	r.ActionEnded(a, outbox.OutcomeDone, outbox.StopDone)
	r.ActionEnded(a, outbox.OutcomeRetry, outbox.StopAttemptsExhausted)
	r.Backlog(7)
	clk.Advance(time.Minute)
	r.IngestEMF([]byte(`{"_aws":{"Timestamp":` + jsonMs(clk.Now()) + `},"ActionsEnqueued":5,"Kind":"note"}`))
	r.IngestEMF([]byte(`{"_aws":{"Timestamp":` + jsonMs(clk.Now()) + `},"ActionsEnded":2,"Outcome":"DONE"}`))
	r.IngestEMF([]byte(`{"_aws":{"Timestamp":` + jsonMs(clk.Now()) + `},"BacklogDepth":4,"Partition":"1"}`))
	r.IngestEMF([]byte(`{"_aws":{"Timestamp":` + jsonMs(clk.Now()) + `},"BacklogDepth":9}`))
	r.IngestEMF([]byte(`not json`))
	s, err := r.Series(context.Background(), clk.Now())
	require.NoError(t, err)
	require.Len(t, s.Minutes, SeriesMinutes)
	last, prev := SeriesMinutes-1, SeriesMinutes-2
	require.Equal(t, 3.0, *s.Enqueued[prev])
	require.Equal(t, 1.0, *s.Delivered[prev])
	require.Equal(t, 1.0, *s.Failed[prev])
	require.Equal(t, 1.0, *s.Deferred[prev])
	require.Equal(t, 7.0, *s.Backlog[prev])
	require.Equal(t, 5.0, *s.Enqueued[last])
	require.Equal(t, 2.0, *s.Delivered[last])
	require.Equal(t, 9.0, *s.Backlog[last])
	require.Nil(t, s.Enqueued[0], "before the process ran: no figure")
	evs := r.Attempts("x")
	require.Len(t, evs, 2)
	require.Equal(t, "DEFER", evs[1].What)
	require.Equal(t, 20*time.Millisecond, evs[1].Took)
	require.Equal(t, 30*time.Second, evs[1].Wait)
}

func jsonMs(t time.Time) string {
	b, _ := json.Marshal(t.UnixMilli())
	return string(b)
}

// TestEraseASubject: erasing a subject asks what `ferry subjects erase`
// asks, with the subject's actions counted by state; it needs the form of
// this console; it is the engine's erasure within one workspace; a
// workspace token erases only in its workspaces; a read-only console
// refuses it.
func TestEraseASubject(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{AllowChanges: true})
	for range 3 {
		b.enqueue(t, outbox.EnqueueParams{WorkspaceID: "a", SubjectID: "ann"})
	}
	b.enqueue(t, outbox.EnqueueParams{WorkspaceID: "a", SubjectID: "ann", Propose: true})
	theirs := b.enqueue(t, outbox.EnqueueParams{WorkspaceID: "b", SubjectID: "ann"})
	br := b.signIn(t, "ta")
	_, body := br.get("/console/actions?ws=a&subject=ann", nil)
	require.Contains(t, body, "Erase subject ann…")
	path := "/console/subjects/erase?ws=a&subject=ann"
	resp, body := br.get(path, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "Erase 4 actions of subject ann, their idempotency records and delivery evidence? This cannot be undone")
	require.Contains(t, body, "3 ADMITTED")
	require.Contains(t, body, "1 PROPOSED")
	resp, _ = br.get("/console/subjects/erase?ws=b&subject=ann", nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Equal(t, http.StatusForbidden, br.post("/console/subjects/erase?ws=b&subject=ann", url.Values{"csrf": {br.csrf(path)}}, nil).StatusCode)
	require.Equal(t, http.StatusForbidden, br.post(path, url.Values{}, nil).StatusCode, "no CSRF token")

	req, err := http.NewRequest(http.MethodPost, b.srv.URL+path, strings.NewReader(url.Values{"csrf": {br.csrf(path)}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err = br.c.Do(req)
	require.NoError(t, err)
	done, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(done), "Erased 4 actions of subject ann in workspace a")
	r, err := b.engine.ActionFind(context.Background(), outbox.ActionFindParams{WorkspaceID: "a", SubjectID: "ann"})
	require.NoError(t, err)
	require.Empty(t, r.Actions)
	_, err = b.engine.ActionGet(context.Background(), theirs.ID)
	require.NoError(t, err, "the other workspace's subject is untouched")

	ro := setup(t, Options{})
	rb := ro.signIn(t, "ta")
	resp, _ = rb.get(path, nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// deniedReads answers every read as DynamoDB answers credentials that lack
// the read's IAM action, wrapped as the AWS SDK wraps it.
type deniedReads struct{ outbox.DynamoDB }

func (deniedReads) denied(op string) error {
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: op, Err: &smithy.GenericAPIError{
		Code:    "AccessDeniedException",
		Message: "User: arn:aws:iam::123456789012:user/oncall is not authorized to perform: dynamodb:" + op,
	}}
}

func (d deniedReads) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, d.denied("GetItem")
}

func (d deniedReads) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return nil, d.denied("Query")
}

func (d deniedReads) BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return nil, d.denied("BatchGetItem")
}

// TestDeniedReadsSayWhichActionInPlainWords: a page the credentials may
// not read answers 403 naming the IAM action the credentials lack, in
// operator.Message's words rather than the SDK's "operation error …"
// wrapping (issue 28 item 13, the same path as the CLI's messages).
func TestDeniedReadsSayWhichActionInPlainWords(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	reg := outbox.NewRegistry()
	require.NoError(t, reg.Register(noteAdapter{}))
	e, err := outbox.New(operator.NewMeter(deniedReads{ddblocal.New(ddblocal.WithClock(clk))}), clk, reg, outbox.Config{Table: "ferry", Partitions: 2})
	require.NoError(t, err)
	api, err := httpapi.NewBearerTokens(map[string][]string{"ta": {"a"}})
	require.NoError(t, err)
	h, err := New(Options{Engine: e, Login: TokenLogin(api, []string{"op"}), Clock: clk})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	br := (&testBundle{srv: srv}).signIn(t, "op")
	resp, body := br.get("/console/", nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	require.Contains(t, body, "is not authorized to perform: dynamodb:")
	require.Contains(t, body, "DynamoDB refused the request: AccessDeniedException")
	require.NotContains(t, body, "operation error")
}
