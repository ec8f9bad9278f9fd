package boundaries

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/ferryhq/ferry"

// graph maps each package of the module to its imports and to its
// transitive dependencies (tests excluded: a test may use anything).
type graph struct {
	imports map[string][]string
	deps    map[string][]string
}

func loadGraph(t *testing.T) graph {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	g := graph{imports: map[string][]string{}, deps: map[string][]string{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), "|", 3)
		require.Len(t, parts, 3, sc.Text())
		g.imports[parts[0]] = strings.Fields(parts[1])
		g.deps[parts[0]] = strings.Fields(parts[2])
	}
	require.NoError(t, sc.Err())
	return g
}

func under(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

// providerSDK reports whether dep is an AWS SDK service other than DynamoDB.
func providerSDK(dep string) bool {
	const services = "github.com/aws/aws-sdk-go-v2/service/"
	if !strings.HasPrefix(dep, services) {
		return false
	}
	name := strings.SplitN(strings.TrimPrefix(dep, services), "/", 2)[0]
	return name != "dynamodb" && name != "internal"
}

// violations lists every broken boundary of g, one line each.
func violations(g graph) []string {
	var bad []string
	adapters := map[string]bool{}
	for pkg, imps := range g.imports {
		if under(pkg, module+"/internal/adapters") {
			for _, imp := range imps {
				if imp == module+"/internal/outbox" {
					adapters[pkg] = true
				}
			}
		}
	}
	for pkg, deps := range g.deps {
		for _, dep := range deps {
			switch {
			case under(pkg, module+"/internal/outbox") && under(dep, module+"/internal/ddblocal"):
				bad = append(bad, fmt.Sprintf("engine package %s imports the embedded DynamoDB (%s)", pkg, dep))
			case under(pkg, module+"/internal/outbox") && under(dep, module+"/internal/adapters"):
				bad = append(bad, fmt.Sprintf("engine package %s imports an adapter (%s)", pkg, dep))
			case under(pkg, module+"/internal/outbox") && under(dep, "github.com/aws/aws-lambda-go"):
				bad = append(bad, fmt.Sprintf("engine package %s imports aws-lambda-go (%s)", pkg, dep))
			case under(pkg, module+"/internal/outbox") && providerSDK(dep):
				bad = append(bad, fmt.Sprintf("engine package %s imports a provider SDK (%s)", pkg, dep))
			case under(pkg, module+"/functions") && under(dep, module+"/internal/ddblocal"):
				bad = append(bad, fmt.Sprintf("function %s links the embedded DynamoDB (%s)", pkg, dep))
			case adapters[pkg] && adapters[dep]:
				bad = append(bad, fmt.Sprintf("adapter %s imports another adapter (%s)", pkg, dep))
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// TestBoundaries checks the module's real import graph.
func TestBoundaries(t *testing.T) {
	t.Parallel()
	g := loadGraph(t)
	require.Contains(t, g.deps, module+"/internal/outbox/storetest", "the graph must hold the engine and its conformance suite")
	require.Contains(t, g.deps, module+"/functions/drainer")
	require.Empty(t, violations(g))
}

// TestViolationsCatchEachRule feeds the checker a graph that breaks every
// rule once, so a checker that stops seeing a rule fails here.
func TestViolationsCatchEachRule(t *testing.T) {
	t.Parallel()
	m := func(s string) string { return module + "/" + s }
	g := graph{
		imports: map[string][]string{
			m("internal/adapters/webhook"):   {m("internal/outbox"), m("internal/adapters/ssrfguard")},
			m("internal/adapters/email"):     {m("internal/outbox"), m("internal/adapters/webhook")},
			m("internal/adapters/ssrfguard"): nil,
		},
		deps: map[string][]string{
			m("internal/outbox"):           {"github.com/aws/aws-sdk-go-v2/service/dynamodb", "github.com/aws/aws-sdk-go-v2/service/internal/checksum"},
			m("internal/outbox/storetest"): {m("internal/ddblocal")},
			m("internal/outbox/rows"):      {m("internal/adapters/webhook"), "github.com/aws/aws-lambda-go/lambda", "github.com/aws/aws-sdk-go-v2/service/sesv2"},
			m("functions/drainer"):         {m("internal/ddblocal/expr")},
			m("functions/enqueue"):         {m("internal/outbox")},
			m("internal/adapters/webhook"): {m("internal/outbox"), m("internal/adapters/ssrfguard")},
			m("internal/adapters/email"):   {m("internal/outbox"), m("internal/adapters/webhook")},
			m("internal/devstack"):         {m("internal/ddblocal"), m("internal/adapters/email")},
		},
	}
	require.Equal(t, []string{
		"adapter " + m("internal/adapters/email") + " imports another adapter (" + m("internal/adapters/webhook") + ")",
		"engine package " + m("internal/outbox/rows") + " imports a provider SDK (github.com/aws/aws-sdk-go-v2/service/sesv2)",
		"engine package " + m("internal/outbox/rows") + " imports an adapter (" + m("internal/adapters/webhook") + ")",
		"engine package " + m("internal/outbox/rows") + " imports aws-lambda-go (github.com/aws/aws-lambda-go/lambda)",
		"engine package " + m("internal/outbox/storetest") + " imports the embedded DynamoDB (" + m("internal/ddblocal") + ")",
		"function " + m("functions/drainer") + " links the embedded DynamoDB (" + m("internal/ddblocal/expr") + ")",
	}, violations(g))
}

// TestPublicExamplesImportNothingInternal checks every Example of a public
// package (the library's front page, ferrytest): a user can run only what
// imports public packages.
func TestPublicExamplesImportNothingInternal(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	examples := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "internal", "infra", "node_modules", "testdata":
				return filepath.SkipDir
			}
			if strings.HasPrefix(d.Name(), ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if !hasExample(f) {
			return nil
		}
		examples++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(p+"/", module+"/internal/") {
				t.Errorf("%s: an Example imports %s, which no user can import", path, p)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.GreaterOrEqual(t, examples, 2, "the root example and ferrytest's")
}

func hasExample(f *ast.File) bool {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Example") {
			return true
		}
	}
	return false
}
