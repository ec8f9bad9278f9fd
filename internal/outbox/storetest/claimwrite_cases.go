package storetest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Cases of ADR 0016 (design.md §5 step 4): a claim first records its
// candidates in the fence row's in-flight map with one conditional update,
// then claims each action with a plain conditional update of its own. Between
// the two a claimer can die or pause; what its fence update left behind (a
// stale entry) must never lose an action nor let two claims run.

// isActionKey tells an action row's key (not the fence row's).
func isActionKey(key map[string]types.AttributeValue) bool {
	return len(str(key, "sk")) > 2 && str(key, "sk")[:2] == "A#"
}

var _ = register("ClaimerDiedAfterItsFenceUpdateLosesNothing", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{})
	b := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	e, f := tb.faulty(t)
	tb.settled()
	v, err := e.FenceTake(ctx, 0, "dies", tb.b.Clock.Now().Add(time.Minute))
	require.NoError(t, err)
	// The claimer's fence update lands; it dies before any action update.
	var died atomic.Int32
	f.rule = func(op string, key map[string]types.AttributeValue) fault {
		if op == "UpdateItem" && isActionKey(key) {
			died.Add(1)
			return failBefore
		}
		return noFault
	}
	res, err := e.Claim(ctx, 0, outbox.ClaimParams{Owner: "dies", Version: v, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 2, int(died.Load()), "one claim update per action, outside any transaction")
	require.Zero(t, res.Claimed)
	// Stale entries: their actions are ADMITTED and due, nothing is lost.
	inf := tb.inflight(t, 0)
	require.Contains(t, inf, a.Seq)
	require.Contains(t, inf, b.Seq)
	for _, x := range []outbox.Action{a, b} {
		require.Equal(t, outbox.StateADMITTED, tb.get(t, x.ID).State)
	}

	// Once the dead claimer's fence lease is over, the next drainer claims
	// both from the due index, and its own claims clean the entries.
	tb.b.Clock.Advance(time.Minute)
	r := tb.drain(t)
	require.Equal(t, 2, r.Ended)
	for _, x := range []outbox.Action{a, b} {
		require.Equal(t, outbox.StateDONE, tb.get(t, x.ID).State)
		require.Equal(t, 1, tb.rec.Execs(x.ID))
	}
	require.Empty(t, tb.inflight(t, 0))
})

var _ = register("StaleEntryOfAPausedClaimerIsKeptUntilItsClaimCannotLand", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	older := tb.enqueue(t, outbox.EnqueueParams{})
	s := tb.enqueue(t, outbox.EnqueueParams{})
	e, f := tb.faulty(t)
	tb.settled()
	v, err := e.FenceTake(ctx, 0, "paused", tb.b.Clock.Now().Add(time.Minute))
	require.NoError(t, err)
	// The claimer pauses between its fence update and its claim update of s,
	// past its fence lease and its entry's lease. Meanwhile another drainer
	// takes the fence, reads the expired entry of s (s is still ADMITTED)
	// and claims the older action only.
	fired := false
	f.before = func(op string, key map[string]types.AttributeValue) {
		if fired || op != "UpdateItem" || str(key, "sk") != actionSK(s) {
			return
		}
		fired = true
		tb.b.Clock.Advance(tb.cfg.Lease + time.Minute)
		res, _, _ := tb.claim(t, 0, 1)
		require.Equal(t, [][]string{{older.ID}}, ids(res))
		require.Contains(t, tb.inflight(t, 0), s.Seq, "the entry of s stays: the paused claim may still land")
	}
	res, err := e.Claim(ctx, 0, outbox.ClaimParams{Owner: "paused", Version: v, OnlyID: s.ID})
	require.NoError(t, err)
	require.True(t, fired, "the claim update of s is a call of its own, after the fence update")
	require.Equal(t, [][]string{{s.ID}}, ids(res), "the paused claim landed")
	got := tb.get(t, s.ID)
	require.Equal(t, outbox.StateEXECUTING, got.State)
	require.Contains(t, tb.inflight(t, 0), s.Seq, "out of the due index, s is in the in-flight map")

	// Its claimer never runs it: after its lease a drain reclaims it.
	tb.b.Clock.Set(got.LeaseExpiresAt.Add(tb.cfg.Lease))
	tb.drain(t)
	require.Equal(t, outbox.StateDONE, tb.get(t, s.ID).State)
	require.Equal(t, 1, tb.rec.Execs(s.ID))
})

