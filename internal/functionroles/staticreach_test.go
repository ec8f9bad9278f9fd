package functionroles

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// engineGraph is the engine's code as a call graph: which functions each
// function (its closures included) may call, and which DynamoDB actions
// its own body may need. Calls are resolved by name alone (a method name
// reaches every method of that name), so it over-approximates: what it
// says a function cannot reach, it cannot.
type engineGraph struct {
	calls   map[string][]string // function -> callees
	actions map[string][]string // function -> IAM actions its body may need
}

// dbActions maps a DynamoDB client method to the IAM actions it needs
// itself; a transaction's actions come from the items it is built of.
var dbActions = map[string]string{
	"GetItem": "dynamodb:GetItem", "PutItem": "dynamodb:PutItem", "UpdateItem": "dynamodb:UpdateItem",
	"DeleteItem": "dynamodb:DeleteItem", "Query": "dynamodb:Query", "Scan": "dynamodb:Scan",
	"BatchGetItem": "dynamodb:BatchGetItem", "BatchWriteItem": "dynamodb:BatchWriteItem",
	"TransactGetItems": "dynamodb:GetItem", "DescribeTable": "dynamodb:DescribeTable",
	"CreateTable": "dynamodb:CreateTable", "UpdateTimeToLive": "dynamodb:UpdateTimeToLive",
}

// itemActions maps a transaction item's type to its IAM action.
var itemActions = map[string]string{
	"Put": "dynamodb:PutItem", "Update": "dynamodb:UpdateItem", "Delete": "dynamodb:DeleteItem",
	"ConditionCheck": "dynamodb:ConditionCheckItem", "Get": "dynamodb:GetItem",
}

// parseEngine builds the graph of internal/outbox's non-test code.
func parseEngine(t *testing.T) *engineGraph {
	dir := filepath.Join("..", "outbox")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		require.NoError(t, err)
		files = append(files, f)
	}
	byName := map[string][]string{} // a function's or method's bare name -> graph keys
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				byName[fd.Name.Name] = append(byName[fd.Name.Name], funcKey(fd))
			}
		}
	}
	g := &engineGraph{calls: map[string][]string{}, actions: map[string][]string{}}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			k := funcKey(fd)
			add := func(m map[string][]string, v string) {
				if !slices.Contains(m[k], v) {
					m[k] = append(m[k], v)
				}
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					if inner, ok := n.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "db" {
						if a, ok := dbActions[n.Sel.Name]; ok {
							add(g.actions, a)
						}
					}
					if pkg, ok := n.X.(*ast.Ident); ok && pkg.Name == "types" {
						if a, ok := itemActions[n.Sel.Name]; ok {
							add(g.actions, a)
						}
					}
					for _, callee := range byName[n.Sel.Name] {
						add(g.calls, callee)
					}
				case *ast.Ident:
					for _, callee := range byName[n.Name] {
						if !strings.Contains(callee, ".") { // a package-level function
							add(g.calls, callee)
						}
					}
				}
				return true
			})
		}
	}
	return g
}

// funcKey names a function as engineFrames does: "Enqueue" for a method of
// Engine, "journal.put" for a method of another type, "name" for a
// function.
func funcKey(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	id, ok := t.(*ast.Ident)
	if !ok || id.Name == "Engine" {
		return fd.Name.Name
	}
	return id.Name + "." + fd.Name.Name
}

// reach returns the actions the functions reachable from entries may need,
// each with one call path that reaches it (entry first).
func (g *engineGraph) reach(entries []string) map[string][]string {
	path := map[string][]string{}
	var queue []string
	for _, e := range entries {
		if _, ok := path[e]; !ok {
			path[e] = []string{e}
			queue = append(queue, e)
		}
	}
	out := map[string][]string{}
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		for _, a := range g.actions[f] {
			if _, ok := out[a]; !ok {
				out[a] = path[f]
			}
		}
		for _, c := range g.calls[f] {
			if _, ok := path[c]; !ok {
				path[c] = append(slices.Clone(path[f]), c)
				queue = append(queue, c)
			}
		}
	}
	return out
}
