package infra

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/jsii-runtime-go"
)

// testAssetDir holds placeholder bootstraps, so the stack's tests do not
// depend on `make build`.
var testAssetDir string

// testVersion is the version testAssetDir's VERSION file names, as
// `make build` writes it.
const testVersion = "v0.4.2-7-gabcdef0-dirty"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ferry-infra-assets-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, fn := range Functions {
		if err := os.MkdirAll(filepath.Join(dir, string(fn)), 0o755); err == nil {
			err = os.WriteFile(filepath.Join(dir, string(fn), FunctionHandler), []byte("placeholder "+fn), 0o755)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, VersionFile), []byte(testVersion+"\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testAssetDir = dir
	code := m.Run()
	jsii.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}
