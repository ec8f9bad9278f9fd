// Package httpapi is Ferry's HTTP API (API.md, "The HTTP API (v1)") as a
// plain net/http handler: the enqueue function serves it behind API Gateway
// and `ferry dev` serves it on a local address.
//
// The handler is strict about what it reads: request bodies are scanned
// before decoding so that duplicate keys (at any depth), invalid UTF-8,
// trailing data and unknown fields are refused with a message naming the
// field, and a refused request never reaches the engine. The principal comes
// from an Authenticator (API Gateway's JWT or IAM authorizer, or bearer tokens
// under `ferry dev`), never from the body, and a principal sees only the
// actions of its own workspaces: another workspace's action answers 404 so
// that its existence does not leak.
//
// The package reaches the engine through the narrow Outbox interface, which
// *outbox.Engine satisfies.
package httpapi
