package webhook_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/adapters/ssrfguard"
	"github.com/ferryhq/ferry/internal/adapters/webhook"
	"github.com/ferryhq/ferry/internal/outbox"
)

func TestHTTPSReceiver(t *testing.T) {
	t.Parallel()
	var gotID atomic.Value
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotID.Store(r.Header.Get("webhook-id"))
		w.WriteHeader(204)
	}))
	t.Cleanup(srv.Close)

	// Trusted: delivered, also under an https-only policy.
	b := setup(t, func(o *webhook.Options) {
		o.TLSConfig = &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
		o.Policy = ssrfguard.Policy{AllowPrivate: true, HTTPSOnly: true}
	})
	res := b.attempt(context.Background(), action(t, "1-20", srv.URL, nil), 1)
	require.Equal(t, outbox.OutcomeDone, res.Outcome, res.Err)
	require.Equal(t, "1-20", gotID.Load())

	// Not trusted: the certificate is verified, the attempt retried.
	b = setup(t)
	res = b.attempt(context.Background(), action(t, "1-20", srv.URL, nil), 1)
	require.Equal(t, outbox.OutcomeRetry, res.Outcome)
	var certErr *tls.CertificateVerificationError
	require.ErrorAs(t, res.Err, &certErr)
}

func TestSilentTLSPeerIsCutByHandshakeTimeout(t *testing.T) {
	t.Parallel()
	// A peer that accepts the connection and never answers the handshake.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
	}()
	b := setup(t, func(o *webhook.Options) { o.TLSHandshakeTimeout = 100 * time.Millisecond })
	res := b.attempt(context.Background(), action(t, "1-21", "https://"+ln.Addr().String()+"/", nil), 1)
	require.Equal(t, outbox.OutcomeRetry, res.Outcome)
	require.ErrorContains(t, res.Err, "TLS handshake timeout")
}
