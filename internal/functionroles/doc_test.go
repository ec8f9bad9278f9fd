package functionroles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeployDocListsTheRoles keeps docs/deploy.md's permissions table in
// step with roles.json.
func TestDeployDocListsTheRoles(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploy.md"))
	require.NoError(t, err)
	roles, err := Load()
	require.NoError(t, err)
	for _, fn := range Functions {
		var actions []string
		for _, a := range roles[fn][TableResource] {
			actions = append(actions, strings.TrimPrefix(a, "dynamodb:"))
		}
		row := "| " + fn + " | " + strings.Join(actions, ", ") + " |"
		require.Contains(t, string(doc), row, "docs/deploy.md, Permissions: the %s row", fn)
	}
}
