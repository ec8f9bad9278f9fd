package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// Audit (design.md §3.6): the single-end paths the storetest case does not cover
// (RunNow, a caller's AttemptFinish, the refusal of a proposal, the seal of
// an abandoned written-first enqueue) journal their endings too.
func TestAuditSingleEndPathsAreJournaled(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	e := newPairEngine(t, ddblocal.New(ddblocal.WithClock(clk)), clk, Config{Table: "ferry", Partitions: 1})
	enq := func(p EnqueueParams) *Action {
		p.Kind, p.WorkspaceID, p.Payload = "p", "ws", []byte(`{}`)
		r, err := e.Enqueue(ctx, p)
		require.NoError(t, err)
		return &r.Action
	}
	finished := enq(EnqueueParams{})
	clk.Advance(time.Second)
	v, err := e.FenceTake(ctx, 0, "driver", clk.Now().Add(time.Minute))
	require.NoError(t, err)
	cr, err := e.Claim(ctx, 0, ClaimParams{Owner: "driver", Version: v, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, 1, cr.Claimed)
	_, err = e.AttemptFinish(ctx, cr.Groups[0][0], Done("x"))
	require.NoError(t, err)
	require.NoError(t, e.FenceRelease(ctx, 0, "driver", v))

	ran := enq(EnqueueParams{})
	got, err := e.RunNow(ctx, ran.ID)
	require.NoError(t, err)
	require.Equal(t, StateDONE, got.State)

	refused := enq(EnqueueParams{Propose: true})
	_, err = e.Cancel(ctx, refused.ID)
	require.NoError(t, err)

	listed := map[int64]bool{}
	require.NoError(t, e.queryJournal(ctx, 0, "", 0, func(page []journalItem) (bool, error) {
		for _, j := range page {
			for _, s := range j.seqs {
				listed[s] = true
			}
		}
		return true, nil
	}))
	for _, a := range []*Action{finished, ran, refused} {
		require.True(t, listed[a.Seq], "%s ended without a journal entry", a.ID)
	}
}
