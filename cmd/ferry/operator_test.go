package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
	"github.com/ferryhq/ferry/internal/devstack"
	"github.com/ferryhq/ferry/internal/operator"
)

// devTable is `ferry dynamodb` on a loopback port with `ferry dev` running
// against it (--dynamodb-endpoint), a webhook receiver, and the operator's
// commands pointed at the same endpoint.
type devTable struct {
	endpoint string // the embedded DynamoDB's URL
	api      string // ferry dev's API
	hooks    string // the receiver: /ok answers 200, /gone 410, /retry 500
}

func startDevTable(t *testing.T) *devTable {
	t.Helper()
	dbCtx, stopDB := context.WithCancel(context.Background())
	var lc net.ListenConfig
	ln, err := lc.Listen(dbCtx, "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- ddbhttp.Serve(dbCtx, ln, ddblocal.New(), nil) }()
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch {
		case strings.HasPrefix(r.URL.Path, "/gone"):
			w.WriteHeader(http.StatusGone)
		case strings.HasPrefix(r.URL.Path, "/retry"):
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	d := &devTable{endpoint: "http://" + ln.Addr().String(), hooks: recv.URL}
	ctx, stopDev := context.WithCancel(context.Background())
	stack, err := devstack.Start(ctx, devstack.Config{
		Addr: "127.0.0.1:0", DynamoDBEndpoint: d.endpoint, AllowPrivateWebhooks: true, MailDir: t.TempDir(),
		RetryBase: 10 * time.Minute, Poll: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	d.api = stack.URL()
	ran := make(chan error, 1)
	go func() { ran <- stack.Run(ctx) }()
	t.Cleanup(func() {
		stopDev()
		require.NoError(t, <-ran)
		stopDB()
		require.NoError(t, <-served)
		recv.Close()
	})
	return d
}

// enqueue sends actions through ferry dev's API, 25 to a batch.
func (d *devTable) enqueue(t *testing.T, actions []map[string]any) []string {
	t.Helper()
	var ids []string
	for len(actions) > 0 {
		n := min(len(actions), 25)
		body, _ := json.Marshal(map[string]any{"actions": actions[:n]})
		req, err := http.NewRequest(http.MethodPost, d.api+"/v1/actions:batch", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer dev")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var out struct {
			Actions []struct {
				ID string `json:"id"`
			} `json:"actions"`
		}
		require.Equal(t, http.StatusCreated, resp.StatusCode)
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		resp.Body.Close()
		for _, a := range out.Actions {
			ids = append(ids, a.ID)
		}
		actions = actions[n:]
	}
	return ids
}

// ferry runs the command line against the dev table and returns its
// output and exit code.
func (d *devTable) ferry(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(stdin))
	args = append(args, "--dynamodb-endpoint", d.endpoint)
	if !slices.Contains(args, "--partitions") {
		args = append(args, "--partitions", "4")
	}
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err != nil {
		errOut.WriteString(err.Error())
	}
	return out.String() + errOut.String(), operator.ExitCode(err)
}

// json runs a command with -o json and decodes its answer.
func (d *devTable) json(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out, code := d.ferry(t, "", append(args, "-o", "json")...)
	require.Equal(t, operator.ExitOK, code, out)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	if u, ok := v["dynamodb"].(map[string]any); ok {
		// The figures of the closing note: go test -v -run
		// TestOperatorCommandsAgainstFerryDev ./cmd/ferry | grep units
		t.Logf("ferry %s: %v calls, %v read units, %v write units", strings.Join(args, " "), u["calls"], u["read_units"], u["write_units"])
	}
	return v
}

func num(v any) int { return int(v.(float64)) }

// The workload of TestOperatorCommandsAgainstFerryDev: webhooks that end
// DONE, FAILED (410) or wait for a retry (500, ten minutes' backoff),
// proposals, and emails to the mail sink; some in lanes, some of subjects.
// opActions is how many: a few thousand, or one thousand under the race
// detector (which slows the dev stack's drain about tenfold).
var opActions = map[bool]int{false: 2500, true: 1000}[raceEnabled]

func opWorkload(hooks string) []map[string]any {
	var out []map[string]any
	for i := range opActions {
		a := map[string]any{"kind": "webhook", "payload": map[string]any{"url": hooks + "/ok", "body": map[string]any{"i": i}}}
		switch i % 10 {
		case 1:
			a["payload"] = map[string]any{"url": hooks + "/gone"}
		case 2:
			a["payload"] = map[string]any{"url": hooks + "/retry"}
		case 3:
			a["propose"] = true
		case 4:
			a = map[string]any{"kind": "email", "payload": map[string]any{"from": "shop@example.com", "to": []string{"ann@example.com"}, "subject": "s", "text": "t"}}
		}
		if i%7 == 0 {
			a["subject_id"] = fmt.Sprintf("acct-%d", i%3)
		}
		if i%5 == 0 {
			a["lane_key"] = fmt.Sprintf("order-%d", i%20)
		}
		out = append(out, a)
	}
	return out
}

// TestOperatorCommandsAgainstFerryDev is the operator's commands against
// `ferry dev --dynamodb-endpoint` (a `ferry dynamodb` on a loopback port)
// holding a few thousand actions in several states.
func TestOperatorCommandsAgainstFerryDev(t *testing.T) {
	d := startDevTable(t)
	ids := d.enqueue(t, opWorkload(d.hooks))
	require.Len(t, ids, opActions)

	// ferry status: wait until ferry dev drained what is due.
	var st map[string]any
	for tries := 0; ; tries++ {
		require.Less(t, tries, 600, "ferry dev did not drain")
		st = d.json(t, "status")
		tot := st["total"].(map[string]any)
		if num(tot["due"]) == 0 && num(tot["claimed"]) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	tot := st["total"].(map[string]any)
	tenth := opActions / 10
	ended := tot["ended"].(map[string]any)
	// /ok webhooks and emails end DONE, /gone FAILED; /retry waits.
	require.Equal(t, 7*tenth, num(ended["DONE"]), "%v", tot)
	require.Equal(t, tenth, num(ended["FAILED"]))
	require.Equal(t, tenth, num(tot["waiting"]))
	require.Len(t, st["partitions"], 4)
	require.False(t, tot["truncated"].(bool))
	usage := st["dynamodb"].(map[string]any)
	require.Greater(t, usage["read_units"].(float64), 0.0)
	require.Zero(t, usage["write_units"].(float64), "status only reads")
	require.LessOrEqual(t, num(usage["calls"]), 2+4*8, "a bounded number of calls")

	// ferry actions list: every filter, paged.
	count := func(args ...string) int {
		n := 0
		cursor := ""
		for pages := 0; ; pages++ {
			require.Less(t, pages, 100)
			a := append([]string{"actions", "list", "--limit", "300"}, args...)
			if cursor != "" {
				a = append(a, "--cursor", cursor)
			}
			v := d.json(t, a...)
			n += len(v["actions"].([]any))
			if v["next_cursor"] == nil {
				return n
			}
			cursor = v["next_cursor"].(string)
		}
	}
	require.Equal(t, tenth, count("--state", "PROPOSED"))
	require.Equal(t, tenth, count("--state", "FAILED", "--workspace", "default"))
	require.Equal(t, tenth, count("--kind", "email"))
	subjects := 0
	for i := range opActions {
		if i%7 == 0 && i%3 == 1 {
			subjects++
		}
	}
	require.Equal(t, subjects, count("--subject", "acct-1", "--workspace", "default"))
	lane := 0
	for i := range opActions {
		if i%5 == 0 && i%20 == 5 {
			lane++
		}
	}
	require.Equal(t, lane, count("--lane", "order-5", "--workspace", "default"))
	out, code := d.ferry(t, "", "actions", "list", "--lane", "order-5")
	require.Equal(t, operator.ExitUsage, code, out)
	out, code = d.ferry(t, "", "actions", "list", "--state", "DONE", "--limit", "5")
	require.Equal(t, operator.ExitOK, code, out)
	require.Contains(t, out, "more: --cursor ")
	require.Contains(t, out, "read units")

	// ferry actions get: the action, its lane neighbours, what to enqueue
	// again once ended.
	g := d.json(t, "actions", "get", ids[5])
	require.Equal(t, ids[5], g["action"].(map[string]any)["id"])
	require.Equal(t, "order-5", g["action"].(map[string]any)["lane_key"])
	require.Nil(t, g["lane"].(map[string]any)["prev"], "the first of its lane")
	require.Equal(t, ids[25], g["lane"].(map[string]any)["next"].(map[string]any)["id"])
	failed := d.json(t, "actions", "get", ids[1])
	require.Equal(t, "FAILED", failed["action"].(map[string]any)["state"])
	require.Equal(t, "webhook", failed["enqueue_again"].(map[string]any)["kind"])
	out, code = d.ferry(t, "", "actions", "get", ids[1])
	require.Equal(t, operator.ExitOK, code)
	require.Contains(t, out, "An ended action never changes: there is no retry")
	out, code = d.ferry(t, "", "actions", "get", "3-999999")
	require.Equal(t, operator.ExitNotFound, code, out)

	// ferry actions cancel / admit: confirmation, refusals, exit codes.
	out, code = d.ferry(t, "", "actions", "cancel", ids[3])
	require.Equal(t, operator.ExitNotConfirmed, code, "no terminal and no --yes: %s", out)
	c := d.json(t, "actions", "cancel", ids[3], "--yes")
	require.Equal(t, "CANCELLED", c["action"].(map[string]any)["state"])
	require.Equal(t, "CANCELLED", d.get(t, ids[3])["state"], "the API sees the cancel")
	// An ADMITTED action waiting out a retry's backoff (a stuck lane
	// head's case) can be cancelled too; it never runs again.
	require.Equal(t, "ADMITTED", d.get(t, ids[12])["state"])
	// Its attempts as far as the table keeps them: the latest one's count,
	// and when the next is due (the 500's ten-minute backoff).
	w := d.json(t, "actions", "get", ids[12])["action"].(map[string]any)
	require.Equal(t, 1, num(w["attempt"]))
	next, err := time.Parse(time.RFC3339, w["next_attempt_at"].(string))
	require.NoError(t, err)
	require.WithinRange(t, next, time.Now().Add(time.Minute), time.Now().Add(11*time.Minute), "the backoff")
	out, code = d.ferry(t, "", "actions", "get", ids[12])
	require.Equal(t, operator.ExitOK, code, out)
	require.Contains(t, out, "next attempt")
	require.Contains(t, out, "The table keeps each action's latest attempt only")
	c = d.json(t, "actions", "cancel", ids[12], "--yes")
	require.Equal(t, "CANCELLED", c["action"].(map[string]any)["state"])
	require.Equal(t, "CANCELLED", d.get(t, ids[12])["state"])
	out, code = d.ferry(t, "", "actions", "cancel", ids[0], "--yes")
	require.Equal(t, operator.ExitRefused, code, out)
	require.Contains(t, out, "ended DONE")
	out, code = d.ferry(t, "", "actions", "retry", ids[1])
	require.Equal(t, operator.ExitRefused, code)
	require.Contains(t, out, "enqueues a new action: kind webhook")
	a := d.json(t, "actions", "admit", ids[13], "--yes")
	require.Equal(t, "ADMITTED", a["action"].(map[string]any)["state"])
	// Admitted means due now: ferry dev carries it out.
	for tries := 0; d.get(t, ids[13])["state"] != "DONE"; tries++ {
		require.Less(t, tries, 300, "ferry dev did not run the admitted proposal")
		waitABit()
	}
	out, code = d.ferry(t, "", "actions", "admit", ids[2], "--yes")
	require.Equal(t, operator.ExitRefused, code, "only a proposal can be admitted: %s", out)

	// ferry subjects erase: a dry run counts, then it erases, in every
	// workspace.
	dry := d.json(t, "subjects", "erase", "acct-2", "--dry-run")
	want := 0
	for i := range opActions {
		if i%7 == 0 && i%3 == 2 {
			want++
		}
	}
	require.Equal(t, want, num(dry["found"]))
	require.Nil(t, dry["erased"])
	require.Equal(t, want, count("--subject", "acct-2", "--workspace", "default"), "a dry run erases nothing")
	out, code = d.ferry(t, "", "subjects", "erase", "acct-2")
	require.Equal(t, operator.ExitNotConfirmed, code, out)
	er := d.json(t, "subjects", "erase", "acct-2", "--yes")
	require.Equal(t, want, num(er["erased"]))
	require.Zero(t, count("--subject", "acct-2", "--workspace", "default"))
	for i := range opActions {
		if i%7 == 0 && i%3 == 2 {
			require.Equal(t, http.StatusNotFound, d.getStatus(t, ids[i]), "erased: %s", ids[i])
		}
	}
	require.Equal(t, http.StatusOK, d.getStatus(t, ids[0]), "another subject's action stays")

	// ferry status again: the cancels, the admitted proposal and the
	// erasure show in its counts.
	after := d.json(t, "status")["total"].(map[string]any)
	erased := map[string]int{}
	for i := range opActions {
		if i%7 == 0 && i%3 == 2 {
			erased[[]string{"DONE", "FAILED", "waiting", "PROPOSED", "DONE", "DONE", "DONE", "DONE", "DONE", "DONE"}[i%10]]++
		}
	}
	t.Logf("status after: %v (erased by state before: %v)", after, erased)
	ended = after["ended"].(map[string]any)
	require.Equal(t, 7*tenth+1-erased["DONE"], num(ended["DONE"]), "the admitted proposal ended DONE; erased actions are gone")
	require.Equal(t, tenth-erased["FAILED"], num(ended["FAILED"]))
	require.Equal(t, 2, num(ended["CANCELLED"]))
	require.Equal(t, tenth-1-erased["waiting"], num(after["waiting"]), "the cancelled retry no longer waits")
	require.Zero(t, num(after["due"]))
	out, code = d.ferry(t, "", "status")
	require.Equal(t, operator.ExitOK, code, out)
	for _, col := range []string{"DUE", "CLAIMED", "LEASE-EXPIRED", "WAITING", "STUCK-HEADS", "OLDEST-DUE", "IN-FLIGHT", "DONE", "FAILED", "CANCELLED", "total", "read units"} {
		require.Contains(t, out, col)
	}

	// Usage and a missing table.
	out, code = d.ferry(t, "", "status", "--bogus")
	require.Equal(t, operator.ExitUsage, code, out)
	out, code = d.ferry(t, "", "status", "--table", "nope")
	require.Equal(t, operator.ExitNotFound, code, out)
	require.Contains(t, out, `table "nope" not found`)
	// The table's partition map records its count (ADR 0011): a wrong
	// --partitions no longer matters, status covers every partition.
	require.Len(t, d.json(t, "status", "--partitions", "2")["partitions"], 4)
}

// waitABit paces a poll of ferry dev, which drains on its own.
func waitABit() { time.Sleep(50 * time.Millisecond) }
