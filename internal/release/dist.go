package release

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// SumsFile is the file in the dist directory listing each zip's SHA-256, in
// the format sha256sum -c reads.
const SumsFile = "SHA256SUMS"

// ZipName is the name of function fn's deployment package for version tag
// on arch: ferry-drainer-v0.1.0-linux-arm64.zip.
func ZipName(fn, tag, arch string) string {
	return fmt.Sprintf("ferry-%s-%s-linux-%s.zip", fn, tag, arch)
}

// Dist writes one zip per function fn (binDir/<fn>/bootstrap; every one
// binDir holds when fns is empty) into outDir, each holding the bootstrap alone, executable, as Lambda's
// provided runtimes expect, stamped with modified (so that the same
// bootstraps give the same zips), and SumsFile listing their SHA-256. It
// returns the zips' names, sorted.
func Dist(binDir, outDir, tag, arch string, fns []string, modified time.Time) ([]string, error) {
	entries, err := os.ReadDir(binDir)
	if err != nil {
		return nil, err
	}
	if len(fns) > 0 {
		entries = nil
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(binDir, e.Name(), "bootstrap")); err == nil {
			fns = append(fns, e.Name())
		}
	}
	if len(fns) == 0 {
		return nil, fmt.Errorf("no %s/<function>/bootstrap to package", binDir)
	}
	fns = slices.Sorted(slices.Values(fns))
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	var names []string
	var sums strings.Builder
	for _, fn := range fns {
		bootstrap, err := os.ReadFile(filepath.Join(binDir, fn, "bootstrap"))
		if err != nil {
			return nil, err
		}
		z, err := zipBootstrap(bootstrap, modified)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fn, err)
		}
		name := ZipName(fn, tag, arch)
		if err := os.WriteFile(filepath.Join(outDir, name), z, 0o644); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(z)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), name)
		names = append(names, name)
	}
	if err := os.WriteFile(filepath.Join(outDir, SumsFile), []byte(sums.String()), 0o644); err != nil {
		return nil, err
	}
	return names, nil
}

func zipBootstrap(bootstrap []byte, modified time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate, Modified: modified.UTC()}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(bootstrap); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Verify checks every line of dir's SumsFile against the file it names.
func Verify(dir string) error {
	raw, err := os.ReadFile(filepath.Join(dir, SumsFile))
	if err != nil {
		return err
	}
	var bad []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			return fmt.Errorf("%s: bad line %q", SumsFile, line)
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			bad = append(bad, name+": missing")
			continue
		} else if err != nil {
			return err
		}
		got := sha256.Sum256(b)
		if hex.EncodeToString(got[:]) != sum {
			bad = append(bad, name+": sum differs")
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}
