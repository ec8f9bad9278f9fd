// Package release holds what a release of Ferry is made of besides the code:
// the changelog's rules and the release artefacts.
//
//   - CHANGELOG.md (Keep a Changelog): Parse reads it, Cut moves the
//     Unreleased entries under a new version heading (make release).
//   - Fingerprints of the two contracts an upgrade can break: the table
//     layout (outbox.TableInput) and the HTTP API (internal/httpapi/openapi.json).
//     The Unreleased section records them in a comment line; the test
//     TestChangelogRecordsTheContracts fails when either contract changed and
//     the line was not updated, which is done together with writing the
//     entry (and its Upgrade notes) that says what changed:
//     `make changelog-fingerprint` prints the line to paste.
//   - Dist zips each function's bootstrap as a Lambda deployment package and
//     writes SHA256SUMS beside them (dist/).
//
// cmd/ferry-release is the command make release runs.
package release
