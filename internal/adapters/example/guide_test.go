package example_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGuideShowsThisCode keeps docs/adapters.md honest: the adapter it
// prints in full is this package's adapter.go, which the other tests
// compile and run.
func TestGuideShowsThisCode(t *testing.T) {
	t.Parallel()
	guide, err := os.ReadFile("../../../docs/adapters.md")
	require.NoError(t, err)
	code, err := os.ReadFile("adapter.go")
	require.NoError(t, err)
	require.True(t, strings.Contains(string(guide), strings.TrimSpace(string(code))),
		"docs/adapters.md must show internal/adapters/example/adapter.go verbatim")
}
