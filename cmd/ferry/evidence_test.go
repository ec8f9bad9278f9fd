package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/adapters/email"
	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/handlers"
	"github.com/ferryhq/ferry/internal/operator"
	"github.com/ferryhq/ferry/internal/telemetry"
)

// get reads one action through ferry dev's API.
func (d *devTable) get(t *testing.T, id string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, d.api+"/v1/actions/"+id, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer dev")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var v map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	return v
}

// getStatus is the HTTP status of GET /v1/actions/{id}.
func (d *devTable) getStatus(t *testing.T, id string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, d.api+"/v1/actions/"+id, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer dev")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestSESDeliveryAndBounceShowUpThroughTheAPIAndTheCLI: an email sent by
// ferry dev, then SES's Delivery and Bounce events of it (events/ samples
// with its ferry_action_id) through the sesevents handler on the same
// table: GET /v1/actions/{id} and ferry actions get show them as its
// delivery, and the action stays as it ended.
func TestSESDeliveryAndBounceShowUpThroughTheAPIAndTheCLI(t *testing.T) {
	d := startDevTable(t)
	id := d.enqueue(t, []map[string]any{{"kind": "email",
		"payload": map[string]any{"from": "shop@example.com", "to": []string{"ann@example.com"}, "subject": "s", "text": "t"}}})[0]
	var ended map[string]any
	for tries := 0; ; tries++ {
		require.Less(t, tries, 300, "ferry dev did not send the email")
		if ended = d.get(t, id); ended["state"] == "DONE" {
			break
		}
		waitABit()
	}
	require.NotContains(t, ended, "delivery", "no evidence yet")

	// The sesevents handler over the same table, as the function wires it.
	ctx := context.Background()
	target := operator.Target{Table: "ferry", Partitions: 4, Endpoint: d.endpoint, Retention: 720 * 3600e9}
	db, err := operator.Client(ctx, target)
	require.NoError(t, err)
	s, err := operator.NewSession(ctx, db, clock.System{}, target)
	require.NoError(t, err)
	obs := telemetry.NewObserver(telemetry.NewMetrics(io.Discard, clock.System{}, nil), slog.New(slog.DiscardHandler))
	ses := lambda.NewHandler((&handlers.SESEventsHandler{Engine: s.Engine, Obs: obs, Log: obs.Log}).Invoke)
	send := func(name string) {
		raw, err := os.ReadFile(filepath.Join("..", "..", "events", name))
		require.NoError(t, err)
		var ev map[string]any
		require.NoError(t, json.Unmarshal(raw, &ev))
		mail := ev["detail"].(map[string]any)["mail"].(map[string]any)
		mail["tags"].(map[string]any)[email.ActionIDTag] = []any{email.TagValue(id)}
		mail["messageId"] = ended["readback_ref"] // about the message the sink wrote
		raw, err = json.Marshal(ev)
		require.NoError(t, err)
		out, err := ses.Invoke(ctx, raw)
		require.NoError(t, err)
		require.JSONEq(t, `{"outcome":"RECORDED","status":"`+map[string]string{"ses-delivery.json": "DELIVERED", "ses-bounce.json": "BOUNCED"}[name]+`"}`, string(out))
	}

	send("ses-delivery.json")
	got := d.get(t, id)
	require.Equal(t, map[string]any{"status": "DELIVERED", "at": "2026-12-01T10:00:01.456Z", "detail": "delivered to 1 recipient in 1336 ms"}, got["delivery"])

	send("ses-bounce.json")
	got = d.get(t, id)
	require.Equal(t, map[string]any{"status": "BOUNCED", "at": "2026-12-01T10:00:02.789Z", "detail": "Permanent bounce (General) of 1 recipient, status 5.1.1"}, got["delivery"])
	delete(got, "delivery")
	require.Equal(t, ended, got, "the action stays as it ended")

	cli := d.json(t, "actions", "get", id)
	del := cli["delivery"].(map[string]any)
	require.Equal(t, "BOUNCED", del["status"])
	require.Len(t, del["events"], 2, "the delivery and the bounce")
	out, code := d.ferry(t, "", "actions", "get", id)
	require.Equal(t, operator.ExitOK, code, out)
	require.Contains(t, out, "BOUNCED at 2026-12-01T10:00:02Z (Permanent bounce (General) of 1 recipient, status 5.1.1)")
	require.Contains(t, out, "DELIVERED delivered to 1 recipient in 1336 ms")
	require.False(t, bytes.Contains([]byte(out), []byte("ann@example.com")), "no address")
}
