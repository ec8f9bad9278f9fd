//go:build browser

package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/devstack"
	"github.com/ferryhq/ferry/internal/outbox"
)

// The browser tests drive the console in headless Chromium (Debian's
// chromium, `make chromium`) against a whole `ferry dev` stack in this
// process: `make console-browser` runs them. Screenshots go to
// testdata/screenshots; FERRY_CONSOLE_SCREENSHOTS=DIR writes them there
// instead (docs/console uses them).

// receiver is the webhooks' loopback receiver: /slow defers every call
// (503 with Retry-After: 120), anything else is accepted.
func receiver(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/slow" {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type devBundle struct {
	stack *devstack.Stack
	hook  string
}

// startDev runs `ferry dev` in this process on a loopback port: token dev
// for workspace default, token other for workspace other, operator token
// op, pages refreshing every second.
func startDev(t *testing.T) *devBundle {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var banner bytes.Buffer
	st, err := devstack.Start(ctx, devstack.Config{
		Addr:           "127.0.0.1:0",
		Tokens:         []devstack.Token{{Token: "dev", Workspaces: []string{"default"}}, {Token: "other", Workspaces: []string{"other"}}},
		OperatorTokens: []string{"op"}, ConsoleRefresh: time.Second, AllowPrivateWebhooks: true,
		MailDir: t.TempDir(), Clock: clock.System{}, Stdout: &banner,
		Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	require.Eventually(t, func() bool { return strings.Contains(banner.String(), "console") }, 5*time.Second, 10*time.Millisecond)
	require.Contains(t, banner.String(), st.ConsoleURL(), "the banner names the console")
	return &devBundle{stack: st, hook: receiver(t).URL}
}

// enqueue sends one action through the API and returns its id.
func (d *devBundle) enqueue(t *testing.T, token string, body map[string]any) string {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, d.stack.URL()+"/v1/actions", bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Contains(t, []int{200, 201}, resp.StatusCode)
	return out.ID
}

func (d *devBundle) waitFor(t *testing.T, id string, ok func(a *outbox.Action) bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		a, err := d.stack.Engine().ActionGet(context.Background(), id)
		return err == nil && ok(a)
	}, 10*time.Second, 20*time.Millisecond, "action %s", id)
}

// chromium starts headless Chromium with the flags that work on a
// machine without a network, a fresh profile, and collects its console.
func chromium(t *testing.T) (context.Context, *consoleLog) {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed: run `make chromium` (Debian's chromium package): %v", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true), chromedp.Flag("disable-dev-shm-usage", true),
	}
	// The whole walk fits in two minutes; a step that hangs fails there.
	tctx, tcancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(tcancel)
	actx, acancel := chromedp.NewExecAllocator(tctx, opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); acancel() })
	log := &consoleLog{}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			log.add(fmt.Sprintf("%s: %s", m.Type, m.Text), m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException)
		}
	}()
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)))
	return ctx, log
}

// consoleLog is what the page wrote to the browser's console.
type consoleLog struct {
	mu     sync.Mutex
	all    []string
	errors []string
}

func (c *consoleLog) add(line string, isErr bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, line)
	if isErr {
		c.errors = append(c.errors, line)
	}
}

func (c *consoleLog) errorsSoFar() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.errors...)
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("FERRY_CONSOLE_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("testdata", "screenshots")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// axeViolations runs axe-core (npm, testdata/browser) on the page and
// returns its serious and critical violations.
func axeViolations(t *testing.T, ctx context.Context) []string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "browser", "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		t.Fatalf("axe-core is not installed: run `make console-browser` (npm ci in internal/console/testdata/browser): %v", err)
	}
	_, err = chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](string(src)))
	require.NoError(t, err)
	var out struct {
		Passes     int
		Violations []string
	}
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](`axe.run(document).then(r => ({
		Passes: r.passes.length,
		Violations: r.violations.filter(v => v.impact === "serious" || v.impact === "critical")
		 .map(v => v.id + " (" + v.impact + "): " + v.help + " at " + v.nodes.map(n => n.target.join(" ")).join(", "))}))`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &out))
	require.Greater(t, out.Passes, 10, "axe-core checked the page")
	return out.Violations
}

func text(t *testing.T, ctx context.Context, css string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
	require.NoError(t, err, css)
	return s
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, steps...))
}

