package devstack

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
)

// TestHeaderInjectionNeverReachesTheMailSink is issue 13's reproduction: a
// configuration_set holding "\r\nBcc: …" was accepted (201) and wrote a
// real Bcc: header into the mail sink's .eml. It now answers 422 naming
// the field, and nothing is written: no action, no message.
func TestHeaderInjectionNeverReachesTheMailSink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startStack(t, Config{MailDir: dir})
	status, body := b.do(t, http.MethodPost, "/v1/actions",
		`{"kind":"email","payload":{"from":"shop@example.com","to":["ann@example.com"],"subject":"Your order","text":"t",`+
			`"configuration_set":"cs\r\nBcc: victim@example.net"}}`)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", body)
	e := body["error"].(map[string]any)
	require.Equal(t, "invalid_payload", e["code"])
	require.Equal(t, "payload.configuration_set", e["field"])

	status, list := b.do(t, http.MethodGet, "/v1/actions", "")
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, list["actions"])
	b.stop(t)
	files, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, files)
}

// TestPayloadMessagesArePlainEnglish is issue 13's example with the real
// adapters: a webhook payload whose headers are a number answered
// "json: cannot unmarshal number into Go struct field Payload.headers of
// type map[string]string". Every kind's payload errors name the field and
// say what it must be.
func TestPayloadMessagesArePlainEnglish(t *testing.T) {
	t.Parallel()
	b := startStack(t, Config{})
	for _, tc := range []struct{ payload, field, message string }{
		{`{"kind":"webhook","payload":{"url":"https://example.com/h","headers":1}}`, "payload.headers",
			"payload.headers: must be an object of strings, not a number"},
		{`{"kind":"webhook","payload":{"url":"https://example.com/h","headers":{"X-A":true}}}`, "payload.headers",
			"payload.headers: every value must be a string, not a boolean"},
		{`{"kind":"email","payload":{"from":"a@example.com","to":"b@example.com","subject":"s","text":"t"}}`, "payload.to",
			"payload.to: must be an array of strings, not a string"},
		{`{"kind":"email","payload":{"from":"a@example.com","to":["b@example.com"],"subject":"s","text":"t","attachments":[]}}`, "payload.attachments",
			"payload.attachments: unknown field"},
	} {
		status, body := b.do(t, http.MethodPost, "/v1/actions", tc.payload)
		require.Equal(t, http.StatusUnprocessableEntity, status, "%v", body)
		e := body["error"].(map[string]any)
		require.Equal(t, tc.field, e["field"])
		require.Equal(t, tc.message, e["message"])
	}
}

// TestSlowClientsAreCut: a client that stops halfway through its headers
// or its body is cut off after the read timeouts (here injected short),
// every one of many at once; a body that does not arrive in time answers
// 408 if the client still listens. Before issue 13 there was no body
// timeout: 50 half-sent bodies stayed open 26 s and more.
func TestSlowClientsAreCut(t *testing.T) {
	t.Parallel()
	b := startStack(t, Config{ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 300 * time.Millisecond})
	addr := strings.TrimPrefix(b.stack.URL(), "http://")
	halfHeaders := "POST /v1/actions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer dev\r\n"
	halfBody := halfHeaders + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"kind\":"
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			conn, err := net.Dial("tcp", addr)
			if !assert.NoError(t, err) {
				return
			}
			defer conn.Close()
			sent := halfHeaders
			if i%2 == 1 {
				sent = halfBody
			}
			_, err = conn.Write([]byte(sent))
			assert.NoError(t, err)
			// The server must end the exchange; this deadline only keeps a
			// broken server from hanging the test.
			assert.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
			answer, err := io.ReadAll(conn)
			assert.NoError(t, err, "the server closed the connection (not the client's deadline)")
			if i%2 == 1 {
				assert.Contains(t, string(answer), "HTTP/1.1 408 ", "a late body answers 408")
				assert.Contains(t, string(answer), `"code":"request_timeout"`)
			}
		})
	}
	wg.Wait()
}

