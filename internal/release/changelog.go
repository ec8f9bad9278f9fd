package release

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// UnreleasedHeading is the heading of the section entries are added under.
const UnreleasedHeading = "## [Unreleased]"

// Subsections are the headings an entry may sit under (Keep a Changelog's,
// and Ferry's Upgrade notes: what an operator does when the table layout, an
// IAM grant, a stop reason, the API or a flag changed).
var Subsections = []string{"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security", "Upgrade notes"}

// Section is one "## " section of the changelog.
type Section struct {
	Heading     string // the whole heading line, "## [0.1.0] - 2026-12-01"
	Version     string // "Unreleased" or "0.1.0"
	Date        string // "" for Unreleased
	Fingerprint Fingerprint
	// HasFingerprint reports whether the section carries a fingerprint line.
	HasFingerprint bool
	// Entries counts the list items ("- ") directly under its subsections.
	Entries int
	// Subsections lists its "### " headings in order.
	Subsections []string
	start, end  int // byte offsets of the section in the changelog
}

// Changelog is a parsed CHANGELOG.md.
type Changelog struct {
	Text       []byte
	Unreleased Section
	Releases   []Section // newest first, as written
}

var (
	versionHeadingRE = regexp.MustCompile(`^## \[(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)\] - (\d{4}-\d{2}-\d{2})$`)
	fingerprintRE    = regexp.MustCompile(`^<!-- fingerprints: table=([0-9a-f]{16}) openapi=([0-9a-f]{16}) .*-->$`)
	semverTagRE      = regexp.MustCompile(`^v(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)$`)
	dateRE           = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
)

// Parse reads a changelog: an Unreleased section first, then one section
// per release, newest first.
func Parse(text []byte) (*Changelog, error) {
	c := &Changelog{Text: text}
	var sections []Section
	var cur *Section
	off := 0
	inComment := false
	for _, line := range strings.SplitAfter(string(text), "\n") {
		l := strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(l, "## "):
			if cur != nil {
				cur.end = off
				sections = append(sections, *cur)
			}
			cur = &Section{Heading: l, start: off}
			if l == UnreleasedHeading {
				cur.Version = "Unreleased"
			} else if m := versionHeadingRE.FindStringSubmatch(l); m != nil {
				cur.Version, cur.Date = m[1], m[2]
			} else {
				return nil, fmt.Errorf("changelog: heading %q is neither %q nor \"## [x.y.z] - YYYY-MM-DD\"", l, UnreleasedHeading)
			}
		case cur == nil:
		case strings.HasPrefix(l, "<!-- fingerprints:"):
			m := fingerprintRE.FindStringSubmatch(l)
			if m == nil {
				return nil, fmt.Errorf("changelog: %s: fingerprint line %q is not \"<!-- fingerprints: table=<16 hex> openapi=<16 hex> ... -->\"", cur.Heading, l)
			}
			if cur.HasFingerprint {
				return nil, fmt.Errorf("changelog: %s has two fingerprint lines", cur.Heading)
			}
			cur.Fingerprint, cur.HasFingerprint = Fingerprint{Table: m[1], OpenAPI: m[2]}, true
		case strings.HasPrefix(l, "<!--") && !strings.Contains(l, "-->"):
			inComment = true
		case inComment:
			inComment = !strings.Contains(l, "-->")
		case strings.HasPrefix(l, "### "):
			name := strings.TrimPrefix(l, "### ")
			if !known(name) {
				return nil, fmt.Errorf("changelog: %s: subsection %q is not one of %s", cur.Heading, name, strings.Join(Subsections, ", "))
			}
			cur.Subsections = append(cur.Subsections, name)
		case strings.HasPrefix(l, "- "):
			if len(cur.Subsections) == 0 {
				return nil, fmt.Errorf("changelog: %s: entry %q sits under no subsection", cur.Heading, trim(l))
			}
			cur.Entries++
		}
		off += len(line)
	}
	if cur != nil {
		cur.end = off
		sections = append(sections, *cur)
	}
	if len(sections) == 0 || sections[0].Version != "Unreleased" {
		return nil, fmt.Errorf("changelog: the first section must be %q", UnreleasedHeading)
	}
	c.Unreleased = sections[0]
	seen := map[string]bool{}
	for _, s := range sections[1:] {
		if s.Version == "Unreleased" {
			return nil, errors.New("changelog: two Unreleased sections")
		}
		if seen[s.Version] {
			return nil, fmt.Errorf("changelog: two sections for %s", s.Version)
		}
		seen[s.Version] = true
		c.Releases = append(c.Releases, s)
	}
	return c, nil
}

func known(sub string) bool {
	for _, s := range Subsections {
		if s == sub {
			return true
		}
	}
	return false
}

