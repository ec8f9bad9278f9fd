package outbox

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// BenchmarkActionCost reports what one action costs end to end (enqueue,
// claim, fence, end) in DynamoDB calls and request units, from the embedded
// DynamoDB's capacity counters: what AWS bills, not wall time.
//
//	go test -run '^$' -bench ActionCost -benchtime 400x ./internal/outbox
func BenchmarkActionCost(b *testing.B) {
	lanedAlone := func(i int) EnqueueParams { return EnqueueParams{LaneKey: fmt.Sprintf("lane-%d", i)} }
	for _, tc := range []struct {
		name string
		p    func(i int) EnqueueParams
	}{
		{"Keyless", func(int) EnqueueParams { return EnqueueParams{} }},
		{"LanedBacklog", func(i int) EnqueueParams { return EnqueueParams{LaneKey: fmt.Sprintf("lane-%d", i%10)} }},
		{"LanedAlone", lanedAlone},
		{"IdempotencyKey", func(i int) EnqueueParams { return EnqueueParams{IdempotencyKey: fmt.Sprintf("key-%d", i)} }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
			db := ddblocal.New(ddblocal.WithClock(clk))
			reg := NewRegistry()
			if err := reg.Register(pairAdapter{}); err != nil {
				b.Fatal(err)
			}
			e, err := New(db, clk, reg, Config{Table: "ferry", Partitions: 4})
			if err != nil {
				b.Fatal(err)
			}
			if err := e.EnsureTable(ctx); err != nil {
				b.Fatal(err)
			}
			db.ResetCapacity()
			const between = 100 // enqueues between drains: the drainer's batches fill up
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p := tc.p(i)
				p.Kind, p.WorkspaceID, p.Payload = "p", "ws", []byte(`{"to":"someone@example.com","subject":"hello"}`)
				if _, err := e.Enqueue(ctx, p); err != nil {
					b.Fatal(err)
				}
				clk.Advance(time.Millisecond)
				if (i+1)%between == 0 || i == b.N-1 {
					if _, err := e.Sweep(ctx, DrainParams{}); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			st := db.Capacity("ferry")
			n := float64(b.N)
			var calls int64
			var parts []string
			for op, c := range st.Calls {
				calls += c
				parts = append(parts, fmt.Sprintf("%s=%.2f", op, float64(c)/n))
			}
			sort.Strings(parts)
			b.ReportMetric(float64(calls)/n, "calls/action")
			b.ReportMetric(st.TotalWriteUnits()/n, "WRU/action")
			b.ReportMetric(st.WriteUnits/n, "baseWRU/action")
			b.ReportMetric(st.Indexes[IndexDue].WriteUnits/n, "dueWRU/action")
			b.ReportMetric(st.TotalReadUnits()/n, "RRU/action")
			if b.N >= 100 {
				b.Logf("%s per action: %s", tc.name, strings.Join(parts, " "))
			}
		})
	}
}
