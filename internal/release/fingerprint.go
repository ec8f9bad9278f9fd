package release

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Fingerprint names a version of the two contracts an upgrade can break:
// the table layout and the HTTP API, each by the first 16 hex digits of a
// SHA-256 of its canonical form.
type Fingerprint struct {
	Table   string
	OpenAPI string
}

// Line is the changelog's fingerprint comment for f.
func (f Fingerprint) Line() string {
	return fmt.Sprintf("<!-- fingerprints: table=%s openapi=%s (outbox.TableInput, internal/httpapi/openapi.json; see CONTRIBUTING.md) -->", f.Table, f.OpenAPI)
}

// Current computes the fingerprint of this checkout: outbox.TableInput and
// openapi, the checked-in OpenAPI document.
func Current(openapi []byte) (Fingerprint, error) {
	t, err := TableFingerprint()
	if err != nil {
		return Fingerprint{}, err
	}
	o, err := OpenAPIFingerprint(openapi)
	if err != nil {
		return Fingerprint{}, err
	}
	return Fingerprint{Table: t, OpenAPI: o}, nil
}

// TableFingerprint hashes the CreateTable input of the layout
// (outbox.TableInput) as JSON: keys, attribute types, indexes, projections,
// streams, billing. The table's name is fixed, so only the layout counts.
func TableFingerprint() (string, error) {
	raw, err := json.Marshal(outbox.TableInput("ferry"))
	if err != nil {
		return "", fmt.Errorf("table layout: %w", err)
	}
	return short(raw), nil
}

// OpenAPIFingerprint hashes the OpenAPI document in a canonical form
// (object keys sorted, no whitespace) without info.version, which the build
// fills in: layout and key order of the file do not count, any change of
// its content does.
func OpenAPIFingerprint(doc []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("OpenAPI document: %w", err)
	}
	if info, ok := v["info"].(map[string]any); ok {
		delete(info, "version")
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("OpenAPI document: %w", err)
	}
	return short(raw), nil
}

func short(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// CheckRepo runs Changelog.Check on the checkout at root: its CHANGELOG.md
// against its OpenAPI document and this build's outbox.TableInput. The
// tests of internal/outbox and internal/httpapi call it too, so that a
// change to either contract fails the tests of the package changed.
func CheckRepo(root string) error {
	text, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		return err
	}
	c, err := Parse(text)
	if err != nil {
		return err
	}
	doc, err := os.ReadFile(filepath.Join(root, "internal", "httpapi", "openapi.json"))
	if err != nil {
		return err
	}
	now, err := Current(doc)
	if err != nil {
		return err
	}
	return c.Check(now)
}
