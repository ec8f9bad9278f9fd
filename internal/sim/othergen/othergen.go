// Package othergen writes another build's engine for the simulator to run
// beside this build's (design.md §15): the package internal/outbox and
// every internal package it imports, read from a git revision (a release
// tag: the previous release's own source, not a model of it) or from the
// working tree, with their imports moved under internal/sim/otherbuild/.
// The simulator runs that engine on one of its hosts (sim.Options.
// OtherBuild, through internal/sim/othersim, built with the tag
// `otherbuild`).
//
// A toy layout change can be applied to the copy: the harness's own test
// (TestHarnessOnAToyChange) proves with them that a compatible change runs
// clean beside this build and an incompatible one is caught.
package othergen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Module is the module path of the repository.
const Module = "github.com/ferryhq/ferry"

// Dir is where the generated packages go, relative to the repository root
// (Module + "/" + Dir + "/outbox" is the other build's engine).
const Dir = "internal/sim/otherbuild"

// Toys are the toy layout changes Files can apply, by name: a sequence of
// (file, anchor, replacement) edits of the copied source.
var Toys = map[string][]Edit{
	// expand: every action the other build enqueues carries one more
	// attribute, which this build ignores: the first release of a layout
	// change (design.md §15), compatible with the build before it.
	"expand": {{File: "outbox/item.go", Anchor: "\tit[attrKind] = avS(a.Kind)\n",
		With: "\tit[attrKind] = avS(a.Kind)\n\tit[\"toy\"] = avS(a.Kind) // toy layout change (othergen): expand\n"}},
	// fork: the other build keeps a lane's tail under another key, a
	// layout change made without its expand release: a lane one build
	// started is started again by the other, and the lane forks.
	"fork": {{File: "outbox/item.go", Anchor: "func laneTailPK(ws, lane string) string { return \"L#\" + ws + \"#\" + lane }",
		With: "func laneTailPK(ws, lane string) string { return \"T#\" + ws + \"#\" + lane } // toy layout change (othergen): fork"}},
}

// Edit replaces Anchor (which must occur exactly once) in File, a path
// relative to Dir, with With.
type Edit struct {
	File, Anchor, With string
}

// Params says what to generate.
type Params struct {
	Root string // the repository root
	Ref  string // a git revision (a release tag); "" reads the working tree
	Toy  string // a key of Toys, or ""
}

// Files returns the other build's packages, by path relative to Root.
func Files(p Params) (map[string][]byte, error) {
	out := map[string][]byte{}
	queue := []string{"internal/outbox"}
	seen := map[string]bool{"internal/outbox": true}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		names, err := p.list(pkg)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("othergen: %s has no Go files at %s", pkg, p.where())
		}
		for _, name := range names {
			src, err := p.read(pkg + "/" + name)
			if err != nil {
				return nil, err
			}
			imports, err := internalImports(name, src)
			if err != nil {
				return nil, err
			}
			for _, imp := range imports {
				if !seen[imp] {
					seen[imp] = true
					queue = append(queue, imp)
				}
			}
			out[Dir+"/"+strings.TrimPrefix(pkg, "internal/")+"/"+name] = p.rewrite(src)
		}
	}
	if p.Toy != "" {
		if err := applyToy(out, p.Toy); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (p Params) where() string {
	if p.Ref == "" {
		return "the working tree"
	}
	return p.Ref
}

// list names the package's Go files (tests left out).
func (p Params) list(pkg string) ([]string, error) {
	var names []string
	if p.Ref == "" {
		entries, err := os.ReadDir(filepath.Join(p.Root, pkg))
		if err != nil {
			return nil, fmt.Errorf("othergen: %w", err)
		}
		for _, e := range entries {
			names = append(names, e.Name())
		}
	} else {
		raw, err := p.git("ls-tree", "--name-only", p.Ref+":"+pkg)
		if err != nil {
			return nil, err
		}
		names = strings.Fields(string(raw))
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (p Params) read(file string) ([]byte, error) {
	if p.Ref == "" {
		b, err := os.ReadFile(filepath.Join(p.Root, file))
		if err != nil {
			return nil, fmt.Errorf("othergen: %w", err)
		}
		return b, nil
	}
	return p.git("show", p.Ref+":"+file)
}

func (p Params) git(args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = p.Root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("othergen: git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// internalImports lists the repository's internal packages src imports.
func internalImports(name string, src []byte) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
	if err != nil {
		return nil, fmt.Errorf("othergen: %w", err)
	}
	var out []string
	for _, imp := range f.Imports {
		v, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return nil, err
		}
		if rel, ok := strings.CutPrefix(v, Module+"/"); ok && strings.HasPrefix(rel, "internal/") {
			out = append(out, rel)
		}
	}
	return out, nil
}

// rewrite moves src's internal imports under Dir and marks it generated.
func (p Params) rewrite(src []byte) []byte {
	moved := bytes.ReplaceAll(src, []byte(`"`+Module+`/internal/`), []byte(`"`+Module+`/`+Dir+`/`))
	head := fmt.Sprintf("// Code generated by ferry-othergen from %s; DO NOT EDIT.\n\n", p.where())
	return append([]byte(head), moved...)
}

// applyToy makes the edits of toy in files.
func applyToy(files map[string][]byte, toy string) error {
	edits, ok := Toys[toy]
	if !ok {
		return fmt.Errorf("othergen: no toy %q", toy)
	}
	for _, e := range edits {
		f := Dir + "/" + e.File
		src, ok := files[f]
		if !ok {
			return fmt.Errorf("othergen: toy %s: no file %s", toy, f)
		}
		if n := bytes.Count(src, []byte(e.Anchor)); n != 1 {
			return fmt.Errorf("othergen: toy %s: %s holds its anchor %d times, not once (update the toy in othergen.go)", toy, f, n)
		}
		files[f] = bytes.Replace(src, []byte(e.Anchor), []byte(e.With), 1)
	}
	return nil
}

// Write writes files under root, after removing what Dir held.
func Write(root string, files map[string][]byte) error {
	if err := os.RemoveAll(filepath.Join(root, Dir)); err != nil {
		return err
	}
	for name, src := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, src, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Overlay writes files into dir and returns the path of a `go build
// -overlay` file that places them in the repository at root, so a build
// sees them without their being written into the tree.
func Overlay(root, dir string, files map[string][]byte) (string, error) {
	replace := map[string]string{}
	for name, src := range files {
		p := filepath.Join(dir, "src", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, src, 0o644); err != nil {
			return "", err
		}
		replace[filepath.Join(root, filepath.FromSlash(name))] = p
	}
	if len(replace) == 0 {
		return "", errors.New("othergen: no files")
	}
	// Files an earlier ferry-othergen left in the tree that files lacks
	// are hidden from the build.
	_ = filepath.WalkDir(filepath.Join(root, Dir), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if _, ok := replace[p]; !ok {
				replace[p] = ""
			}
		}
		return nil
	})
	raw, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		return "", err
	}
	ov := filepath.Join(dir, "overlay.json")
	return ov, os.WriteFile(ov, raw, 0o644)
}
