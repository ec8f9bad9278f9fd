package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// TestLiveRepartitionUnderLoad changes the partition count of a running
// stack 16 -> 64 -> 32 while lanes keep being enqueued (ADR 0011): every
// action is delivered exactly once and every lane in order; actions
// enqueued after each change use the new count, lanes with live members
// stay where they are.
func TestLiveRepartitionUnderLoad(t *testing.T) {
	t.Parallel()
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	b := startStack(t, Config{AllowPrivateWebhooks: true, Partitions: 16})
	ctx := context.Background()
	const lanes, rounds = 12, 15
	parts := map[string]int{} // id -> partition
	total := 0
	for i := 0; i < rounds; i++ {
		switch i {
		case 5:
			require.NoError(t, b.stack.Engine().PartitionsSet(ctx, 64))
		case 10:
			require.NoError(t, b.stack.Engine().PartitionsSet(ctx, 32))
		}
		for l := 0; l < lanes; l++ {
			status, a := b.do(t, http.MethodPost, "/v1/actions", fmt.Sprintf(
				`{"kind":"webhook","lane_key":"lane-%d","payload":{"url":"%s/hook","body":{"lane":%d,"i":%d}}}`, l, srv.URL, l, i))
			require.Equal(t, http.StatusCreated, status, "%v", a)
			p, _, err := outbox.ParseActionID(a["id"].(string))
			require.NoError(t, err)
			parts[a["id"].(string)] = p
			total++
		}
		status, a := b.do(t, http.MethodPost, "/v1/actions", fmt.Sprintf(
			`{"kind":"webhook","payload":{"url":"%s/hook","body":{"lane":-1,"i":%d}}}`, srv.URL, i))
		require.Equal(t, http.StatusCreated, status, "%v", a)
		p, _, err := outbox.ParseActionID(a["id"].(string))
		require.NoError(t, err)
		parts[a["id"].(string)] = p
		total++
	}

	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	seen := b.stack.DrainPasses()
	for {
		rcv.mu.Lock()
		n := len(rcv.ids)
		rcv.mu.Unlock()
		if n >= total {
			break
		}
		seen = b.stack.WaitDrainPasses(wctx, seen)
		if wctx.Err() != nil {
			b.stop(t)
			t.Fatalf("delivered %d of %d\nlogs:\n%s", n, total, b.logs.String())
		}
	}

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	once := map[string]bool{}
	for _, id := range rcv.ids {
		require.False(t, once[id], "%s delivered twice", id)
		once[id] = true
		require.Contains(t, parts, id)
	}
	require.Len(t, once, total, "nothing lost")
	last := map[int]int{}
	for _, body := range rcv.bodies {
		var m struct{ Lane, I int }
		require.NoError(t, json.Unmarshal([]byte(body), &m))
		if m.Lane < 0 {
			continue
		}
		if prev, ok := last[m.Lane]; ok {
			require.Greater(t, m.I, prev, "lane-%d out of order: %v", m.Lane, rcv.bodies)
		}
		last[m.Lane] = m.I
	}
	above := 0
	for _, p := range parts {
		if p >= 16 {
			above++
		}
	}
	require.Positive(t, above, "actions enqueued after the change to 64 use partitions above 16")
	l, err := b.stack.Engine().PartitionLayout(ctx)
	require.NoError(t, err)
	require.Equal(t, 32, l.Count)
	require.GreaterOrEqual(t, l.Live, 32)
}
