package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/version"
)

type openAPIDoc struct {
	OpenAPI string `json:"openapi"`
	Paths   map[string]map[string]struct {
		OperationID string                     `json:"operationId"`
		Responses   map[string]json.RawMessage `json:"responses"`
	} `json:"paths"`
}

// documentedStatuses is every status route rt may answer, as the OpenAPI
// document must list it.
func documentedStatuses(rt route) []int {
	out := append([]int{http.StatusPermanentRedirect, http.StatusInternalServerError}, rt.Statuses...)
	if rt.Auth {
		out = append(out, authStatuses...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func routeFor(h *Handler, r *http.Request) (route, bool) {
	_, pattern := h.mux.Handler(r)
	for _, rt := range h.routes {
		if rt.Method+" "+rt.Path == pattern {
			return rt, true
		}
	}
	return route{}, false
}

// TestOpenAPIMatchesRoutes walks the router's routes and the document's
// operations and requires the same methods, paths and response codes both
// ways, and that the router serves each documented path.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var doc openAPIDoc
	require.NoError(t, json.Unmarshal(OpenAPIDocument(), &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)

	type op struct{ method, path string }
	var fromRoutes, fromDoc []op
	for _, rt := range b.h.routes {
		fromRoutes = append(fromRoutes, op{rt.Method, rt.Path})
		ops, ok := doc.Paths[rt.Path]
		require.True(t, ok, "path %s is not documented", rt.Path)
		o, ok := ops[strings.ToLower(rt.Method)]
		require.True(t, ok, "%s %s is not documented", rt.Method, rt.Path)
		require.NotEmpty(t, o.OperationID)
		var codes []int
		for c := range o.Responses {
			n, err := strconv.Atoi(c)
			require.NoError(t, err, "response code %q", c)
			codes = append(codes, n)
		}
		slices.Sort(codes)
		require.Equal(t, documentedStatuses(rt), codes, "responses of %s %s", rt.Method, rt.Path)
	}
	for path, ops := range doc.Paths {
		for method := range ops {
			m := strings.ToUpper(method)
			fromDoc = append(fromDoc, op{m, path})
			concrete := strings.NewReplacer("{id}", "0-1", "{subject_id}", "s1").Replace(path)
			rt, ok := routeFor(b.h, httptest.NewRequest(m, concrete, nil))
			require.True(t, ok, "the router does not serve %s %s", m, concrete)
			require.Equal(t, path, rt.Path)
		}
	}
	cmp := func(x, y op) int { return strings.Compare(x.method+x.path, y.method+y.path) }
	slices.SortFunc(fromRoutes, cmp)
	slices.SortFunc(fromDoc, cmp)
	require.Equal(t, fromRoutes, fromDoc)
}

// TestOpenAPIInfoVersion: the document is served with the build's version
// as info.version, and stamping a version changes nothing else, byte for
// byte (a "version" key elsewhere is left alone).
func TestOpenAPIInfoVersion(t *testing.T) {
	t.Parallel()
	var served struct {
		Info struct {
			Version string `json:"version"`
		} `json:"info"`
	}
	require.NoError(t, json.Unmarshal(OpenAPIDocument(), &served))
	require.Equal(t, version.String(), served.Info.Version)

	for _, tc := range []struct{ name, doc, want string }{
		{"Document", string(openAPIDocument), ""},
		{"Compact", `{"openapi":"3.1.0","info":{"title":"t","version":"devel"},"x":1}`,
			`{"openapi":"3.1.0","info":{"title":"t","version":"v1.2.3-4-gabcdef0"},"x":1}`},
		{"OtherVersionKeysFirst", `{"version":"a","paths":{"info":{"version":"b"}},"info" : { "x":[{"version":"c"}], "version" : "devel" }}`,
			`{"version":"a","paths":{"info":{"version":"b"}},"info" : { "x":[{"version":"c"}], "version" : "v1.2.3-4-gabcdef0" }}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := withInfoVersion([]byte(tc.doc), "v1.2.3-4-gabcdef0")
			require.NoError(t, err)
			if tc.want != "" {
				require.Equal(t, tc.want, string(got))
				return
			}
			var before, after map[string]any
			require.NoError(t, json.Unmarshal([]byte(tc.doc), &before))
			require.NoError(t, json.Unmarshal(got, &after))
			require.Equal(t, "v1.2.3-4-gabcdef0", after["info"].(map[string]any)["version"])
			before["info"].(map[string]any)["version"] = "v1.2.3-4-gabcdef0"
			require.Equal(t, before, after)
		})
	}
	_, err := withInfoVersion([]byte(`{"info":{"title":"no version"},"version":"x"}`), "v1")
	require.Error(t, err)
}
