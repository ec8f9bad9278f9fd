package sim

import (
	"context"
	"math/rand/v2"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/outbox"
)

// Engine is what a host runs: this build's engine (*outbox.Engine), or
// another build's behind an adapter (Options.OtherBuild).
type Engine interface {
	EnsureTable(ctx context.Context) error
	Enqueue(ctx context.Context, p outbox.EnqueueParams) (*outbox.EnqueueResult, error)
	Admit(ctx context.Context, id string) (*outbox.Action, error)
	Cancel(ctx context.Context, id string) (*outbox.Action, error)
	EraseSubject(ctx context.Context, workspaceID, subjectID string) (int, error)
	DrainPartition(ctx context.Context, partition int, p outbox.DrainParams) (*outbox.DrainResult, error)
	Reap(ctx context.Context) (*outbox.ReapResult, error)
	Retain(ctx context.Context) (*outbox.RetainResult, error)
}

var _ Engine = (*outbox.Engine)(nil)

// OtherBuild builds the engine of another build of Ferry on the run's
// table: its DynamoDB client, its host's clock, the simulated providers of
// its kinds (this build's adapters: the other build's registry wraps
// them), its configuration and its random source. The engine comes from
// that build's own source (design.md §15: internal/sim/otherbuild, made by
// `ferry-othergen` from a release tag), never from a model of it.
type OtherBuild func(db outbox.DynamoDB, clk clock.Clock, adapters []outbox.Adapter, cfg outbox.Config, rnd *rand.Rand) (Engine, error)
