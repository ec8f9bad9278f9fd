package outbox

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// BenchmarkListing reports what one listing call of a workspace costs in
// read units when the table holds 3,000 (and 30,000) actions of another
// workspace (all delivered, as most rows of a table are) and 100 of the
// listing's own: the first page of 50, unfiltered and filtered by state.
//
//	go test -run '^$' -bench 'Listing/Others3000' -benchtime 200x ./internal/outbox
//	go test -run '^$' -bench 'Listing/Others30000' -benchtime 20x ./internal/outbox
func BenchmarkListing(b *testing.B) {
	for _, others := range []int{3000, 30000} {
		b.Run(fmt.Sprintf("Others%d", others), func(b *testing.B) { benchListing(b, others) })
	}
}

func benchListing(b *testing.B, others int) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	reg := NewRegistry()
	if err := reg.Register(pairAdapter{}); err != nil {
		b.Fatal(err)
	}
	e, err := New(db, clk, reg, Config{Table: "ferry"})
	if err != nil {
		b.Fatal(err)
	}
	if err := e.EnsureTable(ctx); err != nil {
		b.Fatal(err)
	}
	pl := []byte(`{"body":"` + strings.Repeat("x", 800) + `"}`)
	every := others/100 + 1 // 100 of the listing's own, spread evenly
	for i := 0; i < others+100; i++ {
		ws := "other-tenant"
		if i%every == every-1 {
			ws = "mine"
		}
		if _, err := e.Enqueue(ctx, EnqueueParams{Kind: "p", WorkspaceID: ws, Payload: pl}); err != nil {
			b.Fatal(err)
		}
		clk.Advance(time.Millisecond)
		if (i+1)%100 == 0 {
			if _, err := e.Sweep(ctx, DrainParams{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		p    ActionListParams
	}{
		{"Workspace", ActionListParams{WorkspaceID: "mine", Limit: 50}},
		{"WorkspaceState", ActionListParams{WorkspaceID: "mine", Limit: 50, State: StateDONE}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			db.ResetCapacity()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r, err := e.ActionList(ctx, tc.p)
				if err != nil {
					b.Fatal(err)
				}
				if len(r.Actions) != 50 || r.NextCursor == "" {
					b.Fatalf("listed %d actions (cursor %q), want a page of 50 and a cursor", len(r.Actions), r.NextCursor)
				}
			}
			b.StopTimer()
			st := db.Capacity("ferry")
			n := float64(b.N)
			var calls int64
			for _, c := range st.Calls {
				calls += c
			}
			b.ReportMetric(st.TotalReadUnits()/n, "RRU/call")
			b.ReportMetric(float64(calls)/n, "calls/call")
			b.Logf("%s: %s", tc.name, fmt.Sprint(st.Calls))
		})
	}
}
