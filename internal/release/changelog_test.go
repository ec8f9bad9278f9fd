package release

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// repoFile reads a file of the repository (this package is internal/release).
func repoFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(path)))
	require.NoError(t, err)
	return b
}

// TestChangelogRecordsTheContracts is the changelog's guard: the table
// layout (outbox.TableInput) and the OpenAPI document may change only
// together with CHANGELOG.md's fingerprint line under Unreleased, which is
// updated when the entry saying what changed (and the operator's Upgrade
// notes) is written.
func TestChangelogRecordsTheContracts(t *testing.T) {
	c, err := Parse(repoFile(t, "CHANGELOG.md"))
	require.NoError(t, err)
	require.True(t, c.Unreleased.HasFingerprint, "CHANGELOG.md: %s has no fingerprint line", UnreleasedHeading)
	now, err := Current(repoFile(t, "internal/httpapi/openapi.json"))
	require.NoError(t, err)
	require.NoError(t, c.Check(now))
}

func TestCheckNamesWhatChangedAndTheLine(t *testing.T) {
	c, err := Parse([]byte(sample))
	require.NoError(t, err)
	rec := c.Unreleased.Fingerprint
	require.NoError(t, c.Check(rec))
	err = c.Check(Fingerprint{Table: "00000000000000ff", OpenAPI: rec.OpenAPI})
	require.ErrorContains(t, err, "the table layout (outbox.TableInput) changed")
	require.NotContains(t, err.Error(), "the HTTP API")
	require.ErrorContains(t, err, "table=00000000000000ff openapi="+rec.OpenAPI)
	err = c.Check(Fingerprint{Table: rec.Table, OpenAPI: "00000000000000ff"})
	require.ErrorContains(t, err, "the HTTP API (internal/httpapi/openapi.json) changed")
	require.ErrorContains(t, err, "make changelog-fingerprint")
	c.Unreleased.HasFingerprint = false
	require.ErrorContains(t, c.Check(rec), "no fingerprint line")
}

// TestChangelogUnreleasedHasEntriesWhenTheContractsMoved: once a release
// recorded its fingerprints, Unreleased differing from them must say why.
func TestChangelogUnreleasedHasEntriesWhenTheContractsMoved(t *testing.T) {
	c, err := Parse(repoFile(t, "CHANGELOG.md"))
	require.NoError(t, err)
	if len(c.Releases) == 0 {
		require.Positive(t, c.Unreleased.Entries, "before the first release, Unreleased lists everything so far")
		return
	}
	last := c.Releases[0]
	if last.HasFingerprint && last.Fingerprint != c.Unreleased.Fingerprint {
		require.Positive(t, c.Unreleased.Entries, "the fingerprints moved since %s but %s lists no entry", last.Heading, UnreleasedHeading)
	}
}

var mdLinkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

func TestChangelogLinksExist(t *testing.T) {
	text := string(repoFile(t, "CHANGELOG.md"))
	for _, path := range []string{"CONTRIBUTING.md", "LICENSE", "docs/design.md", "docs/api.md", "docs/deploy.md", "docs/operations.md", "docs/dynamodb.md", "docs/local.md"} {
		require.Contains(t, text, path)
	}
	for _, m := range mdLinkRE.FindAllStringSubmatch(text, -1) {
		target := m[1]
		if strings.HasPrefix(target, "http") {
			continue
		}
		target, _, _ = strings.Cut(target, "#")
		_, err := os.Stat(filepath.Join("..", "..", filepath.FromSlash(target)))
		require.NoError(t, err, "CHANGELOG.md links %s", m[1])
	}
}

const sample = `# Changelog

Intro.

## [Unreleased]

<!-- fingerprints: table=0000000000000001 openapi=0000000000000002 (x) -->

### Added

- A thing.
- Another
  thing.

### Upgrade notes

- Do this.

[Unreleased]: https://example.com/r/commits/main
`

