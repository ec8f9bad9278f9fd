package httpapi_test

import (
	"testing"

	"github.com/ferryhq/ferry/internal/release"
)

// TestOpenAPIChangeHasAChangelogEntry: a change to openapi.json needs an
// entry under CHANGELOG.md's Unreleased (and Upgrade notes when clients
// must act) and its fingerprint line updated; CONTRIBUTING.md, "The
// changelog", says how.
func TestOpenAPIChangeHasAChangelogEntry(t *testing.T) {
	if err := release.CheckRepo("../.."); err != nil {
		t.Fatal(err)
	}
}