var _ = register("ClaimUpdateWithoutAnAnswerIsReadBack", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	a := tb.enqueue(t, outbox.EnqueueParams{})
	e, f := tb.faulty(t)
	tb.settled()
	// Every claim update lands and loses its answer: the retry is refused
	// by the epoch the first try moved, and the claim reads the row back.
	var lost atomic.Int32
	f.rule = func(op string, key map[string]types.AttributeValue) fault {
		if op == "UpdateItem" && isActionKey(key) {
			lost.Add(1)
			return failAfter
		}
		return noFault
	}
	v, err := e.FenceTake(ctx, 0, "me", tb.b.Clock.Now().Add(time.Minute))
	require.NoError(t, err)
	res, err := e.Claim(ctx, 0, outbox.ClaimParams{Owner: "me", Version: v, Limit: 10})
	require.NoError(t, err)
	require.NotZero(t, lost.Load())
	require.Equal(t, [][]string{{a.ID}}, ids(res))
	got := tb.get(t, a.ID)
	require.Equal(t, outbox.StateEXECUTING, got.State)
	require.EqualValues(t, 1, got.Epoch, "claimed once")
	require.Contains(t, tb.inflight(t, 0), a.Seq)
	f.rule = nil
	_, err = e.AttemptFinish(ctx, res.Groups[0][0], outbox.Done("x"))
	require.NoError(t, err)
	require.Equal(t, outbox.StateDONE, tb.get(t, a.ID).State)
})

var _ = register("LaneGroupStopsAtItsFirstRefusedMember", func(ctx context.Context, t *testing.T, nb NewBackend) {
	tb := setup(ctx, t, nb, nil)
	m1 := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	m2 := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	m3 := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "L"})
	other := tb.enqueue(t, outbox.EnqueueParams{})
	e, f := tb.faulty(t)
	tb.settled()
	// m2 is cancelled between the claim's fence update and its claim update
	// (groups are claimed two at a time: the hook runs on the claim's
	// goroutines).
	var fired atomic.Bool
	f.before = func(op string, key map[string]types.AttributeValue) {
		if op != "UpdateItem" || str(key, "sk") != actionSK(m2) || !fired.CompareAndSwap(false, true) {
			return
		}
		_, err := tb.e.Cancel(ctx, m2.ID)
		require.NoError(t, err)
	}
	v, err := e.FenceTake(ctx, 0, "me", tb.b.Clock.Now().Add(time.Minute))
	require.NoError(t, err)
	res, err := e.Claim(ctx, 0, outbox.ClaimParams{Owner: "me", Version: v, Limit: 10, Concurrency: 2})
	require.NoError(t, err)
	require.True(t, fired.Load())
	require.Equal(t, [][]string{{m1.ID}, {other.ID}}, ids(res), "the lane's group ends at m2; m3 is not claimed")
	require.Equal(t, 1, res.Conflicts)
	require.True(t, res.Short)
	require.Equal(t, outbox.StateADMITTED, tb.get(t, m3.ID).State)
	require.Equal(t, outbox.StateCANCELLED, tb.get(t, m2.ID).State)
	for _, g := range res.Groups {
		for _, a := range g {
			_, err := e.AttemptFinish(ctx, a, outbox.Done("x"))
			require.NoError(t, err)
		}
	}
	require.NoError(t, e.FenceRelease(ctx, 0, "me", v))
	// m3 runs later, after the members before it ended.
	tb.b.Clock.Advance(tb.cfg.Lease)
	tb.drain(t)
	require.Equal(t, outbox.StateDONE, tb.get(t, m3.ID).State)
})
