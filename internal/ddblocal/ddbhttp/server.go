package ddbhttp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// shutdownGrace bounds how long a stopping server waits for requests in
// flight.
const shutdownGrace = 5 * time.Second

// Timeouts bound how long the server waits on a client, so that clients
// that stall (a slowly sent request, a keep-alive connection left open)
// cannot hold connections and goroutines forever. A zero field takes its
// default.
type Timeouts struct {
	// ReadHeader: the request line and headers (default 10 s).
	ReadHeader time.Duration
	// Read: the whole request, body included (default 60 s: DynamoDB's
	// largest request, 16 MB, at under 300 KB/s). A body that stops
	// arriving answers 408 RequestTimeoutException, which the SDKs retry.
	Read time.Duration
	// Write: from the end of the request to the end of the answer (default
	// 60 s).
	Write time.Duration
	// Idle: a keep-alive connection waiting for its next request (default
	// 60 s, as an AWS load balancer's).
	Idle time.Duration
}

// DefaultTimeouts are the server's timeouts unless WithTimeouts changes
// them.
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: 60 * time.Second, Write: 60 * time.Second, Idle: 60 * time.Second}

// WithTimeouts sets the server's timeouts (Serve and ListenAndServe; the
// handler alone has none).
func WithTimeouts(t Timeouts) Option {
	return func(c *handlerConfig) {
		c.timeouts = t.orDefaults()
	}
}

func (t Timeouts) orDefaults() Timeouts {
	pick := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	return Timeouts{ReadHeader: pick(t.ReadHeader, DefaultTimeouts.ReadHeader), Read: pick(t.Read, DefaultTimeouts.Read),
		Write: pick(t.Write, DefaultTimeouts.Write), Idle: pick(t.Idle, DefaultTimeouts.Idle)}
}

// newServer is the http.Server Serve runs.
func newServer(ctx context.Context, b Backend, logger *slog.Logger, opts ...Option) *http.Server {
	h := NewHandler(b, append([]Option{WithLogger(logger)}, opts...)...)
	t := h.cfg.timeouts
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
}

// ListenAndServe serves b as a DynamoDB endpoint on addr (for example
// "127.0.0.1:8000", what `ferry dynamodb` listens on) until ctx is done, then
// shuts down gracefully and returns nil. It returns an error if addr cannot
// be listened on or the server fails.
func ListenAndServe(ctx context.Context, addr string, b Backend, logger *slog.Logger, opts ...Option) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("error listening for DynamoDB requests on %s: %w", addr, err)
	}
	return Serve(ctx, ln, b, logger, opts...)
}

// Serve is ListenAndServe on an existing listener, for callers that listen
// on port 0 and print the address they got. It closes ln.
func Serve(ctx context.Context, ln net.Listener, b Backend, logger *slog.Logger, opts ...Option) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	srv := newServer(ctx, b, logger, opts...)
	logger.Info("serving DynamoDB", "addr", ln.Addr().String())

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("error serving DynamoDB on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		// Requests still running after the grace period (or connections a
		// client opened and never used) are cut: stopping is what was asked.
		logger.Warn("DynamoDB server did not stop gracefully; closing its connections", "error", err)
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("error serving DynamoDB on %s: %w", ln.Addr(), err)
	}
	return nil
}
