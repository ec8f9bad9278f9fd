//go:build emulator

package emulatortest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	awseventbridge "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/adapters/email"
	"github.com/ferryhq/ferry/internal/adapters/eventbridge"
	"github.com/ferryhq/ferry/internal/adapters/ssrfguard"
	"github.com/ferryhq/ferry/internal/adapters/webhook"
	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/devstack"
	"github.com/ferryhq/ferry/internal/outbox"
	"github.com/ferryhq/ferry/internal/version"
)

// The drainer, reaper and retention work on table; the enqueue function on
// apiTable, so that the API samples (which name the ids a fresh table
// gives) and their public webhook URLs never meet the drainer.
const (
	table    = "ferry"
	apiTable = "ferry-api"
)

// repoRoot is two levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	return filepath.Join(wd, "..", "..")
}

// stampedVersion is the version build stamps, as make stamps git describe's.
const stampedVersion = "v9.9.9-1-glambdalocal"

// build compiles pkg as a Lambda bootstrap (or a plain binary) for the
// local architecture, with the flags `make build` uses.
func build(t *testing.T, root, pkg, out string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath",
		"-ldflags", "-s -w -X "+version.StampVariable+"="+stampedVersion, "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	outb, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s: %s", pkg, outb)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// waitListening dials addr until it answers, at most 200 times 25 ms.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	for range 200 {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s", addr)
}

// syncBuffer collects a child process's output.
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

// start runs a child process until the test ends.
func start(t *testing.T, env []string, out io.Writer, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	cmd.Stdout = out
	cmd.Stderr = out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return cmd
}

// fakeAWS answers the provider calls the functions make: SES v2 SendEmail,
// Secrets Manager GetSecretValue and EventBridge PutEvents. Anything else
// is refused, so a forgotten endpoint fails loudly instead of leaving the
// machine.
type fakeAWS struct {
	mu     sync.Mutex
	emails int
	events int
	other  []string
}

func (f *fakeAWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	target := r.Header.Get("X-Amz-Target")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v2/email/outbound-emails":
		f.emails++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"MessageId":"local-%d"}`, f.emails)
	case target == "secretsmanager.GetSecretValue":
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		fmt.Fprint(w, `{"Name":"ferry/webhook/default","SecretString":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`)
	case target == "AWSEvents.PutEvents":
		f.events++
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		fmt.Fprintf(w, `{"Entries":[{"EventId":"local-%d"}],"FailedEntryCount":0}`, f.events)
	default:
		f.other = append(f.other, r.Method+" "+r.URL.Path+" "+target)
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"UnrecognizedClientException","message":"not served by the lambda-local stand-in"}`)
	}
}

// function is one bootstrap under the emulator.
type function struct {
	name    string
	addr    string
	size    int64
	invokes []time.Duration
	out     *syncBuffer
}

func (f *function) invoke(t *testing.T, payload []byte) []byte {
	t.Helper()
	url := "http://" + f.addr + "/2015-03-31/functions/function/invocations"
	began := time.Now()
	resp, err := http.Post(url, "application/json", bytes.NewReader(payload))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	f.invokes = append(f.invokes, time.Since(began))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s\n%s", f.name, body, f.out.String())
	require.NotContains(t, string(body), `"errorType"`, "%s answered an error: %s\n%s", f.name, body, f.out.String())
	return body
}

// seedRegistry validates the seeded actions like the enqueue function,
// except that it lets a webhook name a loopback address: the drainer in
// Lambda must then refuse it at dial time.
func seedRegistry(t *testing.T) *outbox.Registry {
	t.Helper()
	reg := outbox.NewRegistry()
	secrets, err := webhook.NewStaticSecrets(nil)
	require.NoError(t, err)
	wh, err := webhook.New(webhook.Options{Secrets: secrets, Policy: ssrfguard.Policy{AllowPrivate: true}})
	require.NoError(t, err)
	em, err := email.New(email.Options{Sender: sesv2.NewFromConfig(aws.Config{})})
	require.NoError(t, err)
	eb, err := eventbridge.New(eventbridge.Options{Client: awseventbridge.NewFromConfig(aws.Config{})})
	require.NoError(t, err)
	for _, a := range []outbox.Adapter{wh, em, eb} {
		require.NoError(t, reg.Register(a))
	}
	return reg
}

var initReport = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)

