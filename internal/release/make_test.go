package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// releaseRepo is a git repository holding the project's Makefile and a
// changelog, for the checks make release makes before it changes anything.
func releaseRepo(t *testing.T) (dir string, run func(args ...string) (string, error)) {
	t.Helper()
	for _, tool := range []string{"git", "make", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	dir = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Makefile"), repoFile(t, "Makefile"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "CHANGELOG.md"), []byte(sample), 0o644))
	env := append(outsideMake(os.Environ()), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "MAKEFLAGS=")
	run = func(args ...string) (string, error) {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, c := range [][]string{{"git", "init", "-q"}, {"git", "add", "."}, {"git", "commit", "-q", "-m", "init"}} {
		out, err := run(c...)
		require.NoError(t, err, out)
	}
	return dir, run
}

// outsideMake drops what an enclosing make puts in the environment: run
// under `make release VERSION=v0.1.0` (which runs make test), the variables
// given on its command line are exported to these tests, and a child
// `make release` without VERSION would see the outer one.
func outsideMake(env []string) []string {
	var out []string
	for _, kv := range env {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "VERSION", "RELEASE_SKIP_TEST", "RELEASE_DATE", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// TestMakeReleaseRefuses: without a version, with a malformed one, on a
// dirty tree or over an existing tag, make release stops before it changes
// anything.
func TestMakeReleaseRefuses(t *testing.T) {
	dir, run := releaseRepo(t)
	unchanged := func() {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "CHANGELOG.md"))
		require.NoError(t, err)
		require.Equal(t, sample, string(b))
		out, _ := run("git", "log", "--oneline")
		require.Equal(t, 1, strings.Count(out, "\n"), "no release commit: %s", out)
	}
	out, err := run("make", "release")
	require.Error(t, err)
	require.Contains(t, out, "VERSION=v0.x.y is required")
	out, err = run("make", "release", "VERSION=0.1.0")
	require.Error(t, err)
	require.Contains(t, out, "VERSION=v0.x.y is required (got '0.1.0')")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "stray"), []byte("x"), 0o644))
	out, err = run("make", "release", "VERSION=v0.1.0")
	require.Error(t, err)
	require.Contains(t, out, "the tree is not clean")
	require.Contains(t, out, "stray")
	require.NoError(t, os.Remove(filepath.Join(dir, "stray")))

	out, err = run("git", "tag", "v0.1.0")
	require.NoError(t, err, out)
	out, err = run("make", "release", "VERSION=v0.1.0")
	require.Error(t, err)
	require.Contains(t, out, "tag v0.1.0 exists already")
	unchanged()
}

// TestMakeReleaseRunsTheTestsFirst: by default make release runs make test
// before anything else and stops when it fails (GO=false makes every go
// command fail); RELEASE_SKIP_TEST=1 says loudly that it skipped them.
func TestMakeReleaseRunsTheTestsFirst(t *testing.T) {
	dir, run := releaseRepo(t)
	out, err := run("make", "release", "VERSION=v0.1.0", "GO=false")
	require.Error(t, err)
	require.Contains(t, out, "make --no-print-directory test")
	require.Contains(t, out, "false vet ./...", "make test's first step ran and failed")
	require.NotContains(t, out, "ferry-release cut")

	out, err = run("make", "release", "VERSION=v0.1.0", "GO=false", "RELEASE_SKIP_TEST=1")
	require.Error(t, err)
	require.Contains(t, out, "make test SKIPPED")
	require.NotContains(t, out, "false vet")
	require.Contains(t, out, "false run ./internal/release/cmd/ferry-release cut -version v0.1.0")

	b, err := os.ReadFile(filepath.Join(dir, "CHANGELOG.md"))
	require.NoError(t, err)
	require.Equal(t, sample, string(b))
	out, _ = run("git", "tag")
	require.Empty(t, strings.TrimSpace(out))
}

// TestMakeHelpListsEveryTargetInOneColumn is issue 28 item 15: `make help`
// printed names in a 16-character column, so changelog-fingerprint pushed
// its line out of it. Every documented target is listed once and every
// description starts in the same column.
func TestMakeHelpListsEveryTargetInOneColumn(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	dir := t.TempDir()
	makefile := repoFile(t, "Makefile")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Makefile"), makefile, 0o644))
	cmd := exec.Command("make", "--no-print-directory", "-s", "help")
	cmd.Dir, cmd.Env = dir, append(outsideMake(os.Environ()), "MAKEFLAGS=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var documented []string
	for _, line := range strings.Split(string(makefile), "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && strings.Contains(line, "## ") && !strings.ContainsAny(name, " \t$=") {
			documented = append(documented, name)
		}
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	require.Len(t, lines, len(documented))
	column := -1
	for i, line := range lines {
		fields := strings.Fields(line)
		require.Equal(t, documented[i], fields[0], line)
		at := strings.Index(line[2+len(fields[0]):], fields[1]) + 2 + len(fields[0])
		if column < 0 {
			column = at
		}
		require.Equal(t, column, at, "the description of %s starts in column %d, not %d", fields[0], at, column)
	}
}
