package functionroles

import (
	"encoding/json"
	"flag"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/outbox/storetest"
)

var (
	update  = flag.Bool("update", false, "rewrite roles.json from the recorded calls")
	explain = flag.Bool("explain", false, "log which engine functions gave each function each permission")
)

const tableName = "ferry"

var start = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// notDeployed are the engine's entry points that no function calls, and
// who does. The conformance suite calls them; their requests belong to no
// role. A new entry point must be reached by a function's handler run (add
// it to functionScenario) or listed here.
var notDeployed = map[string]string{
	"EnsureTable":             "ferry table create and ferry dev create the table; the CDK stack declares it",
	"EnqueueItems":            "library mode: the items go into the caller's own TransactWriteItems, under the caller's role",
	"Drain":                   "library mode and ferrytest: drains in the caller's process",
	"RunNow":                  "library mode: runs one action in the caller's process",
	"AttemptFinish":           "custom drivers and tests that run attempts themselves; the drainer ends attempts inside runGroups",
	"Claim":                   "custom drivers and tests that run attempts themselves (with AttemptFinish); the drainer claims inside DrainPartition",
	"PreparedEnqueue.Resolve": "library mode: the caller resolves its own transaction's outcome, under its role",
	"StatusGet":               "ferry status (internal/operator), under the operator's own credentials (docs/operations.md, Permissions)",
	"ActionFind":              "ferry actions list and ferry subjects erase (internal/operator), under the operator's credentials",
	"ActionNeighbours":        "ferry actions get (internal/operator), under the operator's credentials",
	"SubjectWorkspaces":       "ferry subjects erase in every workspace (internal/operator), under the operator's credentials",
	"PartitionsSet":           "a live change of the partition count by hand (ferry dev, tests); deploys change it through the reaper (Reap)",
	"PartitionLayout":         "tests and ferry dev read the partition map",
}

// staticOnly are actions a function's code can reach that no run
// records, each with the reason; they are granted all the same.
var staticOnly = map[string]string{
	"enqueue dynamodb:Scan": "a listing scans only for instance-level actions (no workspace: library mode, list.go); " +
		"the API's listings name a workspace",
	"drainer dynamodb:ConditionCheckItem": "the relink of a lane member a drainer ends while the member before it is live " +
		"(lanelink.go predLive, design.md §7.3): the scenario's drainer ends members only after their predecessors",
}

// entryOf is the engine function a suite request is attributed by: its
// outermost engine function, or, for an exported method that only wraps
// its unexported namesake (FenceTake and fenceTake), the namesake, which
// is what the functions call.
func entryOf(c call, reached map[string]map[string]bool) string {
	entry := c.engineEntry
	if len(c.engine) < 2 {
		return entry
	}
	inner := c.engine[len(c.engine)-2]
	if inner != strings.ToLower(entry[:1])+entry[1:] {
		return entry
	}
	for _, fn := range Functions {
		if reached[fn][entry] {
			return entry
		}
	}
	return inner
}

