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
	srv := &http.Server{
		Handler:           NewHandler(b, append([]Option{WithLogger(logger)}, opts...)...),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
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
