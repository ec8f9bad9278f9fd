package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/telemetry"
)

type devBundle struct {
	stack  *Stack
	logs   *bytes.Buffer
	cancel context.CancelFunc
	done   chan error
}

// startStack runs a stack on a loopback port with its logs captured.
func startStack(t *testing.T, cfg Config) *devBundle {
	t.Helper()
	logs := &bytes.Buffer{}
	w := telemetry.NewLockedWriter(logs)
	cfg.Addr = "127.0.0.1:0"
	cfg.Logger = telemetry.NewLogger(w, slog.LevelDebug)
	cfg.MetricsOut = w
	if cfg.MailDir == "" {
		cfg.MailDir = t.TempDir()
	}
	if cfg.Poll == 0 {
		cfg.Poll = 20 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	stack, err := Start(ctx, cfg)
	require.NoError(t, err)
	b := &devBundle{stack: stack, logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { b.done <- stack.Run(ctx) }()
	t.Cleanup(func() { b.stop(t) })
	return b
}

func (b *devBundle) stop(t *testing.T) {
	if b.cancel == nil {
		return
	}
	b.cancel()
	b.cancel = nil
	select {
	case err := <-b.done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the stack did not stop")
	}
}

func (b *devBundle) do(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, b.stack.URL()+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer dev")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out), "body %s", raw)
	return resp.StatusCode, out
}

// awaitState steps the drainer pass by pass (at most maxPasses) until the
// action reaches one of the ended states, and returns the action.
func (b *devBundle) awaitEnded(t *testing.T, id string, maxPasses int) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen := b.stack.DrainPasses()
	for range maxPasses {
		status, a := b.do(t, http.MethodGet, "/v1/actions/"+id, "")
		require.Equal(t, http.StatusOK, status)
		switch a["state"] {
		case "DONE", "FAILED", "UNCERTAIN", "CANCELLED":
			return a
		}
		seen = b.stack.WaitDrainPasses(ctx, seen)
		require.NoError(t, ctx.Err(), "the drainer made no pass")
	}
	t.Fatalf("action %s did not end within %d drain passes", id, maxPasses)
	return nil
}

type receiver struct {
	mu     sync.Mutex
	bodies []string
	ids    []string
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, string(body))
	r.ids = append(r.ids, req.Header.Get("webhook-id"))
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func TestDevStack(t *testing.T) {
	t.Parallel()

	t.Run("WebhookToLocalReceiverReachesDone", func(t *testing.T) {
		t.Parallel()
		rcv := &receiver{}
		srv := httptest.NewServer(rcv)
		defer srv.Close()
		b := startStack(t, Config{AllowPrivateWebhooks: true})

		status, a := b.do(t, http.MethodPost, "/v1/actions",
			`{"kind":"webhook","payload":{"url":"`+srv.URL+`/hook","body":{"order":"payload-value-4711"}}}`)
		require.Equal(t, http.StatusCreated, status, "%v", a)
		id := a["id"].(string)

		ended := b.awaitEnded(t, id, 200)
		require.Equal(t, "DONE", ended["state"], "%v\nlogs:\n%s", ended, b.logs.String())
		require.EqualValues(t, 1, ended["attempt"])
		require.NotContains(t, ended, "payload")

		rcv.mu.Lock()
		require.Equal(t, []string{`{"order":"payload-value-4711"}`}, rcv.bodies)
		require.Equal(t, []string{id}, rcv.ids)
		rcv.mu.Unlock()

		b.stop(t)
		require.Contains(t, b.logs.String(), `"action.id":"`+id+`"`)
		require.NotContains(t, b.logs.String(), "payload-value-4711")
	})

	t.Run("EmailLandsInTheMailSink", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		b := startStack(t, Config{MailDir: dir})
		status, a := b.do(t, http.MethodPost, "/v1/actions",
			`{"kind":"email","payload":{"from":"shop@example.com","to":["ann@example.com"],"subject":"Your order","text":"payload-text-0815"}}`)
		require.Equal(t, http.StatusCreated, status, "%v", a)
		ended := b.awaitEnded(t, a["id"].(string), 200)
		require.Equal(t, "DONE", ended["state"], "%v", ended)

		files, err := filepath.Glob(filepath.Join(dir, "*.eml"))
		require.NoError(t, err)
		require.Len(t, files, 1)
		raw, err := os.ReadFile(files[0])
		require.NoError(t, err)
		require.Contains(t, string(raw), "payload-text-0815")
		b.stop(t)
		require.NotContains(t, b.logs.String(), "payload-text-0815")
		require.NotContains(t, b.logs.String(), "ann@example.com")
	})

	t.Run("StopFinishesTheAttemptInFlight", func(t *testing.T) {
		t.Parallel()
		arrived := make(chan struct{})
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(arrived)
			<-release
			w.WriteHeader(http.StatusOK)
		}))
		defer srv.Close()
		b := startStack(t, Config{AllowPrivateWebhooks: true})
		status, a := b.do(t, http.MethodPost, "/v1/actions",
			`{"kind":"webhook","payload":{"url":"`+srv.URL+`/slow","body":{}}}`)
		require.Equal(t, http.StatusCreated, status, "%v", a)
		<-arrived // the provider call is in flight

		// SIGINT/SIGTERM cancel the context: Run must wait for the call.
		b.cancel()
		b.cancel = nil
		select {
		case err := <-b.done:
			t.Fatalf("Run returned (%v) while an attempt was in its provider call", err)
		default:
		}
		close(release)
		require.NoError(t, <-b.done)

		got, err := b.stack.Engine().ActionGet(context.Background(), a["id"].(string))
		require.NoError(t, err)
		require.Equal(t, "DONE", string(got.State))
	})

	t.Run("ChangeFeedWakesTheDrainerOnAdmit", func(t *testing.T) {
		t.Parallel()
		rcv := &receiver{}
		srv := httptest.NewServer(rcv)
		defer srv.Close()
		// No poll in the test's lifetime: only a wake-up can drain.
		b := startStack(t, Config{AllowPrivateWebhooks: true, Poll: time.Hour})
		status, a := b.do(t, http.MethodPost, "/v1/actions",
			`{"kind":"webhook","propose":true,"payload":{"url":"`+srv.URL+`/hook","body":{}}}`)
		require.Equal(t, http.StatusCreated, status, "%v", a)
		require.Equal(t, "PROPOSED", a["state"])
		id := a["id"].(string)

		// Admitting enqueues nothing, so only the table's change feed can
		// wake the drainer.
		status, a = b.do(t, http.MethodPost, "/v1/actions/"+id+"/admit", "")
		require.Equal(t, http.StatusOK, status, "%v", a)
		ended := b.awaitEnded(t, id, 20)
		require.Equal(t, "DONE", ended["state"])
	})

	t.Run("BannerTellsWhatANewcomerNeeds", func(t *testing.T) {
		t.Parallel()
		out := &bytes.Buffer{}
		b := startStack(t, Config{Stdout: &syncWriter{w: out}, WebhookSecret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})
		b.stop(t)
		banner := out.String()
		for _, want := range []string{b.stack.URL(), "token          dev", "mail sink", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
			"curl -s -X POST " + b.stack.URL() + "/v1/actions", "Authorization: Bearer dev"} {
			require.Contains(t, banner, want)
		}
	})
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
