// Package version says which build of Ferry is running, so that the command
// line (`ferry version`), every function's cold-start log line, its EMF
// lines, /healthz, the OpenAPI document and the CDK stack's tags all name the
// same build.
//
// The version is, in order: the value stamped at link time (`make build`,
// `make dev` and `make release` stamp `git describe --tags --dirty`), the
// module version Go recorded in the binary's build information (what
// `go install github.com/ferryhq/ferry/cmd/ferry@v0.3.0` or a service
// building Ferry as a library gets), and "devel" when neither is known.
// Releases follow semantic versioning with v0.x.y tags while the table
// layout and the HTTP API may still change (CHANGELOG.md, CONTRIBUTING.md).
package version
