package outbox_test

import (
	"testing"

	"github.com/ferryhq/ferry/internal/release"
)

// TestTableLayoutChangeHasAChangelogEntry: a change to TableInput needs an
// entry under CHANGELOG.md's Unreleased (with the operator's migration
// steps) and its fingerprint line updated; CONTRIBUTING.md, "The
// changelog", says how.
func TestTableLayoutChangeHasAChangelogEntry(t *testing.T) {
	if err := release.CheckRepo("../.."); err != nil {
		t.Fatal(err)
	}
}