func trim(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// Release returns the section of version ("0.1.0"), if any.
func (c *Changelog) Release(version string) (Section, bool) {
	for _, s := range c.Releases {
		if s.Version == version {
			return s, true
		}
	}
	return Section{}, false
}

// Cut moves the Unreleased entries of text under a new section for tag
// (v0.1.0) dated date (YYYY-MM-DD), newest first; Unreleased keeps its
// fingerprint line and nothing else, and the new section gets a copy of it
// (what the released contracts were). The link references at the end
// (Keep a Changelog's "[Unreleased]: ..." lines) follow when repo names the
// repository's URL.
func Cut(text []byte, tag, date, repo string) ([]byte, error) {
	m := semverTagRE.FindStringSubmatch(tag)
	if m == nil {
		return nil, fmt.Errorf("version %q is not a semantic version tag (v0.1.0)", tag)
	}
	v := m[1]
	if !dateRE.MatchString(date) {
		return nil, fmt.Errorf("date %q is not YYYY-MM-DD", date)
	}
	c, err := Parse(text)
	if err != nil {
		return nil, err
	}
	if _, ok := c.Release(v); ok {
		return nil, fmt.Errorf("changelog: %s is released already", v)
	}
	u := c.Unreleased
	if u.Entries == 0 {
		return nil, fmt.Errorf("changelog: nothing under %s to release as %s", UnreleasedHeading, v)
	}
	if !u.HasFingerprint {
		return nil, fmt.Errorf("changelog: %s has no fingerprint line (make changelog-fingerprint)", UnreleasedHeading)
	}
	// The body of Unreleased without its heading and fingerprint line.
	var body, fp []string
	lines := strings.SplitAfter(string(text[u.start:u.end]), "\n")
	for _, line := range lines[1:] {
		if strings.HasPrefix(line, "<!-- fingerprints:") {
			fp = append(fp, line)
			continue
		}
		body = append(body, line)
	}
	// Link references sit after the last section: keep them apart.
	rest := string(text[u.end:])
	tail := ""
	if len(c.Releases) == 0 {
		body, tail = splitLinks(body)
	}
	var out bytes.Buffer
	out.Write(text[:u.start])
	out.WriteString(UnreleasedHeading + "\n\n")
	out.WriteString(strings.Join(fp, ""))
	out.WriteString("\n")
	fmt.Fprintf(&out, "## [%s] - %s\n\n", v, date)
	out.WriteString(strings.Join(fp, ""))
	out.WriteString("\n")
	out.WriteString(strings.TrimLeft(strings.Join(body, ""), "\n"))
	if len(c.Releases) == 0 {
		out.WriteString(links(tail, tag, "", repo))
	} else {
		prev := "v" + c.Releases[0].Version
		rest = links(rest, tag, prev, repo)
		out.WriteString(rest)
	}
	return out.Bytes(), nil
}

// splitLinks takes the link reference lines ("[x]: url") off the end of
// lines.
func splitLinks(lines []string) ([]string, string) {
	i := len(lines)
	for i > 0 {
		l := strings.TrimSpace(lines[i-1])
		if l == "" || (strings.HasPrefix(l, "[") && strings.Contains(l, "]: ")) {
			i--
			continue
		}
		break
	}
	return lines[:i], strings.Join(lines[i:], "")
}

var unreleasedLinkRE = regexp.MustCompile(`(?m)^\[Unreleased\]: .*\n?`)

// links rewrites the link references in text for a new release tag (prev
// is the release before it, "" for the first).
func links(text, tag, prev, repo string) string {
	if repo == "" {
		return text
	}
	ref := fmt.Sprintf("[%s]: %s/releases/tag/%s\n", strings.TrimPrefix(tag, "v"), repo, tag)
	if prev != "" {
		ref = fmt.Sprintf("[%s]: %s/compare/%s...%s\n", strings.TrimPrefix(tag, "v"), repo, prev, tag)
	}
	unrel := fmt.Sprintf("[Unreleased]: %s/compare/%s...HEAD\n", repo, tag)
	if unreleasedLinkRE.MatchString(text) {
		return unreleasedLinkRE.ReplaceAllLiteralString(text, unrel+ref)
	}
	text = strings.TrimRight(text, "\n")
	if text != "" {
		text += "\n"
	}
	return text + "\n" + unrel + ref
}

// Check reports whether the fingerprint line under Unreleased matches now,
// the fingerprint of this checkout; its error says what changed and the
// line to write once the entry is written.
func (c *Changelog) Check(now Fingerprint) error {
	if !c.Unreleased.HasFingerprint {
		return fmt.Errorf("CHANGELOG.md: %s has no fingerprint line; add this one:\n\n%s", UnreleasedHeading, now.Line())
	}
	rec := c.Unreleased.Fingerprint
	var changed []string
	if now.Table != rec.Table {
		changed = append(changed, "the table layout (outbox.TableInput)")
	}
	if now.OpenAPI != rec.OpenAPI {
		changed = append(changed, "the HTTP API (internal/httpapi/openapi.json)")
	}
	if len(changed) == 0 {
		return nil
	}
	return fmt.Errorf("%s changed since CHANGELOG.md's last entry for it.\n"+
		"Say what changed under %s (Added/Changed/Fixed, and Upgrade notes when an operator or a client must act),\n"+
		"then replace the fingerprint line under it with this one (make changelog-fingerprint prints it):\n\n%s\n\n"+
		"CONTRIBUTING.md, \"The changelog\", explains", strings.Join(changed, " and "), UnreleasedHeading, now.Line())
}
