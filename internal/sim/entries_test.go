package sim

import (
	"reflect"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// TestEveryEngineEntryPointIsDriven requires the simulator to call every
// exported method of the engine (issue 27): a method a user, an operator
// or a function calls and no run reaches is a promise nothing judges.
// make sim-coverage measures how much of each it reaches.
func TestEveryEngineEntryPointIsDriven(t *testing.T) {
	t.Parallel()
	calls := map[string]int{}
	for seed := uint64(1); seed <= 6; seed++ {
		for _, repart := range []bool{false, true} {
			r := Run(Options{Seed: seed, Steps: 500, Repartition: repart})
			require.Empty(t, r.Violations, "seed %d repartition %v", seed, repart)
			for k, v := range r.Calls {
				calls[k] += v
			}
		}
	}
	var missing []string
	typ := reflect.TypeFor[*outbox.Engine]()
	for i := range typ.NumMethod() {
		if name := typ.Method(i).Name; calls[name] == 0 {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "exported Engine methods no run called; calls: %v", calls)
}