func TestParse(t *testing.T) {
	c, err := Parse([]byte(sample))
	require.NoError(t, err)
	require.Equal(t, "Unreleased", c.Unreleased.Version)
	require.Equal(t, Fingerprint{Table: "0000000000000001", OpenAPI: "0000000000000002"}, c.Unreleased.Fingerprint)
	require.Equal(t, 3, c.Unreleased.Entries)
	require.Equal(t, []string{"Added", "Upgrade notes"}, c.Unreleased.Subsections)
	require.Empty(t, c.Releases)

	for name, bad := range map[string]string{
		"no unreleased":     "# C\n\n## [0.1.0] - 2026-12-01\n",
		"bad heading":       "## [Unreleased]\n\n## 0.1.0\n",
		"bad subsection":    "## [Unreleased]\n\n### Misc\n",
		"entry outside":     "## [Unreleased]\n\n- loose\n",
		"bad fingerprint":   "## [Unreleased]\n\n<!-- fingerprints: table=xyz -->\n",
		"two releases same": "## [Unreleased]\n\n## [0.1.0] - 2026-12-01\n\n## [0.1.0] - 2026-12-01\n",
	} {
		_, err := Parse([]byte(bad))
		require.Error(t, err, name)
	}
}

func TestCutFirstAndSecondRelease(t *testing.T) {
	out, err := Cut([]byte(sample), "v0.1.0", "2026-12-01", "https://example.com/r")
	require.NoError(t, err)
	c, err := Parse(out)
	require.NoError(t, err)
	require.Zero(t, c.Unreleased.Entries)
	require.True(t, c.Unreleased.HasFingerprint, "Unreleased keeps the fingerprint line: the reference for the next change")
	require.Len(t, c.Releases, 1)
	r := c.Releases[0]
	require.Equal(t, "## [0.1.0] - 2026-12-01", r.Heading)
	require.Equal(t, 3, r.Entries)
	require.Equal(t, c.Unreleased.Fingerprint, r.Fingerprint)
	text := string(out)
	require.Contains(t, text, "Intro.\n\n## [Unreleased]\n\n<!-- fingerprints:")
	require.Contains(t, text, "\n[Unreleased]: https://example.com/r/compare/v0.1.0...HEAD\n[0.1.0]: https://example.com/r/releases/tag/v0.1.0\n")
	require.NotContains(t, text, "commits/main")
	require.Less(t, strings.Index(text, "- A thing."), strings.Index(text, "[Unreleased]: "))

	// Nothing new: no second release.
	_, err = Cut(out, "v0.2.0", "2026-12-02", "https://example.com/r")
	require.ErrorContains(t, err, "nothing under")

	next := strings.Replace(text, "## [0.1.0]", "### Fixed\n\n- A bug.\n\n## [0.1.0]", 1)
	out2, err := Cut([]byte(next), "v0.1.1", "2026-12-02", "https://example.com/r")
	require.NoError(t, err)
	c2, err := Parse(out2)
	require.NoError(t, err)
	require.Len(t, c2.Releases, 2)
	require.Equal(t, "0.1.1", c2.Releases[0].Version)
	require.Equal(t, 1, c2.Releases[0].Entries)
	require.Equal(t, 3, c2.Releases[1].Entries)
	require.Contains(t, string(out2), "[Unreleased]: https://example.com/r/compare/v0.1.1...HEAD\n[0.1.1]: https://example.com/r/compare/v0.1.0...v0.1.1\n[0.1.0]: https://example.com/r/releases/tag/v0.1.0\n")

	_, err = Cut([]byte(next), "v0.1.0", "2026-12-02", "")
	require.ErrorContains(t, err, "released already")
	_, err = Cut([]byte(sample), "0.1.0", "2026-12-02", "")
	require.ErrorContains(t, err, "semantic version")
	_, err = Cut([]byte(sample), "v0.1.0", "yesterday", "")
	require.ErrorContains(t, err, "YYYY-MM-DD")
}

// TestCutTheRepositorysChangelog: make release would succeed on the
// changelog as checked in (right after a release, once an entry is added).
func TestCutTheRepositorysChangelog(t *testing.T) {
	text := repoFile(t, "CHANGELOG.md")
	c, err := Parse(text)
	require.NoError(t, err)
	if c.Unreleased.Entries == 0 {
		// Just released: the next entry goes under Unreleased.
		text = []byte(strings.Replace(string(text), c.Unreleased.Fingerprint.Line(), c.Unreleased.Fingerprint.Line()+"\n\n### Fixed\n\n- A bug.", 1))
	}
	out, err := Cut(text, "v999.0.0", "2026-12-01", "https://github.com/ferryhq/ferry")
	require.NoError(t, err)
	c, err = Parse(out)
	require.NoError(t, err)
	r, ok := c.Release("999.0.0")
	require.True(t, ok)
	require.Positive(t, r.Entries)
	require.Zero(t, c.Unreleased.Entries)
	if len(c.Releases) == 1 {
		require.Greater(t, r.Entries, 20, "the first release lists everything so far")
		require.Contains(t, r.Subsections, "Upgrade notes")
	}
}
