package storetest

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/outbox"
)

// Backend is one DynamoDB the suite runs on.
type Backend struct {
	DB    outbox.DynamoDB
	Clock *clock.Manual // the engine's clock; an embedded DynamoDB shares it
	Table string        // a table name not used before; the suite creates it
	// IndexLag is how long the backend's global secondary indexes may lag
	// its table in real time (a real DynamoDB: about a second). The suite
	// waits that long before each step that reads an index; the embedded
	// DynamoDB needs no wait.
	IndexLag time.Duration
}

// NewBackend returns a fresh backend for one test.
type NewBackend func(t *testing.T) Backend

// bundle is what every case works with.
type bundle struct {
	ctx   context.Context
	b     Backend
	rec   *Recorder
	e     *outbox.Engine // this build
	newer *outbox.Engine // a newer build on the same table (knows more kinds)
	cfg   outbox.Config
	owner atomic.Int64

	keysMu sync.Mutex
	byKey  map[string]string // "<partition>-<seq>" -> id of the actions tb.enqueue made
}

func setup(ctx context.Context, t *testing.T, nb NewBackend, mod func(*outbox.Config)) *bundle {
	t.Helper()
	b := nb(t)
	cfg := outbox.Config{Table: b.Table, Partitions: 1, SeqBlock: 4}
	if mod != nil {
		mod(&cfg)
	}
	rec := NewRecorder()
	e, err := outbox.New(b.DB, b.Clock, Registry(rec, b.Table, false), cfg)
	require.NoError(t, err)
	require.NoError(t, e.EnsureTable(ctx))
	newer, err := outbox.New(b.DB, b.Clock, Registry(rec, b.Table, true), cfg)
	require.NoError(t, err)
	return &bundle{ctx: ctx, b: b, rec: rec, e: e, newer: newer, cfg: e.Config(), byKey: map[string]string{}}
}

// settled waits out the backend's index lag and returns the engine.
func (tb *bundle) settled() *outbox.Engine {
	if tb.b.IndexLag > 0 {
		time.Sleep(tb.b.IndexLag)
	}
	return tb.e
}

func (tb *bundle) settledNewer() *outbox.Engine {
	tb.settled()
	return tb.newer
}

func (tb *bundle) enqueue(t *testing.T, p outbox.EnqueueParams) outbox.Action {
	t.Helper()
	if p.Kind == "" {
		p.Kind = KindIdem
	}
	if p.WorkspaceID == "" {
		p.WorkspaceID = "ws"
	}
	if p.Payload == nil {
		p.Payload = Payload(Script{})
	}
	r, err := tb.e.Enqueue(tb.ctx, p)
	require.NoError(t, err)
	tb.b.Clock.Advance(time.Millisecond) // distinct due times
	tb.keysMu.Lock()
	tb.byKey[rowKey(r.Action.Partition, r.Action.Seq)] = r.Action.ID
	tb.keysMu.Unlock()
	return r.Action
}

func (tb *bundle) get(t *testing.T, id string) outbox.Action {
	t.Helper()
	a, err := tb.e.ActionGet(tb.ctx, id)
	require.NoError(t, err)
	return *a
}

// claim takes partition p's fence as a fresh owner and claims.
func (tb *bundle) claim(t *testing.T, p, limit int) (*outbox.ClaimResult, string, int64) {
	t.Helper()
	tb.settled()
	owner := fmt.Sprintf("owner-%d", tb.owner.Add(1))
	v, err := tb.e.FenceTake(tb.ctx, p, owner, tb.b.Clock.Now().Add(time.Minute))
	require.NoError(t, err)
	res, err := tb.e.Claim(tb.ctx, p, outbox.ClaimParams{Owner: owner, Version: v, Limit: limit})
	require.NoError(t, err)
	require.NoError(t, tb.e.FenceRelease(tb.ctx, p, owner, v))
	return res, owner, v
}

func ids(res *outbox.ClaimResult) [][]string {
	out := [][]string{}
	for _, g := range res.Groups {
		var s []string
		for _, a := range g {
			s = append(s, a.ID)
		}
		out = append(out, s)
	}
	return out
}

func (tb *bundle) drain(t *testing.T) *outbox.DrainResult {
	t.Helper()
	var total outbox.DrainResult
	for p := 0; p < tb.cfg.Partitions; p++ {
		r, err := tb.settled().DrainPartition(tb.ctx, p, outbox.DrainParams{Concurrency: 2})
		require.NoError(t, err)
		total.Claimed += r.Claimed
		total.Ended += r.Ended
		total.Started += r.Started
		total.Released += r.Released
	}
	return &total
}

// Exercise runs the whole suite on backends made by nb.
func Exercise(ctx context.Context, t *testing.T, nb NewBackend) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(ctx, t, nb)
		})
	}
}

type testCase struct {
	name string
	run  func(ctx context.Context, t *testing.T, nb NewBackend)
}

var cases []testCase

func register(name string, run func(ctx context.Context, t *testing.T, nb NewBackend)) bool {
	cases = append(cases, testCase{name, run})
	return true
}

// rowKey names an action row by its key: "<partition>-<seq>" (the suite's
// own label, not an action id).
func rowKey(partition int, seq int64) string {
	return strconv.Itoa(partition) + "-" + strconv.FormatInt(seq, 10)
}