// TestConsoleInABrowser: sign in, click through overview → action → lane
// → proposals, admit one proposal and cancel another, see a page update
// by itself, show a payload full of markup and script as text, and check
// every page with axe-core; the browser's console stays free of errors
// (a Content-Security-Policy violation is one).
func TestConsoleInABrowser(t *testing.T) {
	d := startDev(t)
	head := d.enqueue(t, "dev", map[string]any{"kind": "webhook", "lane_key": "order-42", "payload": map[string]any{"url": d.hook + "/slow", "body": map[string]any{"n": 1}}})
	behind := d.enqueue(t, "dev", map[string]any{"kind": "webhook", "lane_key": "order-42", "payload": map[string]any{"url": d.hook + "/ok", "body": map[string]any{"n": 2}}})
	d.enqueue(t, "dev", map[string]any{"kind": "webhook", "lane_key": "order-42", "payload": map[string]any{"url": d.hook + "/ok", "body": map[string]any{"n": 3}}})
	done := d.enqueue(t, "dev", map[string]any{"kind": "webhook", "payload": map[string]any{"url": d.hook + "/ok", "body": map[string]any{"n": 4}}})
	toAdmit := d.enqueue(t, "dev", map[string]any{"kind": "webhook", "propose": true, "payload": map[string]any{"url": d.hook + "/ok", "body": map[string]any{"n": 5}}})
	toCancel := d.enqueue(t, "dev", map[string]any{"kind": "webhook", "propose": true, "payload": map[string]any{"url": d.hook + "/ok", "body": map[string]any{"n": 6}}})
	evil := `"><script>window.__xss=1</script><img src=x onerror="window.__xss=2"><svg onload="window.__xss=3">`
	xss := d.enqueue(t, "dev", map[string]any{"kind": "webhook", "propose": true, "lane_key": "lane" + evil, "subject_id": "subject" + evil,
		"payload": map[string]any{"url": d.hook + "/ok?q=" + "%3Cscript%3E", "headers": map[string]string{"X-Evil": evil}, "body": map[string]any{"html": evil}}})
	d.enqueue(t, "other", map[string]any{"kind": "webhook", "payload": map[string]any{"url": d.hook + "/ok", "body": map[string]any{"n": 7}}})
	d.waitFor(t, head, func(a *outbox.Action) bool { return a.Deferrals > 0 })
	d.waitFor(t, done, func(a *outbox.Action) bool { return a.State == outbox.StateDONE })

	ctx, clog := chromium(t)
	var a11y []string
	check := func(page string) {
		for _, v := range axeViolations(t, ctx) {
			a11y = append(a11y, page+": "+v)
		}
	}

	// Sign in: the console sends a signed-out browser to its form.
	do(t, ctx, chromedp.Navigate(d.stack.ConsoleURL()), chromedp.WaitVisible(chromedp.CSS("#token")))
	check("sign-in")
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#token"), "op"), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("#backlog-total")))

	// Overview: the deferred head is not due, the two members wait behind it.
	require.Equal(t, "Overview · Ferry console", must(chromedp.Run(ctx, chromedp.Title())))
	total := text(t, ctx, "#backlog-total")
	require.Regexp(t, `^Total\s+0\s+2\s+1\s+`, total, "nothing due now: the head waits out its deferral, the two members behind it")
	do(t, ctx, chromedp.Poll[chromedp.Void](`document.querySelector(".chart-summary").textContent.includes("enqueued")`, chromedp.WithPollingTimeout(10*time.Second)))
	require.Contains(t, text(t, ctx, ".chart-summary"), "deferred")
	check("overview")
	screenshot(t, ctx, "overview")

	// The page updates by itself: a new action shows in the total.
	before := text(t, ctx, "#ended-total")
	d.enqueue(t, "dev", map[string]any{"kind": "webhook", "payload": map[string]any{"url": d.hook + "/ok", "body": map[string]any{"n": 8}}})
	do(t, ctx, chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector("#ended-total").innerText !== %q`, before), chromedp.WithPollingTimeout(15*time.Second)))

	// Actions → the lane's head: its deferral, its lane.
	do(t, ctx, chromedp.Click(chromedp.CSS(`nav a[href="/console/actions"]`)), chromedp.WaitVisible(chromedp.CSS("#action-list")))
	check("actions")
	screenshot(t, ctx, "actions")
	listed := text(t, ctx, "#action-list")
	require.Contains(t, listed, head)
	require.Contains(t, listed, behind)
	do(t, ctx, chromedp.Click(chromedp.CSS(`a[href="/console/actions/`+head+`"]`)), chromedp.WaitVisible(chromedp.CSS("#why")))
	require.Contains(t, text(t, ctx, "#why"), "a deferral (1 in a row)")
	require.Contains(t, text(t, ctx, "#attempts"), "DEFER")
	require.Contains(t, text(t, ctx, "#attempts"), "2m0s", "the provider's Retry-After")
	require.Contains(t, text(t, ctx, "#neighbours"), behind)
	check("action")
	screenshot(t, ctx, "action")

	// → the lane: the head highlighted, why the lane waits.
	do(t, ctx, chromedp.Click(chromedp.CSS(`#lane-h + p a`)), chromedp.WaitVisible(chromedp.CSS("#lane-members")))
	require.Contains(t, text(t, ctx, "#lane-why"), "deferral")
	require.Contains(t, text(t, ctx, "#lane-members tr.head"), head)
	require.Contains(t, text(t, ctx, "#lane-members"), "waits for the members before it")
	check("lane")
	screenshot(t, ctx, "lane")

	// → proposals: admit one, cancel another, each after its confirmation.
	do(t, ctx, chromedp.Click(chromedp.CSS(`nav a[href="/console/proposals"]`)), chromedp.WaitVisible(chromedp.CSS("#proposal-list")))
	require.Contains(t, text(t, ctx, "#proposal-list"), toAdmit)
	check("proposals")
	screenshot(t, ctx, "proposals")
	do(t, ctx, chromedp.Click(chromedp.CSS(`a[href="/console/actions/`+toAdmit+`/admit"]`)), chromedp.WaitVisible(chromedp.CSS("#question")))
	require.Contains(t, text(t, ctx, "#question"), "Admit "+toAdmit)
	check("confirm")
	screenshot(t, ctx, "confirm")
	do(t, ctx, chromedp.Click(chromedp.CSS("#confirm-yes")), chromedp.WaitVisible(chromedp.CSS(".done")))
	require.Contains(t, text(t, ctx, ".done"), "Admitted")
	d.waitFor(t, toAdmit, func(a *outbox.Action) bool { return a.State == outbox.StateDONE })

	do(t, ctx, chromedp.Click(chromedp.CSS(`nav a[href="/console/proposals"]`)), chromedp.WaitVisible(chromedp.CSS("#proposal-list")),
		chromedp.Click(chromedp.CSS(`a[href="/console/actions/`+toCancel+`/cancel"]`)), chromedp.WaitVisible(chromedp.CSS("#question")),
		chromedp.Click(chromedp.CSS("#confirm-yes")), chromedp.WaitVisible(chromedp.CSS(".done")))
	require.Contains(t, text(t, ctx, ".done"), "Cancelled")
	d.waitFor(t, toCancel, func(a *outbox.Action) bool { return a.State == outbox.StateCANCELLED })
	require.Contains(t, text(t, ctx, "#why"), "Ended CANCELLED")

	// Hostile values are text: no script ran, no element was made of them.
	noMarkup := func(page string) {
		ran, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__xss !== undefined || document.querySelectorAll("img, svg, main script").length > 0`))
		require.NoError(t, err)
		require.False(t, ran, "markup from an action became part of the %s page", page)
	}
	do(t, ctx, chromedp.Navigate(d.stack.ConsoleURL()+"actions/"+xss), chromedp.WaitReady(chromedp.CSS("#payload")),
		chromedp.Click(chromedp.CSS("details summary")), chromedp.WaitVisible(chromedp.CSS("#payload")))
	require.Contains(t, text(t, ctx, "#payload"), `<script>window.__xss=1</script>`)
	require.Contains(t, text(t, ctx, "h1"), xss)
	noMarkup("action")
	screenshot(t, ctx, "hostile-payload")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#lane-h + p a`)), chromedp.WaitVisible(chromedp.CSS("#lane-members")))
	require.Contains(t, text(t, ctx, "h1"), "<script>window.__xss=1</script>")
	noMarkup("lane")
	do(t, ctx, chromedp.Navigate(d.stack.ConsoleURL()+"actions?ws=default&subject="+urlQuery("subject"+evil)), chromedp.WaitVisible(chromedp.CSS("#action-list")))
	require.Contains(t, text(t, ctx, "#action-list"), xss)
	noMarkup("actions")

	// Partitions: the map, the claim fences, the drainer's passes.
	do(t, ctx, chromedp.Click(chromedp.CSS(`nav a[href="/console/partitions"]`)), chromedp.WaitVisible(chromedp.CSS("#fences")))
	require.Contains(t, text(t, ctx, "#partition-map"), "Count")
	require.Regexp(t, `\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ`, text(t, ctx, "#sweeps"), "the drainer's passes that claimed")
	check("partitions")
	screenshot(t, ctx, "partitions")

	require.Empty(t, a11y, "serious or critical accessibility violations (axe-core)")
	require.Empty(t, clog.errorsSoFar(), "errors in the browser's console")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func urlQuery(s string) string {
	r := strings.NewReplacer("%", "%25", "&", "%26", "#", "%23", "+", "%2B", " ", "%20", `"`, "%22", "<", "%3C", ">", "%3E", "=", "%3D", "?", "%3F")
	return r.Replace(s)
}
