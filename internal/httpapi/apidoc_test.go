package httpapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAPIDocMatchesOpenAPI compares the routes of docs/api.md's HTTP table
// with the OpenAPI document: a route in one and not the other fails.
func TestAPIDocMatchesOpenAPI(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/api.md")
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\| `(GET|POST|PUT|PATCH|DELETE) (/[^` ?]*)")
	var documented []string
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		documented = append(documented, m[1]+" "+m[2])
	}
	sort.Strings(documented)

	var spec struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	raw, err := os.ReadFile("openapi.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &spec))
	var served []string
	for path, ops := range spec.Paths {
		for method := range ops {
			switch method {
			case "get", "post", "put", "patch", "delete":
				served = append(served, strings.ToUpper(method)+" "+path)
			}
		}
	}
	sort.Strings(served)
	require.NotEmpty(t, served)
	require.Equal(t, served, documented, "docs/api.md's route table and internal/httpapi/openapi.json")
}

// TestStopReasonsAreDocumented is issue 28 item 15: docs/api.md's list of
// stop reasons lacked the webhook's REDIRECT_REFUSED, and the OpenAPI
// document's said nothing of ERASED. Every stop reason the engine and the
// built-in kinds declare (read from their source) is in both, ERASED with
// the word that the API never answers it.
func TestStopReasonsAreDocumented(t *testing.T) {
	t.Parallel()
	declared := regexp.MustCompile(`StopReason = "([A-Z_]+)"`)
	var reasons []string
	for _, dir := range []string{"../outbox", "../adapters/webhook", "../adapters/email", "../adapters/eventbridge"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, m := range declared.FindAllStringSubmatch(string(src), -1) {
				reasons = append(reasons, m[1])
			}
		}
	}
	require.Contains(t, reasons, "REDIRECT_REFUSED")
	require.Contains(t, reasons, "ERASED")
	doc, err := os.ReadFile("../../docs/api.md")
	require.NoError(t, err)
	_, list, ok := strings.Cut(string(doc), "Stop reasons say why an action ended:")
	require.True(t, ok)
	list, _, _ = strings.Cut(list, "\n\n")
	var spec struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Description string `json:"description"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	raw, err := os.ReadFile("openapi.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &spec))
	described := spec.Components.Schemas["Action"].Properties["stop_reason"].Description
	require.NotEmpty(t, described)
	for _, r := range reasons {
		require.Contains(t, list, "`"+r+"`", "docs/api.md's stop reasons")
		require.Regexp(t, `\b`+r+`\b`, described, "openapi.json's stop_reason")
	}
	require.Contains(t, described, "Never ERASED")
}
