package infra

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cdkContext returns the context of cdk.json (the feature flags and the
// "ferry" configuration), as the CDK CLI hands it to the app.
func cdkContext(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("cdk.json")
	require.NoError(t, err)
	var cfg struct {
		Context map[string]any `json:"context"`
	}
	require.NoError(t, json.Unmarshal(raw, &cfg))
	return cfg.Context
}

// recommendedFlags reads the feature flags `cdk init` writes for new
// projects from the aws-cdk-lib this module pins (the jsii package inside
// the Go module).
func recommendedFlags(t *testing.T) map[string]any {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/aws/aws-cdk-go/awscdk/v2").Output()
	require.NoError(t, err)
	tgzs, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "jsii", "aws-cdk-lib-*.tgz"))
	require.NoError(t, err)
	require.Len(t, tgzs, 1)
	f, err := os.Open(tgzs[0])
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		require.NoError(t, err, "recommended-feature-flags.json not found in %s", tgzs[0])
		if h.Name != "package/recommended-feature-flags.json" {
			continue
		}
		raw, err := io.ReadAll(tr)
		require.NoError(t, err)
		var flags map[string]any
		require.NoError(t, json.Unmarshal(raw, &flags))
		return flags
	}
}

// TestFeatureFlagsAreTheRecommendedOnes pins cdk.json's feature flags to
// the ones the pinned CDK recommends: a CDK upgrade that recommends a new
// flag fails here until cdk.json has it (and its template diff was looked
// at, docs/deploy.md "Upgrading").
func TestFeatureFlagsAreTheRecommendedOnes(t *testing.T) {
	t.Parallel()
	ctx := cdkContext(t)
	require.Contains(t, ctx, ContextKey, "the stack's configuration stays in the context")
	flags := map[string]any{}
	for k, v := range ctx {
		if k != ContextKey {
			flags[k] = v
		}
	}
	require.Equal(t, recommendedFlags(t), flags)
}