// TestRolesAreTheCalls derives each function's DynamoDB permissions from
// the requests its code makes and compares them with roles.json.
//
// Two runs feed it. The handler run (functionScenario) labels each request
// with its function, and records which engine functions each function
// reaches. The conformance suite calls the engine's building blocks
// directly, reaching paths a handler run cannot bring about on demand
// (lost leases, ambiguous writes, lane gaps); its requests are attributed
// by the outermost engine function on their stack to every function whose
// handler run reaches that engine function.
func TestRolesAreTheCalls(t *testing.T) {
	clk := clock.NewManual(start)
	rec := newRecorder(t, clk)
	functionScenario(t, rec, clk)

	derived := Roles{}
	reached := map[string]map[string]bool{}
	why := map[string]map[string]bool{} // "fn action resource" -> the engine functions on the calls' stacks
	grant := func(fn string, c call) {
		for _, p := range c.perms {
			k := fn + " " + p.Action + " " + p.Resource.Key()
			if why[k] == nil {
				why[k] = map[string]bool{}
			}
			why[k][strings.Join(c.engine, " < ")] = true
		}
		if derived[fn] == nil {
			derived[fn] = map[string][]string{}
		}
		for _, p := range c.perms {
			require.Equal(t, tableName, p.Resource.Table, "%s: a request on another table: %v", fn, p)
			key := p.Resource.Key()
			if !slices.Contains(derived[fn][key], p.Action) {
				derived[fn][key] = append(derived[fn][key], p.Action)
			}
		}
	}
	for _, c := range rec.recorded() {
		if c.function == "" {
			continue // the scenario's own setup (the table) and reads
		}
		grant(c.function, c)
		if reached[c.function] == nil {
			reached[c.function] = map[string]bool{}
		}
		for _, e := range c.engine {
			reached[c.function][e] = true
		}
	}
	for _, fn := range Functions {
		require.NotEmpty(t, reached[fn], "the scenario ran no request of %s", fn)
	}
	entries := map[string][]string{} // function -> the engine functions its handler run entered
	for _, c := range rec.recorded() {
		if c.function != "" && !slices.Contains(entries[c.function], c.engineEntry) {
			entries[c.function] = append(entries[c.function], c.engineEntry)
		}
	}

	var mu sync.Mutex
	var suite []*recorder
	t.Run("Storetest", func(t *testing.T) {
		storetest.Exercise(t.Context(), t, func(t *testing.T) storetest.Backend {
			clk := clock.NewManual(start)
			r := newRecorder(t, clk)
			mu.Lock()
			suite = append(suite, r)
			mu.Unlock()
			return storetest.Backend{DB: r, Clock: clk, Table: tableName}
		})
	})
	unreached := map[string]bool{}
	for _, r := range suite {
		for _, c := range r.recorded() {
			if c.engineEntry == "" {
				continue // the suite's own reads and fault set-ups
			}
			entry := entryOf(c, reached)
			n := 0
			for _, fn := range Functions {
				if reached[fn][entry] {
					grant(fn, c)
					n++
				}
			}
			if n == 0 && notDeployed[entry] == "" {
				unreached[entry] = true
			}
		}
	}
	require.Empty(t, unreached, "the conformance suite calls these engine functions, which no function's handler run reaches: "+
		"make functionScenario reach them, or list them in notDeployed with who calls them")
	// What the code may call, not only what the runs called: an action a
	// function's entry points can reach in the engine's call graph that no
	// run recorded is a path no test takes, and its role would lack it.
	g := parseEngine(t)
	used := map[string]bool{}
	for _, fn := range Functions {
		var have []string
		for _, actions := range derived[fn] {
			have = append(have, actions...)
		}
		for action, path := range g.reach(entries[fn]) {
			switch {
			case slices.Contains(have, action):
			case staticOnly[fn+" "+action] != "":
				used[fn+" "+action] = true
				derived[fn][TableResource] = append(derived[fn][TableResource], action)
			default:
				t.Errorf("%s may call %s (%s), which no run recorded: add a run that takes this path, "+
					"or list it in staticOnly with the reason", fn, action, strings.Join(path, " > "))
			}
		}
	}
	for k := range staticOnly {
		require.True(t, used[k], "staticOnly[%q] is stale: a run records it now, or the code no longer reaches it", k)
	}
	for _, res := range derived {
		for _, actions := range res {
			slices.Sort(actions)
		}
	}

	if *explain {
		for _, k := range slices.Sorted(maps.Keys(why)) {
			t.Logf("%s:\n\t%s", k, strings.Join(slices.Sorted(maps.Keys(why[k])), "\n\t"))
		}
	}
	if *update {
		out, err := json.MarshalIndent(derived, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile("roles.json", append(out, '\n'), 0o644))
		t.Logf("wrote roles.json")
		return
	}
	golden, err := Load()
	require.NoError(t, err)
	require.Equal(t, golden, derived, "roles.json differs from the calls the functions make; "+
		"regenerate it with `go test ./internal/functionroles -run TestRolesAreTheCalls -update` and review the diff")
}
