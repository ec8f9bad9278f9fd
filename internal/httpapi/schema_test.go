package httpapi

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

const openAPIURL = "https://ferry.invalid/openapi.json"

var (
	schemaOnce     sync.Once
	schemaCompiler *jsonschema.Compiler
	schemaErr      error
	schemaMu       sync.Mutex
	schemaCache    = map[string]*jsonschema.Schema{}
)

// responseSchema compiles the JSON Schema the OpenAPI document gives for
// one operation's answer with one status.
func responseSchema(t *testing.T, method, path string, status int) *jsonschema.Schema {
	t.Helper()
	esc := func(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }
	return responseSchemaAt(t, fmt.Sprintf("/paths/%s/%s/responses/%d/content/%s/schema",
		esc(path), strings.ToLower(method), status, esc("application/json")))
}

// responseSchemaAt compiles the schema at a JSON pointer of the OpenAPI
// document.
func responseSchemaAt(t *testing.T, ptr string) *jsonschema.Schema {
	t.Helper()
	schemaOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(OpenAPIDocument()))
		if err != nil {
			schemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.AssertFormat()
		schemaErr = c.AddResource(openAPIURL, doc)
		schemaCompiler = c
	})
	require.NoError(t, schemaErr)
	// Percent-encode what a URI fragment cannot hold ({ } in path templates).
	loc := openAPIURL + "#" + strings.NewReplacer("{", "%7B", "}", "%7D").Replace(ptr)
	schemaMu.Lock()
	defer schemaMu.Unlock()
	if s, ok := schemaCache[loc]; ok {
		return s
	}
	s, err := schemaCompiler.Compile(loc)
	require.NoError(t, err, "schema at %s", ptr)
	schemaCache[loc] = s
	return s
}

// requireMatchesSchema checks an answer's body against the OpenAPI
// document's schema for its operation and status.
func requireMatchesSchema(t *testing.T, rt route, status int, body []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	require.NoError(t, err)
	require.NoError(t, responseSchema(t, rt.Method, rt.Path, status).Validate(v),
		"%s %s answered %d with a body the OpenAPI document does not describe: %s", rt.Method, rt.Path, status, body)
}

// TestResponseSchemasBite: the schemas the answers are checked against
// refuse bodies that break the contract.
func TestResponseSchemasBite(t *testing.T) {
	t.Parallel()
	get := route{Method: "GET", Path: "/v1/actions/{id}"}
	for _, body := range []string{
		`{"foo":1}`,
		`{"id":"1-1","kind":"webhook","workspace_id":"a","lane_key":null,"idempotency_key":null,"subject_id":null,"state":"RUNNING","attempt":0,"max_attempts":8,"stop_reason":null,"readback_ref":null,"created_at":"2026-11-29T12:00:00Z","next_attempt_at":null,"expires_at":null,"ended_at":null}`,
		`{"id":"1-1","kind":"webhook","workspace_id":"a","lane_key":null,"idempotency_key":null,"subject_id":null,"state":"DONE","attempt":0,"max_attempts":8,"stop_reason":null,"readback_ref":null,"created_at":"yesterday","next_attempt_at":null,"expires_at":null,"ended_at":null}`,
	} {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
		require.NoError(t, err)
		require.Error(t, responseSchema(t, get.Method, get.Path, 200).Validate(v), body)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"error":{"code":"teapot","message":"x"}}`))
	require.NoError(t, err)
	require.Error(t, responseSchema(t, get.Method, get.Path, 404).Validate(v))
}