// initDuration reads the emulator's INIT REPORT from its output.
func initDuration(out string) string {
	m := initReport.FindStringSubmatch(out)
	if m == nil {
		return "?"
	}
	return m[1][:min(len(m[1]), strings.Index(m[1]+".", ".")+2)]
}

// sampleActionID is the action id in the events/ samples that name an
// action (get, admit, cancel).
const sampleActionID = "01m8kjt9g0bvpgyzgh00b1"

// rieAccount is the account of every function ARN the Lambda Runtime
// Interface Emulator invokes with (arn:aws:lambda:us-east-1:012345678912:…).
const rieAccount = "012345678912"

func readEvent(t *testing.T, root, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "events", name))
	require.NoError(t, err)
	return raw
}

func TestFunctionsUnderTheEmulator(t *testing.T) {
	rie := os.Getenv("LAMBDA_RIE")
	if rie == "" {
		t.Fatal("LAMBDA_RIE must name the aws-lambda-rie binary (make lambda-local installs it)")
	}
	root := repoRoot(t)
	bin := t.TempDir()

	// Build every function and the ferry command.
	names := []string{"enqueue", "drainer", "reaper", "retention", "sesevents"}
	for _, n := range names {
		build(t, root, "./functions/"+n, filepath.Join(bin, n, "bootstrap"))
	}
	build(t, root, "./cmd/ferry", filepath.Join(bin, "ferry"))

	// The embedded DynamoDB over HTTP, and the table.
	ddbAddr := freeAddr(t)
	ddbOut := &syncBuffer{}
	start(t, os.Environ(), ddbOut, filepath.Join(bin, "ferry"), "dynamodb", "--addr", ddbAddr)
	waitListening(t, ddbAddr)
	ddbURL := "http://" + ddbAddr
	for _, name := range []string{table, apiTable} {
		create := exec.Command(filepath.Join(bin, "ferry"), "table", "create", "--dynamodb-endpoint", ddbURL, "--table", name)
		out, err := create.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}

	fake := &fakeAWS{}
	fakeSrv := httptest.NewServer(fake)
	defer fakeSrv.Close()

	// The functions' environment: everything AWS points at loopback.
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"LOG_LEVEL=debug",
		"AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=lambdalocal",
		"AWS_SECRET_ACCESS_KEY=lambdalocal",
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL=" + fakeSrv.URL,
		"AWS_ENDPOINT_URL_DYNAMODB=" + ddbURL,
		"FERRY_WRITE_MARGIN=20s",
		`FERRY_IAM_WORKSPACES={"arn:aws:iam::123456789012:role/ferry-ops":["default"]}`,
	}

	// Actions the drainer will carry out, enqueued through the engine on
	// the same endpoint: an email (SES stand-in: DONE), an event
	// (EventBridge stand-in: DONE) and a webhook to a loopback address
	// (refused at dial time in Lambda: FAILED, DESTINATION_FORBIDDEN).
	ctx := context.Background()
	reg := seedRegistry(t)
	eng, err := outbox.New(devstack.RemoteDynamoDB(ddbURL), clock.System{}, reg, outbox.Config{Table: table})
	require.NoError(t, err)
	seeded := map[string]string{}
	for kind, payload := range map[string]string{
		"email":       `{"from":"shop@example.com","to":["ann@example.com"],"subject":"Order","text":"payload-secret-email"}`,
		"eventbridge": `{"event_bus":"default","source":"shop","detail_type":"OrderShipped","detail":{"order":"payload-secret-event"}}`,
		"webhook":     `{"url":"http://127.0.0.1:9/hook","body":{"order":"payload-secret-hook"}}`,
	} {
		res, err := eng.Enqueue(ctx, outbox.EnqueueParams{Kind: kind, WorkspaceID: "default", Payload: json.RawMessage(payload)})
		require.NoError(t, err, kind)
		seeded[kind] = res.Action.ID
	}

	funcs := map[string]*function{}
	for _, n := range names {
		f := &function{name: n, addr: freeAddr(t), out: &syncBuffer{}}
		st, err := os.Stat(filepath.Join(bin, n, "bootstrap"))
		require.NoError(t, err)
		f.size = st.Size()
		tbl := table
		if n == "enqueue" {
			tbl = apiTable
		}
		fenv := append(append([]string{}, env...), "AWS_LAMBDA_FUNCTION_NAME=ferry-"+n, "FERRY_TABLE="+tbl)
		start(t, fenv, f.out, rie,
			"--runtime-interface-emulator-address", f.addr,
			"--runtime-api-address", freeAddr(t),
			filepath.Join(bin, n, "bootstrap"))
		waitListening(t, f.addr)
		funcs[n] = f
	}

	t.Run("DrainerSchedule", func(t *testing.T) {
		var resp struct{ Claimed, Ended int }
		require.NoError(t, json.Unmarshal(funcs["drainer"].invoke(t, readEvent(t, root, "eventbridge-schedule.json")), &resp))
		require.GreaterOrEqual(t, resp.Ended, 3, "the seeded actions end")

		for kind, want := range map[string]struct {
			state  outbox.State
			reason outbox.StopReason
		}{
			"email":       {outbox.StateDONE, outbox.StopDone},
			"eventbridge": {outbox.StateDONE, outbox.StopDone},
			"webhook":     {outbox.StateFAILED, outbox.StopDestinationForbidden},
		} {
			a, err := eng.ActionGet(ctx, seeded[kind])
			require.NoError(t, err)
			require.Equal(t, want.state, a.State, kind)
			require.Equal(t, want.reason, a.StopReason, kind)
		}
		fake.mu.Lock()
		require.Equal(t, 1, fake.emails)
		require.Equal(t, 1, fake.events)
		fake.mu.Unlock()
	})

	t.Run("SESEvents", func(t *testing.T) {
		// SES's Delivery and Bounce events of the email the drainer sent,
		// as the configuration set's EventBridge rule hands them over.
		sent, err := eng.ActionGet(ctx, seeded["email"])
		require.NoError(t, err)
		for _, c := range []struct{ event, outcome string }{
			{"ses-delivery.json", "RECORDED"}, {"ses-bounce.json", "RECORDED"}, {"ses-bounce.json", "DUPLICATE"},
		} {
			var ev map[string]any
			require.NoError(t, json.Unmarshal(readEvent(t, root, c.event), &ev))
			mail := ev["detail"].(map[string]any)["mail"].(map[string]any)
			mail["tags"].(map[string]any)[email.ActionIDTag] = []any{email.TagValue(seeded["email"])}
			// About the message the SES stand-in accepted, in the account
			// the emulator gives every function's ARN.
			mail["messageId"] = sent.ReadbackRef
			ev["account"] = rieAccount
			raw, err := json.Marshal(ev)
			require.NoError(t, err)
			var resp struct{ Outcome string }
			require.NoError(t, json.Unmarshal(funcs["sesevents"].invoke(t, raw), &resp))
			require.Equal(t, c.outcome, resp.Outcome, c.event)
		}
		a, err := eng.ActionGet(ctx, seeded["email"])
		require.NoError(t, err)
		require.Equal(t, outbox.StateDONE, a.State, "the action stays as it ended")
		d, err := eng.DeliveryGet(ctx, a)
		require.NoError(t, err)
		require.Equal(t, outbox.DeliveryBounced, d.Status)
		require.Len(t, d.Events, 2)
	})

	t.Run("DrainerStream", func(t *testing.T) {
		var resp struct {
			BatchItemFailures []json.RawMessage `json:"batchItemFailures"`
		}
		require.NoError(t, json.Unmarshal(funcs["drainer"].invoke(t, readEvent(t, root, "dynamodb-stream.json")), &resp))
		require.NotNil(t, resp.BatchItemFailures)
		require.Empty(t, resp.BatchItemFailures)
	})

	t.Run("Enqueue", func(t *testing.T) {
		f := funcs["enqueue"]
		minted := ""
		for _, c := range []struct {
			event  string
			status int
		}{
			{"apigw-healthz.json", 200},
			{"apigw-openapi.json", 200},
			{"apigw-enqueue.json", 201},
			{"apigw-get-action.json", 200},
			{"apigw-list-actions.json", 200},
			{"apigw-admit-action.json", 200},
			{"apigw-cancel-action.json", 200},
			{"apigw-enqueue-batch.json", 201},
			{"apigw-erase-subject.json", 200},
		} {
			var resp struct {
				StatusCode int    `json:"statusCode"`
				Body       string `json:"body"`
			}
			raw := readEvent(t, root, c.event)
			if minted != "" {
				// The samples name the action by a placeholder id: ids are
				// minted per table (design.md §3.10).
				raw = bytes.ReplaceAll(raw, []byte(sampleActionID), []byte(minted))
			}
			require.NoError(t, json.Unmarshal(f.invoke(t, raw), &resp))
			require.Equal(t, c.status, resp.StatusCode, "%s: %s", c.event, resp.Body)
			if c.event == "apigw-enqueue.json" {
				var a struct {
					ID string `json:"id"`
				}
				require.NoError(t, json.Unmarshal([]byte(resp.Body), &a))
				minted = a.ID
			}
		}
		// The table: the sampled action was admitted, cancelled, then
		// erased with its subject; the batch's laned action waits.
		api, err := outbox.New(devstack.RemoteDynamoDB(ddbURL), clock.System{}, seedRegistry(t), outbox.Config{Table: apiTable})
		require.NoError(t, err)
		_, err = api.ActionGet(ctx, minted)
		require.ErrorIs(t, err, outbox.ErrNotFound)
		list, err := api.ActionList(ctx, outbox.ActionListParams{WorkspaceID: "default", State: outbox.StateADMITTED, Limit: 50})
		require.NoError(t, err)
		lanes := map[string]bool{}
		for _, a := range list.Actions {
			lanes[a.LaneKey] = true
		}
		require.True(t, lanes["order-43"], "the batch's action is in the table: %+v", list.Actions)
	})

	t.Run("ReaperAndRetention", func(t *testing.T) {
		for _, n := range []string{"reaper", "retention"} {
			for range 2 {
				var resp map[string]any
				require.NoError(t, json.Unmarshal(funcs[n].invoke(t, readEvent(t, root, "eventbridge-schedule.json")), &resp))
				require.NotEmpty(t, resp, n)
			}
		}
	})

	// The same version in `ferry version`, each function's cold-start line,
	// its EMF lines and /healthz.
	t.Run("VersionEverywhere", func(t *testing.T) {
		out, err := exec.Command(filepath.Join(bin, "ferry"), "version").Output()
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(out), "ferry "+stampedVersion+" ("), "ferry version: %s", out)
		for _, f := range funcs {
			var coldStarts, emf int
			for _, line := range strings.Split(f.out.String(), "\n") {
				var doc map[string]any
				if json.Unmarshal([]byte(line), &doc) != nil {
					continue // the emulator's own lines
				}
				if doc["msg"] == "cold start" {
					require.Equal(t, stampedVersion, doc["version"], "%s: %s", f.name, line)
					require.Equal(t, f.name, doc["function"], line)
					coldStarts++
				}
				if _, ok := doc["_aws"]; ok {
					require.Equal(t, stampedVersion, doc["version"], "%s: %s", f.name, line)
					emf++
				}
			}
			require.Equal(t, 1, coldStarts, "%s: one instance, one cold start", f.name)
			require.NotZero(t, emf, "%s wrote no EMF line", f.name)
		}
		var resp struct {
			Body string `json:"body"`
		}
		require.NoError(t, json.Unmarshal(funcs["enqueue"].invoke(t, readEvent(t, root, "apigw-healthz.json")), &resp))
		var health map[string]any
		require.NoError(t, json.Unmarshal([]byte(resp.Body), &health), resp.Body)
		require.Equal(t, "ok", health["status"], resp.Body)
		require.Equal(t, stampedVersion, health["version"], resp.Body)
	})

	t.Run("LogsHoldNoPayload", func(t *testing.T) {
		for _, f := range funcs {
			logs := f.out.String()
			for _, secret := range []string{"payload-secret-email", "payload-secret-event", "payload-secret-hook", "ann@example.com"} {
				require.NotContains(t, logs, secret, f.name)
			}
		}
		require.Contains(t, funcs["drainer"].out.String(), `"action.id":"`+seeded["email"]+`"`)
		require.Contains(t, funcs["drainer"].out.String(), `"Namespace":"Ferry"`)
		fake.mu.Lock()
		require.Empty(t, fake.other, "calls the stand-in does not serve")
		fake.mu.Unlock()
	})

	// Each function refuses to start on a table that is not a Ferry table,
	// or is of another layout (design.md §3.10), naming it, both versions
	// and the docs; the emulator answers the invocation with the init
	// failure, and nothing is written to the table. Every function meets
	// one of the four refusals (each refusal is met by every function
	// through the same coldstart check: coldstart TestTableCheck).
	t.Run("RefusesOtherLayouts", func(t *testing.T) {
		db := devstack.RemoteDynamoDB(ddbURL)
		marker := func(lv string) map[string]ddbtypes.AttributeValue {
			it := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "M#table"},
				"sk": &ddbtypes.AttributeValueMemberS{Value: "M"}}
			if lv != "" {
				it["lv"] = &ddbtypes.AttributeValueMemberN{Value: lv}
			}
			return it
		}
		for _, c := range []struct {
			fn, table string
			marker    map[string]ddbtypes.AttributeValue // nil: no marker at all
			want      string
		}{
			{"reaper", "plain", nil, "table plain is not a Ferry table"},
			{"enqueue", "newer", marker(fmt.Sprint(outbox.Layout + 1)), fmt.Sprintf("table newer has layout %d, newer than layout %d", outbox.Layout+1, outbox.Layout)},
			{"drainer", "older", marker(fmt.Sprint(outbox.Layout - 1)), fmt.Sprintf("table older has layout %d, older than layout %d", outbox.Layout-1, outbox.Layout)},
			{"retention", "unversioned", marker(""), "table unversioned has no layout version"},
			{"sesevents", "plain2", nil, "table plain2 is not a Ferry table"},
		} {
			_, err := db.CreateTable(ctx, outbox.TableInput(c.table))
			require.NoError(t, err)
			require.NoError(t, dynamodb.NewTableExistsWaiter(db).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(c.table)}, time.Minute))
			if c.marker != nil {
				_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(c.table), Item: c.marker})
				require.NoError(t, err)
			}
			before, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(c.table)})
			require.NoError(t, err)
			out := &syncBuffer{}
			addr := freeAddr(t)
			fenv := append(append([]string{}, env...), "AWS_LAMBDA_FUNCTION_NAME=ferry-"+c.fn, "FERRY_TABLE="+c.table)
			start(t, fenv, out, rie, "--runtime-interface-emulator-address", addr, "--runtime-api-address", freeAddr(t),
				filepath.Join(bin, c.fn, "bootstrap"))
			waitListening(t, addr)
			name := map[string]string{"enqueue": "apigw-healthz.json", "drainer": "dynamodb-stream.json", "sesevents": "ses-delivery.json"}[c.fn]
			event := readEvent(t, root, cmp.Or(name, "eventbridge-schedule.json"))
			resp, err := http.Post("http://"+addr+"/2015-03-31/functions/function/invocations", "application/json", bytes.NewReader(event))
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			// The bootstrap exits during its init: no answer of the handler.
			require.NotContains(t, string(body), `"statusCode":200`, "%s on %s: %s", c.fn, c.table, body)
			require.NotContains(t, string(body), `"uncertain"`, "%s on %s: %s", c.fn, c.table, body)
			require.Eventually(t, func() bool {
				return strings.Contains(out.String(), c.fn+": refusing to start") && strings.Contains(out.String(), c.want)
			}, 5*time.Second, 20*time.Millisecond, "%s on %s: %s", c.fn, c.table, out.String())
			require.Contains(t, out.String(), outbox.LayoutDocs)
			after, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(c.table)})
			require.NoError(t, err)
			require.Equal(t, before.Items, after.Items, "nothing written to %s", c.table)
		}
	})

	// The figures: sizes, first (cold) and later (warm) invocations.
	var b strings.Builder
	fmt.Fprintf(&b, "\nLambda bootstraps under the emulator (%s/%s):\n", runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "  %-10s %10s %12s %12s %12s\n", "function", "size MB", "cold ms", "init ms", "warm ms")
	for _, n := range names {
		f := funcs[n]
		if len(f.invokes) < 2 {
			continue
		}
		fmt.Fprintf(&b, "  %-10s %10.1f %12.1f %12s %12.1f\n", n, float64(f.size)/1e6,
			float64(f.invokes[0].Microseconds())/1e3, initDuration(f.out.String()), float64(f.invokes[1].Microseconds())/1e3)
	}
	fmt.Fprintf(&b, "  cold: the first invocation as the caller sees it (process start, init, handler);\n")
	fmt.Fprintf(&b, "  init: the emulator's INIT REPORT (runtime start to its first poll for work)\n")
	fmt.Print(b.String())
}
