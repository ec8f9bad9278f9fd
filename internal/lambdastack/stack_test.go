//go:build lambdastack

package lambdastack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// The stack tests run what `make local` runs: this machine's bootstraps of
// every function the template declares, under the emulator, wired from a
// template synthesized from infra/ now. `make local-test` runs them (it
// installs the emulator and names it in LAMBDA_RIE).
var (
	testRoot     string
	testBin      string
	testTemplate string
)

func TestMain(m *testing.M) {
	code, err := setupStackTests(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setupStackTests(m *testing.M) (int, error) {
	wd, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	testRoot = filepath.Join(wd, "..", "..")
	dir, err := os.MkdirTemp("", "ferry-local-test-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	testBin = filepath.Join(dir, "bin")
	// The bootstraps for this machine, with `make build`'s flags.
	build := exec.Command("make", "--no-print-directory", "build", "LAMBDA_ARCH="+runtime.GOARCH, "LAMBDA_BIN="+testBin)
	build.Dir = testRoot
	if out, err := build.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("make build: %v\n%s", err, out)
	}
	// The template as `make synth` would write it, its assets from testBin.
	began := time.Now()
	assembly := filepath.Join(dir, "cdk.out")
	if err := Synth(context.Background(), filepath.Join(testRoot, "infra"), assembly, map[string]any{"assetDir": testBin}, os.Stderr); err != nil {
		return 0, err
	}
	fmt.Fprintf(os.Stderr, "synthesized in %s\n", time.Since(began).Round(time.Millisecond))
	if testTemplate, err = StackTemplate(assembly, ""); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// receiver is a webhook receiver on loopback.
type receiver struct {
	mu    sync.Mutex
	got   []string // webhook-id of each delivery
	first time.Time
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	_, _ = io.Copy(io.Discard, req.Body)
	r.mu.Lock()
	r.got = append(r.got, req.Header.Get("webhook-id"))
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (r *receiver) deliveries() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

type stackBundle struct {
	stack *Stack
	recv  *receiver
	hook  string // the receiver's URL
	mail  string
	out   *syncBuffer
	done  chan error
}

func startStack(t *testing.T, template string, schedules map[string]time.Duration) *stackBundle {
	t.Helper()
	rie := os.Getenv("LAMBDA_RIE")
	require.NotEmpty(t, rie, "LAMBDA_RIE must name the aws-lambda-rie binary (make local-test installs it)")
	b := &stackBundle{recv: &receiver{}, mail: t.TempDir(), out: &syncBuffer{}, done: make(chan error, 1)}
	srv := httptest.NewServer(b.recv)
	t.Cleanup(srv.Close)
	b.hook = srv.URL + "/hook"
	var err error
	b.stack, err = Start(context.Background(), Config{
		Template: template, BinDir: testBin, RIE: rie, Addr: "127.0.0.1:0",
		MailDir: b.mail, WebhookSecret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", AllowPrivateWebhooks: true,
		Schedules: schedules, LogDir: filepath.Join(t.TempDir(), "logs"), Out: b.out, LogOut: b.out,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { b.done <- b.stack.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-b.done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("ferry local did not stop within 30 s")
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("ferry local's output:\n%s", b.out.String())
		}
	})
	return b
}

// api sends a request through the HTTP front with the default token.
func (b *stackBundle) api(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, b.stack.URL()+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer dev")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

func (b *stackBundle) enqueue(t *testing.T, body string) string {
	t.Helper()
	status, out := b.api(t, http.MethodPost, "/v1/actions", body)
	require.Equal(t, http.StatusCreated, status, "%v", out)
	return out["id"].(string)
}

func (b *stackBundle) state(t *testing.T, id string) string {
	t.Helper()
	status, out := b.api(t, http.MethodGet, "/v1/actions/"+id, "")
	require.Equal(t, http.StatusOK, status, "%v", out)
	return out["state"].(string)
}

func emails(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".eml") {
			n++
		}
	}
	return n
}

// TestLocalStackDeployedWiring: a webhook and an email enqueued through
// the front; the webhook delivered by the drainer bootstrap woken by the
// stream poller (the drainer's schedule, at the template's minute, has not
// fired); the email in the mail sink; the reaper and retention invoked on
// their (sped-up) schedules; a clean stop.
func TestLocalStackDeployedWiring(t *testing.T) {
	b := startStack(t, testTemplate, map[string]time.Duration{"reaper": 2 * time.Second, "retention": 2 * time.Second})
	hook := b.enqueue(t, fmt.Sprintf(`{"kind":"webhook","payload":{"url":%q,"body":{"order":42}}}`, b.hook))
	mail := b.enqueue(t, `{"kind":"email","payload":{"from":"shop@example.com","to":["ann@example.com"],"subject":"Your order","text":"It shipped."}}`)

	require.Eventually(t, func() bool { return len(b.recv.deliveries()) == 1 }, 30*time.Second, 50*time.Millisecond, "the webhook is delivered")
	require.Equal(t, []string{hook}, b.recv.deliveries(), "webhook-id is the action id")
	require.Zero(t, b.stack.ScheduleCalls()["drainer"], "delivered before the drainer's schedule fired")
	require.NotEmpty(t, b.stack.Pollers())
	require.GreaterOrEqual(t, b.stack.Pollers()[0].Stats().Batches, 1, "the stream poller invoked the drainer")

	require.Eventually(t, func() bool { return emails(t, b.mail) == 1 }, 30*time.Second, 50*time.Millisecond, "the email is in the mail sink")
	require.Eventually(t, func() bool { return b.state(t, hook) == "DONE" && b.state(t, mail) == "DONE" }, 30*time.Second, 100*time.Millisecond)

	require.Eventually(t, func() bool {
		return b.stack.Emulator("reaper").Stats().Invocations >= 1 && b.stack.Emulator("retention").Stats().Invocations >= 1
	}, 30*time.Second, 50*time.Millisecond, "the reaper and retention run on schedule")
	calls := b.stack.ScheduleCalls()
	require.GreaterOrEqual(t, calls["reaper"], 1)
	require.GreaterOrEqual(t, calls["retention"], 1)
	require.Empty(t, b.stack.Gate().Denials(), "every DynamoDB request the functions sent is allowed by their roles")

	require.Equal(t, 1.0, b.stack.Logs().Metric("drainer", "ActionsEnded", "Kind=webhook", "Outcome=DONE"), "EMF lines are added up")
	require.Equal(t, 1.0, b.stack.Logs().Metric("drainer", "ActionsEnded", "Kind=email", "Outcome=DONE"))

	// The console beside the API: the dev token sees its workspace's
	// actions, the chart counts the functions' EMF lines.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(b.stack.ConsoleURL() + "login?token=dev&next=%2Fconsole%2Factions")
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(page), hook)
	require.Contains(t, string(page), mail)
	var banner strings.Builder
	b.stack.Banner(&banner)
	require.Contains(t, banner.String(), b.stack.ConsoleURL(), "the banner names the console")
	s, err := b.stack.ConsoleMetrics().Series(context.Background(), time.Now())
	require.NoError(t, err)
	delivered := 0.0
	for _, v := range s.Delivered {
		if v != nil {
			delivered += *v
		}
	}
	require.Equal(t, 2.0, delivered, "the chart counts the drainer's ActionsEnded")
}

// TestLocalStackChangedStreamFilter: in a copy of the template whose
// stream filter only lets emails through, a webhook's records are read and
// filtered out (the drainer is not invoked; nothing is delivered) while an
// email's wake the drainer. The copy also takes dynamodb:BatchGetItem from
// the enqueue role: a workspace listing (a Query of the workspace index,
// then one BatchGetItem of the rows it names) then fails with AWS's refusal.
func TestLocalStackChangedStreamFilter(t *testing.T) {
	raw, err := os.ReadFile(testTemplate)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	changed := 0
	for _, r := range doc["Resources"].(map[string]any) {
		res := r.(map[string]any)
		if res["Type"] != "AWS::Lambda::EventSourceMapping" {
			continue
		}
		res["Properties"].(map[string]any)["FilterCriteria"] = map[string]any{"Filters": []any{
			map[string]any{"Pattern": `{"dynamodb":{"NewImage":{"kind":{"S":["email"]},"st":{"S":["ADMITTED"]}}}}`},
		}}
		changed++
	}
	require.Equal(t, 1, changed)
	batchGets := 0
	for id, r := range doc["Resources"].(map[string]any) {
		res := r.(map[string]any)
		if res["Type"] != "AWS::IAM::Policy" || !strings.HasPrefix(id, "EnqueueRole") {
			continue
		}
		for _, st := range res["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			stm := st.(map[string]any)
			acts, ok := stm["Action"].([]any)
			if !ok {
				continue
			}
			kept := []any{}
			for _, a := range acts {
				if a == "dynamodb:BatchGetItem" {
					batchGets++
					continue
				}
				kept = append(kept, a)
			}
			stm["Action"] = kept
		}
	}
	require.Equal(t, 1, batchGets, "the enqueue role grants BatchGetItem once")
	out, err := json.Marshal(doc)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "Ferry.template.json")
	require.NoError(t, os.WriteFile(path, out, 0o644))

	b := startStack(t, path, map[string]time.Duration{"drainer": 0, "reaper": 0, "retention": 0})
	p := b.stack.Pollers()
	hook := b.enqueue(t, fmt.Sprintf(`{"kind":"webhook","payload":{"url":%q,"body":{"order":43}}}`, b.hook))
	require.Eventually(t, func() bool { return len(p) == 1 && p[0].Stats().Filtered >= 1 }, 30*time.Second, 20*time.Millisecond,
		"the webhook's records are read and filtered out")
	// Longer than the batching window: a batch would have gone out by now.
	time.Sleep(2 * time.Second)
	require.Zero(t, p[0].Stats().Batches, "no batch for records the filter drops")
	require.Zero(t, b.stack.Emulator("drainer").Stats().Invocations)
	require.Empty(t, b.recv.deliveries())
	require.Equal(t, "ADMITTED", b.state(t, hook))

	mail := b.enqueue(t, `{"kind":"email","payload":{"from":"shop@example.com","to":["ann@example.com"],"subject":"Filtered in","text":"Hello."}}`)
	require.Eventually(t, func() bool { return emails(t, b.mail) == 1 }, 30*time.Second, 50*time.Millisecond, "the email's record wakes the drainer")
	// The sink holds the email before the drainer records its end.
	require.Eventually(t, func() bool { return b.state(t, mail) == "DONE" }, 30*time.Second, 50*time.Millisecond,
		"the email's action ends DONE")
	require.GreaterOrEqual(t, p[0].Stats().Batches, 1)

	status, _ := b.api(t, http.MethodGet, "/v1/actions?workspace_id=default", "")
	require.Equal(t, http.StatusInternalServerError, status, "a workspace listing reads its rows with BatchGetItem, which the role no longer allows")
	denied := b.stack.Gate().Denials()
	require.NotEmpty(t, denied)
	require.Equal(t, "enqueue", denied[0].Function)
	require.Equal(t, "dynamodb:BatchGetItem", denied[0].Action)
	require.Contains(t, denied[0].Message, "is not authorized to perform: dynamodb:BatchGetItem on resource: arn:aws:dynamodb:us-east-1:000000000000:table/ferry because no identity-based policy allows the dynamodb:BatchGetItem action")
}

// syncBuffer collects ferry local's output.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
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

// timedReceiver records when each webhook arrived.
type timedReceiver struct {
	mu  sync.Mutex
	at  map[string]time.Time
	all chan struct{}
	n   int
}

func (r *timedReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	_, _ = io.Copy(io.Discard, req.Body)
	now := time.Now()
	r.mu.Lock()
	if _, seen := r.at[req.Header.Get("webhook-id")]; !seen {
		r.at[req.Header.Get("webhook-id")] = now
		if len(r.at) == r.n {
			close(r.all)
		}
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// BenchmarkLocalStackDelivery measures enqueue-to-delivery through the
// stream poller (the drainer's schedule off): 200 webhooks enqueued one
// after another through the front, each timed from its request to its
// arrival at the receiver; it reports the p50 and p99, and the stack's
// peak resident memory. make local-figures runs it.
func BenchmarkLocalStackDelivery(b *testing.B) {
	const n = 200
	rie := os.Getenv("LAMBDA_RIE")
	require.NotEmpty(b, rie)
	for range b.N {
		recv := &timedReceiver{at: map[string]time.Time{}, all: make(chan struct{}), n: n}
		srv := httptest.NewServer(recv)
		s, err := Start(context.Background(), Config{
			Template: testTemplate, BinDir: testBin, RIE: rie, Addr: "127.0.0.1:0", MailDir: b.TempDir(),
			WebhookSecret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", AllowPrivateWebhooks: true,
			Schedules: map[string]time.Duration{"drainer": 0, "reaper": 0, "retention": 0}, Out: io.Discard, LogDir: os.Getenv("FERRY_LOCAL_LOG_DIR"),
		})
		require.NoError(b, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		sent := map[string]time.Time{}
		for i := range n {
			began := time.Now()
			req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/actions",
				strings.NewReader(fmt.Sprintf(`{"kind":"webhook","payload":{"url":%q,"body":{"n":%d}}}`, srv.URL+"/hook", i)))
			req.Header.Set("Authorization", "Bearer dev")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(b, err)
			var a struct{ ID string }
			require.NoError(b, json.NewDecoder(resp.Body).Decode(&a))
			resp.Body.Close()
			require.Equal(b, http.StatusCreated, resp.StatusCode)
			sent[a.ID] = began
		}
		select {
		case <-recv.all:
		case <-time.After(2 * time.Minute):
			b.Fatalf("%d of %d webhooks delivered in 2 minutes", len(recv.at), n)
		}
		s.memory.sample()
		var lat []time.Duration
		recv.mu.Lock()
		for id, at := range recv.at {
			lat = append(lat, at.Sub(sent[id]))
		}
		recv.mu.Unlock()
		slices.Sort(lat)
		st := s.Pollers()[0].Stats()
		cancel()
		require.NoError(b, <-done)
		srv.Close()
		b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Milliseconds()), "p99-ms")
		b.ReportMetric(float64(s.memory.peak())/(1<<20), "peak-MiB")
		b.ReportMetric(float64(st.Batches), "stream-batches")
		b.ReportMetric(float64(s.Emulator("drainer").Stats().Instances), "drainer-instances")
	}
}

// TestLocalStackRefusesOtherLayouts: the stack's custom resource writes
// the table's layout marker (infra/marker.go) and ferry local makes its
// PutItem after the table, as CloudFormation would. A template without it
// (the table has no marker: not a Ferry table) or whose marker is of
// another layout (a newer build's template) is refused before any
// function or the console starts, naming the table, both versions and the
// docs section (design.md §3.10); each function's own refusal at its cold
// start is emulatortest's RefusesOtherLayouts.
func TestLocalStackRefusesOtherLayouts(t *testing.T) {
	tmpl, err := ReadTemplate(testTemplate, DefaultLocal)
	require.NoError(t, err)
	require.Len(t, tmpl.Table.Puts, 1, "the deployed template writes the marker")
	lv := fmt.Sprintf(`"lv":{"N":"%d"}`, outbox.Layout)
	require.Contains(t, string(tmpl.Table.Puts[0].Input), lv)

	for _, c := range []struct {
		name string
		edit func(id string, r map[string]any, doc map[string]any) int
		want string
	}{
		{"NoMarker", func(id string, _ map[string]any, doc map[string]any) int {
			delete(doc, id)
			return 1
		}, "table ferry is not a Ferry table"},
		{"Newer", func(_ string, r map[string]any, _ map[string]any) int {
			return replaceStrings(r, lv, fmt.Sprintf(`"lv":{"N":"%d"}`, outbox.Layout+1))
		}, fmt.Sprintf("table ferry has layout %d, newer than layout %d", outbox.Layout+1, outbox.Layout)},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw, err := os.ReadFile(testTemplate)
			require.NoError(t, err)
			var doc map[string]any
			require.NoError(t, json.Unmarshal(raw, &doc))
			resources := doc["Resources"].(map[string]any)
			edited := 0
			for id, r := range resources {
				if r.(map[string]any)["Type"] == "Custom::FerryTableMarker" {
					edited += c.edit(id, r.(map[string]any), resources)
				}
			}
			require.NotZero(t, edited, "the marker resource edited")
			path := filepath.Join(t.TempDir(), "Ferry.template.json")
			raw, err = json.Marshal(doc)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, raw, 0o644))

			out := &syncBuffer{}
			s, err := Start(context.Background(), Config{
				Template: path, BinDir: testBin, RIE: os.Getenv("LAMBDA_RIE"), Addr: "127.0.0.1:0",
				MailDir: t.TempDir(), WebhookSecret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
				LogDir: filepath.Join(t.TempDir(), "logs"), Out: out, LogOut: out,
			})
			require.Nil(t, s)
			require.ErrorIs(t, err, outbox.ErrLayout)
			require.ErrorContains(t, err, c.want)
			require.ErrorContains(t, err, outbox.LayoutDocs)
		})
	}
}

// replaceStrings replaces old with repl in every string under v (a decoded
// JSON document) and returns how many strings changed.
func replaceStrings(v any, old, repl string) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && strings.Contains(s, old) {
				v[k] = strings.ReplaceAll(s, old, repl)
				n++
				continue
			}
			n += replaceStrings(x, old, repl)
		}
	case []any:
		for i, x := range v {
			if s, ok := x.(string); ok && strings.Contains(s, old) {
				v[i] = strings.ReplaceAll(s, old, repl)
				n++
				continue
			}
			n += replaceStrings(x, old, repl)
		}
	}
	return n
}
