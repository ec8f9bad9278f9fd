package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

type specAdapter struct {
	spec KindSpec
	bad  bool
}

func (s specAdapter) Spec() KindSpec { return s.spec }
func (s specAdapter) Validate(string, json.RawMessage) error {
	if s.bad {
		return &PayloadError{Field: "to", Message: "missing"}
	}
	return nil
}
func (specAdapter) Execute(context.Context, *Attempt) Result { return Done("") }

func TestEnqueueValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	reg := NewRegistry()
	require.NoError(t, reg.Register(specAdapter{spec: KindSpec{Name: "w", Class: IdempotentReceiver}}))
	require.NoError(t, reg.Register(specAdapter{spec: KindSpec{Name: "inst", Class: IdempotentReceiver, InstanceLevel: true}}))
	require.NoError(t, reg.Register(specAdapter{spec: KindSpec{Name: "bad", Class: IdempotentReceiver}, bad: true}))
	require.NoError(t, reg.Register(specAdapter{spec: KindSpec{Name: "ks", Class: AtMostOnce, VariantMode: KeySuffix, KeySeparator: "/", Variants: []string{"welcome"}}}))
	e, err := New(ddblocal.New(ddblocal.WithClock(clk)), clk, reg, Config{Table: "ferry", Partitions: 2, MaxPayload: 64})
	require.NoError(t, err)
	require.NoError(t, e.EnsureTable(ctx))
	ok := EnqueueParams{Kind: "w", WorkspaceID: "ws", Payload: []byte(`{}`)}
	field := func(p EnqueueParams) string {
		_, err := e.Enqueue(ctx, p)
		var ve *ValidationError
		if errors.As(err, &ve) {
			return ve.Field
		}
		require.NoError(t, err)
		return ""
	}
	p := ok
	p.Kind = ""
	require.Equal(t, "kind", field(p))
	p = ok
	p.WorkspaceID = ""
	require.Equal(t, "workspace_id", field(p))
	p = ok
	p.Kind, p.WorkspaceID = "inst", ""
	require.Equal(t, "", field(p))
	p.WorkspaceID = "ws"
	require.Equal(t, "workspace_id", field(p), "instance-level kinds take no workspace")
	p = ok
	p.Payload = nil
	require.Equal(t, "payload", field(p))
	p.Payload = []byte(`{nope`)
	require.Equal(t, "payload", field(p))
	p = ok
	p.MaxAttempts = -1
	require.Equal(t, "max_attempts", field(p))
	p = ok
	p.ExpiresAt = clk.Now().Add(-time.Second)
	require.Equal(t, "expires_at", field(p))
	p = ok
	p.LaneKey = strings.Repeat("x", 600)
	require.Equal(t, "lane_key", field(p))
	p = ok
	p.WorkspaceID = "a#b"
	require.Equal(t, "workspace_id", field(p))
	p = ok
	p.Kind, p.IdempotencyKey = "ks", "user-1/other"
	require.Equal(t, "idempotency_key", field(p))
	p.IdempotencyKey = "user-1/welcome"
	require.Equal(t, "", field(p))

	p = ok
	p.Kind = "nope"
	_, err = e.Enqueue(ctx, p)
	require.ErrorIs(t, err, ErrUnknownKind)
	p = ok
	p.Payload = []byte(`{"x":"` + strings.Repeat("y", 100) + `"}`)
	_, err = e.Enqueue(ctx, p)
	var tl *TooLargeError
	require.ErrorAs(t, err, &tl)
	p = ok
	p.Kind = "bad"
	_, err = e.Enqueue(ctx, p)
	var pe *PayloadError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "to", pe.Field)
	_, err = e.EnqueueBatch(ctx, nil)
	require.Error(t, err)
	r, err := e.Enqueue(ctx, ok)
	require.NoError(t, err)
	require.Equal(t, StateADMITTED, r.Action.State)
	require.Equal(t, 8, r.Action.MaxAttempts)
	got, err := e.ActionGet(ctx, r.Action.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{}`, string(got.Payload))
	_, err = e.ActionGet(ctx, "garbage")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = e.ActionGet(ctx, NewActionID(r.Action.CreatedAt, 1, MaxPartitions, 1))
	require.ErrorIs(t, err, ErrNotFound, "partition out of range")
}

func TestFenceRefusedWithLessThanTheMarginLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	ran := 0
	reg := NewRegistry()
	require.NoError(t, reg.Register(prepAdapter{prep: func() { clk.Advance(5*time.Minute - 30*time.Second) }, ran: &ran}))
	e, err := New(ddblocal.New(ddblocal.WithClock(clk)), clk, reg, Config{Table: "ferry", Partitions: 1})
	require.NoError(t, err)
	require.NoError(t, e.EnsureTable(ctx))
	r, err := e.Enqueue(ctx, EnqueueParams{Kind: "prep", WorkspaceID: "ws", Payload: []byte(`{}`)})
	require.NoError(t, err)
	refused := &refusals{}
	e.obs = refused
	dr, err := e.DrainPartition(ctx, 0, DrainParams{})
	require.NoError(t, err)
	require.Equal(t, 1, dr.Claimed)
	require.Zero(t, ran, "no provider call with 30s of lease left")
	require.Equal(t, 1, refused.n)
	a, err := e.ActionGet(ctx, r.Action.ID)
	require.NoError(t, err)
	require.Equal(t, StateEXECUTING, a.State)
	require.True(t, a.WriteStartedAt.IsZero())
	// Its lease runs out and the next claim carries it out.
	clk.Advance(time.Minute)
	e.obs = NopObserver{}
	reg2 := NewRegistry()
	require.NoError(t, reg2.Register(prepAdapter{prep: func() {}, ran: &ran}))
	e.reg = reg2
	_, err = e.DrainPartition(ctx, 0, DrainParams{})
	require.NoError(t, err)
	a, err = e.ActionGet(ctx, r.Action.ID)
	require.NoError(t, err)
	require.Equal(t, StateDONE, a.State)
	require.Equal(t, 2, a.Attempt)
	require.Equal(t, 1, ran)
}

type prepAdapter struct {
	prep func()
	ran  *int
}

func (prepAdapter) Spec() KindSpec                             { return KindSpec{Name: "prep", Class: AtMostOnce} }
func (prepAdapter) Validate(string, json.RawMessage) error     { return nil }
func (p prepAdapter) Prepare(context.Context, *Attempt) Result { p.prep(); return Result{} }
func (p prepAdapter) Execute(context.Context, *Attempt) Result { *p.ran++; return Done("") }

type refusals struct {
	NopObserver
	n int
}

func (r *refusals) FenceRefused(*Action) { r.n++ }
