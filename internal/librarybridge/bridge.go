// Package librarybridge lets the public test kit (ferrytest) reach the
// engine behind a *ferry.Outbox without the library exporting it: the
// engine's conformance-only entry points (Claim, FenceTake, AttemptFinish,
// the test drain) stay out of the library's front page.
package librarybridge

import "github.com/ferryhq/ferry/internal/outbox"

// EngineOf returns the engine of a *ferry.Outbox; package ferry sets it.
var EngineOf func(outbox any) *outbox.Engine
