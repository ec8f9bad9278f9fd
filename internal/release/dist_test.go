package release

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDistZipsEachBootstrapWithItsSum(t *testing.T) {
	bin, out := t.TempDir(), t.TempDir()
	for _, fn := range []string{"drainer", "enqueue"} {
		require.NoError(t, os.MkdirAll(filepath.Join(bin, fn), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(bin, fn, "bootstrap"), []byte("ELF "+fn), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(bin, "VERSION"), []byte("v0.1.0\n"), 0o644))
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	names, err := Dist(bin, out, "v0.1.0", "arm64", nil, day)
	require.NoError(t, err)
	require.Equal(t, []string{"ferry-drainer-v0.1.0-linux-arm64.zip", "ferry-enqueue-v0.1.0-linux-arm64.zip"}, names)
	require.NoError(t, Verify(out))

	raw, err := os.ReadFile(filepath.Join(out, names[1]))
	require.NoError(t, err)
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	require.NoError(t, err)
	require.Len(t, zr.File, 1)
	f := zr.File[0]
	require.Equal(t, "bootstrap", f.Name, "Lambda's provided runtimes run ./bootstrap at the zip's root")
	require.Equal(t, os.FileMode(0o755), f.Mode().Perm(), "the bootstrap must be executable")
	rc, err := f.Open()
	require.NoError(t, err)
	body, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.Equal(t, "ELF enqueue", string(body))

	// The same bootstraps give the same zips.
	out2 := t.TempDir()
	_, err = Dist(bin, out2, "v0.1.0", "arm64", nil, day)
	require.NoError(t, err)
	s1, _ := os.ReadFile(filepath.Join(out, SumsFile))
	s2, _ := os.ReadFile(filepath.Join(out2, SumsFile))
	require.Equal(t, string(s1), string(s2))

	// A changed zip fails verification.
	require.NoError(t, os.WriteFile(filepath.Join(out, names[0]), []byte("tampered"), 0o644))
	require.ErrorContains(t, Verify(out), names[0])

	_, err = Dist(t.TempDir(), out, "v0.1.0", "arm64", nil, day)
	require.ErrorContains(t, err, "no ")
	_, err = Dist(bin, out, "v0.1.0", "arm64", []string{"drainer", "reaper"}, day)
	require.ErrorContains(t, err, "reaper", "a named function without a bootstrap is an error")
	names, err = Dist(bin, t.TempDir(), "v0.1.0", "arm64", []string{"enqueue"}, day)
	require.NoError(t, err)
	require.Equal(t, []string{"ferry-enqueue-v0.1.0-linux-arm64.zip"}, names)
}
