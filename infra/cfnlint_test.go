package infra

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cfnLintIgnored are the cfn-lint rules the stack accepts findings of, each
// with its argument. None: every finding so far was fixed instead (W3005,
// the CDK's duplicate dependency of a function on its role, by
// dropRoleDependency; W3037, dynamodb:TransactWriteItems is no IAM action,
// by deriving the roles from the calls).
var cfnLintIgnored = map[string]string{}

// cfnLint finds the cfn-lint executable: $CFN_LINT, else cfn-lint on the
// PATH.
func cfnLint(t *testing.T) string {
	if p := os.Getenv("CFN_LINT"); p != "" {
		return p
	}
	p, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Fatalf("cfn-lint (AWS's CloudFormation linter) is not installed, and make infra-test runs it on the synthesized templates: " +
			"install it with `python3 -m pip install cfn-lint==1.51.0` (Python 3.9 or newer) so that cfn-lint is on the PATH, " +
			"or set CFN_LINT to its path")
	}
	return p
}

// TestCfnLint runs cfn-lint on the templates of the default stack, the
// stack with every provider configured and the JWT stack: zero errors and
// zero warnings, besides the rules cfnLintIgnored argues for.
func TestCfnLint(t *testing.T) {
	lint := cfnLint(t)
	version, err := exec.Command(lint, "--version").CombinedOutput()
	require.NoError(t, err, "%s --version: %s", lint, version)
	t.Logf("%s", strings.TrimSpace(string(version)))
	args := []string{"--format", "parseable"}
	for _, rule := range slices.Sorted(maps.Keys(cfnLintIgnored)) {
		args = append(args, "--ignore-checks", rule)
	}
	dir := t.TempDir()
	for name, s := range map[string]*synthesized{"default": defaultStack(t), "providers": providersStack(t), "jwt": jwtStack(t)} {
		raw, err := json.MarshalIndent(s.json, "", " ")
		require.NoError(t, err)
		path := filepath.Join(dir, name+".template.json")
		require.NoError(t, os.WriteFile(path, raw, 0o644))
		out, err := exec.Command(lint, append(args, path)...).CombinedOutput()
		require.NoError(t, err, "cfn-lint found problems in the %s stack's template:\n%s", name, out)
		require.Empty(t, strings.TrimSpace(string(out)), "cfn-lint on the %s stack's template", name)
	}
}
