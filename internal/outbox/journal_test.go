package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// TestJournalItemsStayUnderOneKB: a journal splits its endings so that each
// item costs one write unit, with seqs of any size, and loses none.
func TestJournalItemsStayUnderOneKB(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	e, err := New(db, clk, NewRegistry(), Config{Table: "ferry", Partitions: 2})
	require.NoError(t, err)
	require.NoError(t, e.EnsureTable(ctx))
	for _, base := range []int64{1, 1_000_000, 9_000_000_000_000_000_000} {
		db.ResetCapacity()
		j := e.newJournal("a-drainer-owner-with-a-long-name-0123456789")
		exp := clk.Now().Add(time.Hour)
		for i := range int64(400) {
			j.add(ctx, int(i%2), base+i, time.Hour, exp.Add(time.Duration(i)*time.Millisecond))
		}
		require.NoError(t, j.flush(ctx))
		st := db.Capacity("ferry")
		puts := st.Calls["PutItem"]
		require.Equal(t, float64(puts), st.TotalWriteUnits(), "one unit per journal item (seqs from %d)", base)
		got := 0
		for p := range 2 {
			require.NoError(t, e.queryJournal(ctx, p, "", 0, func(page []journalItem) (bool, error) {
				for _, it := range page {
					require.Equal(t, it.n, len(it.seqs))
					got += it.n
					require.NoError(t, e.deleteJournal(ctx, it))
				}
				return true, nil
			}))
		}
		require.Equal(t, 400, got)
		t.Logf("400 endings with seqs from %d: %d items", base, puts)
	}
}
