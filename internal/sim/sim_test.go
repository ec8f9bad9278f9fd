package sim

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	seedFlag  = flag.Uint64("seed", 0, "TestSeed: the seed to run")
	stepsFlag = flag.Int("steps", 500, "TestSeed: steps of the run")
	traceFlag = flag.Bool("simtrace", false, "TestSeed: print the whole trace")
)

// TestSeed runs one seed: go test ./internal/sim -run TestSeed -seed=123 -steps=500.
func TestSeed(t *testing.T) {
	if *seedFlag == 0 {
		t.Skip("pass -seed=N to replay a seed")
	}
	r := Run(Options{Seed: *seedFlag, Steps: *stepsFlag})
	if *traceFlag || r.Failed() {
		os.Stdout.Write(r.Trace)
	}
	require.Empty(t, r.Violations)
}

func TestSameSeedSameTrace(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{1, 2, 3} {
		a := Run(Options{Seed: seed, Steps: 300})
		b := Run(Options{Seed: seed, Steps: 300})
		require.True(t, bytes.Equal(a.Trace, b.Trace), "seed %d: traces differ", seed)
		require.Equal(t, a.Faults, b.Faults)
		require.Equal(t, a.Actions, b.Actions)
	}
	require.False(t, bytes.Equal(Run(Options{Seed: 4, Steps: 100}).Trace, Run(Options{Seed: 5, Steps: 100}).Trace))
}
