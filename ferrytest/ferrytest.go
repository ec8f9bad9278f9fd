// Package ferrytest gives a service's tests what Ferry's own tests use: the
// embedded DynamoDB (as the ferry.DynamoDB interface, and served over HTTP
// like httptest.Server for code that builds its own *dynamodb.Client), a
// manual clock, and a drain that runs until nothing is due.
//
// Nothing here calls AWS or leaves the loopback interface.
package ferrytest

import (
	"context"
	"log/slog"
	"net"
	"net/http/httptest"
	"time"

	"github.com/ferryhq/ferry"
	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
	"github.com/ferryhq/ferry/internal/librarybridge"
)

// Clock is a manual clock: it stands still until the test moves it. Pass it
// to ferry.New with ferry.WithClock, and to NewDynamoDB so that the table's
// TTL and the engine agree on the time.
type Clock struct {
	m *clock.Manual
}

// NewClock returns a manual clock set to start.
func NewClock(start time.Time) *Clock { return &Clock{m: clock.NewManual(start)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return c.m.Now() }

// Advance moves the clock forward by d and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time { return c.m.Advance(d) }

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { c.m.Set(t) }

// DB is the embedded DynamoDB: in memory, with DynamoDB's semantics for the
// calls Ferry makes (conditions, transactions, indexes, TTL, streams).
type DB interface {
	ferry.DynamoDB
}

// NewDynamoDB returns an empty embedded DynamoDB reading the time from clk
// (the system clock when clk is nil).
func NewDynamoDB(clk ferry.Clock) DB {
	if clk == nil {
		return ddblocal.New()
	}
	return ddblocal.New(ddblocal.WithClock(clk))
}

// Server is the embedded DynamoDB served over HTTP on a loopback port, for
// code that builds its own *dynamodb.Client (set its BaseEndpoint to URL).
type Server struct {
	// URL is the endpoint, http://127.0.0.1:port.
	URL string
	// DB is the database behind it.
	DB  DB
	srv *httptest.Server
}

// NewServer serves a fresh embedded DynamoDB (reading the time from clk,
// the system clock when nil) on 127.0.0.1 until Close.
func NewServer(clk ferry.Clock) *Server {
	db := NewDynamoDB(clk)
	srv := httptest.NewUnstartedServer(ddbhttp.NewHandler(db.(ddbhttp.Backend), ddbhttp.WithLogger(slog.New(slog.DiscardHandler))))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic("ferrytest: cannot listen on the loopback interface: " + err.Error())
	}
	srv.Listener = ln
	srv.Start()
	return &Server{URL: srv.URL, DB: db, srv: srv}
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// DrainUntilIdle makes every waiting action of o due now (retry backoffs,
// deferrals and read-back waits brought forward) and drains every partition,
// again and again, until a round claims nothing. It is for tests: it
// rewrites the actions' due times.
func DrainUntilIdle(ctx context.Context, o *ferry.Outbox) error {
	return librarybridge.EngineOf(o).Drain(ctx)
}
