package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// A lagging subject index can show an erasure the idempotency record of a
// laned keyed action (written in the action's transaction) but not the
// action itself. Erasing the record must erase its action too: otherwise
// the key is free while the action lives, and a resend makes a second
// action (invariant 6; simulator seed 137 on a branch), and the action
// outlives its subject's erasure (§5.10).
func TestErasingARecordErasesItsAction(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	e := newPairEngine(t, db, clk, Config{Table: "ferry", Partitions: 2, Retention: time.Hour})

	params := EnqueueParams{Kind: "p", WorkspaceID: "ws", LaneKey: "l1", SubjectID: "s1",
		IdempotencyKey: "k1", Payload: []byte(`{"secret":"s3cr3t"}`)}
	r, err := e.Enqueue(ctx, params)
	require.NoError(t, err)

	// What the erasure does for the record alone, as when the index shows
	// only the record.
	_, err = e.eraseRow(ctx, idemPK("ws", "k1"), skIdem)
	require.NoError(t, err)

	_, err = e.ActionGet(ctx, r.Action.ID)
	require.ErrorIs(t, err, ErrNotFound, "the record's action is erased with it")
	r2, err := e.Enqueue(ctx, params)
	require.NoError(t, err)
	require.NotEqual(t, r.Action.ID, r2.Action.ID, "after the erasure the key makes a new action")
	res, err := e.Sweep(ctx, DrainParams{})
	require.NoError(t, err)
	require.Equal(t, 1, res.Claimed, "only the new action runs; the erased one never does")

	// Erasing a record whose action is already gone changes nothing else.
	_, err = e.eraseRow(ctx, idemPK("ws", "k1"), skIdem)
	require.NoError(t, err)
	_, err = e.eraseRow(ctx, idemPK("ws", "k1"), skIdem)
	require.NoError(t, err)
}
