package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/version"
)

// TestVersionCommandAndFlag: `ferry version` and `ferry --version` print
// the same line, the version first.
func TestVersionCommandAndFlag(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		root := newRootCommand()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(args)
		require.NoError(t, root.Execute(), "%v", args)
		require.Equal(t, "ferry "+version.String()+" ("+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH+")\n", out.String(), "%v", args)
	}
}

// TestVersionStampedAtLinkTime builds the command as the Makefile does, with
// the version stamped by -ldflags -X, and runs it.
func TestVersionStampedAtLinkTime(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := filepath.Join(t.TempDir(), "ferry")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X "+version.StampVariable+"=v9.8.7-1-gabcdef0-dirty", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		require.NoError(t, err, arg)
		require.True(t, strings.HasPrefix(string(out), "ferry v9.8.7-1-gabcdef0-dirty ("), "%s printed %q", arg, out)
	}
}
