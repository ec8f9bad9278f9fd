package httpapi

import (
	"encoding/json"
	"os"
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
