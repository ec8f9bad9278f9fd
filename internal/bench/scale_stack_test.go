package bench

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/coldstart"
	"github.com/ferryhq/ferry/internal/handlers"
	"github.com/ferryhq/ferry/internal/outbox"
)

// TestScaleModelUsesTheStackSettings: the scale model deploys what the
// stack deploys. The infra module's defaults (stream mapping, schedules,
// function sizes) are read from its source, which this module cannot
// import; the drainer's own (stream budget, sweep places, lane groups)
// are the constants the functions use.
func TestScaleModelUsesTheStackSettings(t *testing.T) {
	t.Parallel()
	infra := parseInfra(t, "schedules.go", "props.go")
	require.Equal(t, int64(StackStreamParallelization), evalInt(t, infra["streamParallelization"]), "infra/schedules.go streamParallelization")
	require.Equal(t, int64(StackStreamBatch), evalInt(t, infra["DefaultStreamBatchSize"]), "infra/props.go DefaultStreamBatchSize")
	require.Equal(t, StackStreamWindow, time.Duration(evalInt(t, infra["DefaultStreamWindow"])), "infra/props.go DefaultStreamWindow")

	schedules := keyed(t, infra["Schedules"])
	require.Equal(t, StackSchedule, time.Duration(evalInt(t, schedules["FunctionDrainer"])), "infra Schedules[FunctionDrainer]")
	require.Equal(t, StackSchedule, time.Duration(evalInt(t, schedules["FunctionReaper"])), "infra Schedules[FunctionReaper]")

	sizes := keyed(t, infra["DefaultFunctionSizes"])
	for fn, mb := range map[string]int{"Enqueue": enqueueMB, "Drainer": drainerMB, "Reaper": reaperMB} {
		size := keyed(t, sizes[fn])
		require.Equal(t, int64(mb), evalInt(t, size["MemoryMB"]), "infra DefaultFunctionSizes.%s.MemoryMB", fn)
	}
	require.Equal(t, StackDrainerTimeout, time.Duration(evalInt(t, keyed(t, sizes["Drainer"])["Timeout"])), "infra DefaultFunctionSizes.Drainer.Timeout")

	p := ScaleParams{Rate: 100}.withDefaults()
	require.Equal(t, StackStreamParallelization, p.Parallelization)
	require.Equal(t, StackStreamBatch, p.StreamBatch)
	require.Equal(t, StackStreamWindow, p.StreamWindow)
	require.Equal(t, handlers.DefaultStreamBudget, p.StreamBudget)
	require.Equal(t, coldstart.SweepPartitions, p.SweepPartitions)
	require.Zero(t, p.Concurrency, "the engine's default: every lane group of a batch (%d)", outbox.DefaultBatchSize)
	require.Equal(t, StackSchedule, p.Schedule)
	require.Equal(t, StackDrainerTimeout, p.DrainerTimeout)
}

// parseInfra returns the top-level values of files of infra/ by name.
func parseInfra(t *testing.T, files ...string) map[string]ast.Expr {
	t.Helper()
	out := map[string]ast.Expr{}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join("..", "..", "infra", name), nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range gd.Specs {
				vs, ok := s.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						out[n.Name] = vs.Values[i]
					}
				}
			}
		}
	}
	return out
}

// keyed returns the elements of a composite literal by key name.
func keyed(t *testing.T, e ast.Expr) map[string]ast.Expr {
	t.Helper()
	cl, ok := e.(*ast.CompositeLit)
	require.True(t, ok, "%T is not a composite literal", e)
	out := map[string]ast.Expr{}
	for _, el := range cl.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		require.True(t, ok)
		id, ok := kv.Key.(*ast.Ident)
		require.True(t, ok, "key %T", kv.Key)
		out[id.Name] = kv.Value
	}
	return out
}

// evalInt evaluates an integer or duration expression of literals,
// time's units and *.
func evalInt(t *testing.T, e ast.Expr) int64 {
	t.Helper()
	switch e := e.(type) {
	case *ast.BasicLit:
		n, err := strconv.ParseInt(e.Value, 0, 64)
		require.NoError(t, err)
		return n
	case *ast.ParenExpr:
		return evalInt(t, e.X)
	case *ast.BinaryExpr:
		require.Equal(t, token.MUL, e.Op, "only * is evaluated")
		return evalInt(t, e.X) * evalInt(t, e.Y)
	case *ast.SelectorExpr:
		if pkg, ok := e.X.(*ast.Ident); ok && pkg.Name == "time" {
			units := map[string]time.Duration{"Millisecond": time.Millisecond, "Second": time.Second, "Minute": time.Minute, "Hour": time.Hour}
			if u, ok := units[e.Sel.Name]; ok {
				return int64(u)
			}
		}
	}
	t.Fatalf("cannot evaluate %T", e)
	return 0
}
