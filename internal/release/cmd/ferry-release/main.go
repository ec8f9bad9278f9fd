// Command ferry-release is what make release and make changelog-fingerprint
// run (package release says what each step means):
//
//	ferry-release cut -version v0.1.0 -date 2026-12-01 CHANGELOG.md
//	ferry-release dist -version v0.1.0 -bin bin -out dist
//	ferry-release fingerprint [-openapi internal/httpapi/openapi.json]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ferryhq/ferry/internal/release"
)

// Repo is the repository the changelog's links point at.
const Repo = "https://github.com/ferryhq/ferry"

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ferry-release:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: ferry-release cut|dist|fingerprint [flags]")
	}
	fs := flag.NewFlagSet("ferry-release "+args[0], flag.ContinueOnError)
	switch args[0] {
	case "cut":
		version := fs.String("version", "", "the release's tag, v0.x.y")
		date := fs.String("date", time.Now().UTC().Format(time.DateOnly), "the release's date, YYYY-MM-DD")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return fmt.Errorf("cut: name the changelog (CHANGELOG.md)")
		}
		path := fs.Arg(0)
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out, err := release.Cut(text, *version, *date, Repo)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: Unreleased is now %s (%s)\n", path, *version, *date)
		return nil
	case "dist":
		version := fs.String("version", "", "the release's tag, v0.x.y")
		bin := fs.String("bin", "bin", "the directory of <function>/bootstrap")
		out := fs.String("out", "dist", "where the zips and "+release.SumsFile+" go")
		functions := fs.String("functions", "", "the functions to package, space-separated (default: every <function>/bootstrap in -bin)")
		arch := fs.String("arch", "arm64", "the bootstraps' architecture (for the zips' names)")
		date := fs.String("date", time.Now().UTC().Format(time.DateOnly), "the zips' entry time, YYYY-MM-DD")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *version == "" {
			return fmt.Errorf("dist: -version is required")
		}
		mod, err := time.Parse(time.DateOnly, *date)
		if err != nil {
			return fmt.Errorf("dist: -date: %w", err)
		}
		names, err := release.Dist(*bin, *out, *version, *arch, strings.Fields(*functions), mod)
		if err != nil {
			return err
		}
		if err := release.Verify(*out); err != nil {
			return err
		}
		for _, n := range names {
			fmt.Fprintf(stdout, "%s/%s\n", *out, n)
		}
		fmt.Fprintf(stdout, "%s/%s\n", *out, release.SumsFile)
		return nil
	case "fingerprint":
		openapi := fs.String("openapi", "internal/httpapi/openapi.json", "the OpenAPI document")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		doc, err := os.ReadFile(*openapi)
		if err != nil {
			return err
		}
		f, err := release.Current(doc)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, f.Line())
		return nil
	}
	return fmt.Errorf("unknown command %q (cut, dist, fingerprint)", args[0])
}