// serveDynamoDB serves a fresh embedded DynamoDB over HTTP on ln (as
// `ferry dynamodb` does, in memory) until the returned stop is called.
func serveDynamoDB(t *testing.T, ln net.Listener) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ddbhttp.Serve(ctx, ln, ddblocal.New(), nil) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestHealthTellsTheTruthAndTheStackRecovers is issue 13's reproduction:
// ferry dev --dynamodb-endpoint at a `ferry dynamodb` that is killed and
// restarted. /healthz answered 200 while DynamoDB was gone (every API call
// answered 500), and nothing recovered without a restart. Now /healthz
// answers 503 with a reason while DynamoDB is gone, a status line says so,
// and when DynamoDB is back — empty, as an in-memory `ferry dynamodb` comes
// back — the stack creates the table again, says so, and serves again.
func TestHealthTellsTheTruthAndTheStackRecovers(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	stop := serveDynamoDB(t, ln)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer rcv.Close()
	out := &syncWriter{w: &bytes.Buffer{}}
	b := startStack(t, Config{DynamoDBEndpoint: "http://" + addr, AllowPrivateWebhooks: true, Stdout: out,
		HealthEvery: 50 * time.Millisecond, HealthTTL: time.Nanosecond})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	health := func() (int, map[string]any) { return b.do(t, http.MethodGet, "/healthz", "") }

	status, body := health()
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, "reachable", body["dynamodb"])

	stop() // ferry dynamodb is killed
	status, body = health()
	require.Equal(t, http.StatusServiceUnavailable, status, "%v", body)
	require.Equal(t, "unavailable", body["status"])
	require.NotEmpty(t, body["reason"])
	status, body = b.do(t, http.MethodGet, "/v1/actions", "")
	require.Equal(t, http.StatusServiceUnavailable, status, "an API call says DynamoDB cannot be used: %v", body)
	require.Equal(t, "unavailable", body["error"].(map[string]any)["code"])
	printed := func(s string) bool {
		out.mu.Lock()
		defer out.mu.Unlock()
		return strings.Contains(out.w.(*bytes.Buffer).String(), s)
	}
	for n := b.stack.HealthChecks(); !printed("DynamoDB unreachable (http://" + addr + ")"); {
		n = b.stack.WaitHealthChecks(ctx, n)
		require.NoError(t, ctx.Err(), "no status line says DynamoDB is unreachable")
	}
	// In plain words (issue 28 item 13: it printed the SDK's chain, or
	// its retry quota's text).
	out.mu.Lock()
	require.Regexp(t, `DynamoDB unreachable \(http://`+regexp.QuoteMeta(addr)+`\): (cannot connect \(connection refused\)|DynamoDB did not answer in time); /healthz answers 503`,
		out.w.(*bytes.Buffer).String())
	require.NotRegexp(t, `operation error|retry quota|StatusCode|RequestID`, out.w.(*bytes.Buffer).String())
	out.mu.Unlock()

	ln, err = net.Listen("tcp", addr) // ferry dynamodb again, in memory: empty
	require.NoError(t, err)
	serveDynamoDB(t, ln)
	for n := b.stack.HealthChecks(); !printed(`had no table "ferry": created it again`); {
		n = b.stack.WaitHealthChecks(ctx, n)
		require.NoError(t, ctx.Err(), "the table was not created again")
	}
	status, body = health()
	require.Equal(t, http.StatusOK, status, "%v", body)

	status, a := b.do(t, http.MethodPost, "/v1/actions", `{"kind":"webhook","payload":{"url":"`+rcv.URL+`/hook","body":{}}}`)
	require.Equal(t, http.StatusCreated, status, "%v", a)
	ended := b.awaitEnded(t, a["id"].(string), 200)
	require.Equal(t, "DONE", ended["state"], "the stack works again without a restart")
}

// TestForgedListCursorIsA400 is issue 13, finding 7 as it was found: a
// list cursor made by hand ({"pk":"P#1"} in base64) answered 500, because
// cursors were the table's keys, unsigned. Cursors are sealed now: a forged
// one answers 400 on field cursor, and a real one still pages.
func TestForgedListCursorIsA400(t *testing.T) {
	t.Parallel()
	b := startStack(t, Config{})
	for range 3 {
		status, body := b.do(t, http.MethodPost, "/v1/actions", `{"kind":"webhook","propose":true,"payload":{"url":"https://example.com/h"}}`)
		require.Equal(t, http.StatusCreated, status, "%v", body)
	}
	forged := base64.RawURLEncoding.EncodeToString([]byte(`{"pk":"P#1"}`))
	status, body := b.do(t, http.MethodGet, "/v1/actions?cursor="+forged, "")
	require.Equal(t, http.StatusBadRequest, status, "%v", body)
	require.Equal(t, "cursor", body["error"].(map[string]any)["field"])

	status, body = b.do(t, http.MethodGet, "/v1/actions?limit=2", "")
	require.Equal(t, http.StatusOK, status, "%v", body)
	next, _ := body["next_cursor"].(string)
	require.NotEmpty(t, next)
	status, body = b.do(t, http.MethodGet, "/v1/actions?limit=2&cursor="+next, "")
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Len(t, body["actions"], 1)
}
