package httpapi

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSubjectIdsAreAddressable: the rule for subject ids is that each one
// can be erased by its path, DELETE /v1/subjects/ and the id as one
// percent-encoded segment. "." and ".." cannot (a dot segment is removed
// from a path, even percent-encoded), so enqueue refuses them; every other
// id, "/" and "%" included, enqueues and is erased by its escaped path.
// Before issue 13, "." and ".." were accepted and could not be erased by
// their plain path.
func TestSubjectIdsAreAddressable(t *testing.T) {
	t.Parallel()
	b := setupEngine(t)
	for _, s := range []string{".", ".."} {
		ans := b.do(t, http.MethodPost, "/v1/actions", tokA, `{"kind":"webhook","subject_id":"`+s+`","payload":{"url":"https://example.com/h"}}`)
		require.Equal(t, http.StatusBadRequest, ans.Status, "%s", ans.Body)
		code, field := ans.errorCode(t)
		require.Equal(t, CodeInvalidField, code)
		require.Equal(t, "subject_id", field)
		ans = b.do(t, http.MethodPost, "/v1/actions:batch", tokA, `{"actions":[{"kind":"webhook","subject_id":"`+s+`","payload":{"url":"https://example.com/h"}}]}`)
		_, field = ans.errorCode(t)
		require.Equal(t, "actions[0].subject_id", field)
	}
	require.Zero(t, b.items())
	for _, s := range []string{"a/b", "a/../b", "...", "100%", "x?y#z", " "} {
		ans := b.do(t, http.MethodPost, "/v1/actions", tokA, `{"kind":"webhook","subject_id":"`+s+`","payload":{"url":"https://example.com/h"}}`)
		require.Equal(t, http.StatusCreated, ans.Status, "%q: %s", s, ans.Body)
		ans = b.do(t, http.MethodDelete, "/v1/subjects/"+url.PathEscape(s), tokA, "")
		require.Equal(t, http.StatusOK, ans.Status, "%q: %s", s, ans.Body)
		require.EqualValues(t, 1, ans.json(t)["erased"], "%q", s)
	}
}

// TestEveryAnswerIsJSON: answers the router gives itself are JSON too. A
// path that is not in canonical form answers a JSON 308 to its canonical
// form (before issue 13, //v1/actions/x answered a 307 with an HTML body).
func TestEveryAnswerIsJSON(t *testing.T) {
	t.Parallel()
	b := setupEngine(t)
	for _, tc := range []struct {
		method, path string
		status       int
		location     string
	}{
		{http.MethodGet, "//v1/actions/x", http.StatusPermanentRedirect, "/v1/actions/x"},
		{http.MethodGet, "/v1/actions/../actions/x?y=1", http.StatusPermanentRedirect, "/v1/actions/x?y=1"},
		{http.MethodPost, "/v1/./actions", http.StatusPermanentRedirect, "/v1/actions"},
		{http.MethodDelete, "/v1/subjects/..", http.StatusPermanentRedirect, "/v1"},
		{http.MethodGet, "/nowhere", http.StatusNotFound, ""},
		{http.MethodPut, "/v1/actions", http.StatusMethodNotAllowed, ""},
		{http.MethodGet, "/v1/subjects/a%2F..%2Fb", http.StatusMethodNotAllowed, ""},
	} {
		ans := b.do(t, tc.method, tc.path, tokA, "")
		require.Equal(t, tc.status, ans.Status, "%s %s: %s", tc.method, tc.path, ans.Body)
		require.Equal(t, "application/json", ans.Header.Get("Content-Type"), "%s %s", tc.method, tc.path)
		require.Equal(t, tc.location, ans.Header.Get("Location"), "%s %s", tc.method, tc.path)
		ans.json(t) // parses
		if tc.status == http.StatusPermanentRedirect {
			code, _ := ans.errorCode(t)
			require.Equal(t, CodeMoved, code)
		}
	}
}
