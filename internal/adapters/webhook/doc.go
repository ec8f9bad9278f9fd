// Package webhook is the adapter of the built-in "webhook" kind: an HTTP
// request to a URL the user chose, signed the Standard Webhooks way
// (https://www.standardwebhooks.com).
//
// The kind is an idempotent receiver: the webhook-id header is the action id,
// the same on every attempt, and receivers deduplicate by it, so an attempt
// may be retried after its write fence. Destinations are guarded against
// server-side request forgery by internal/adapters/ssrfguard at dial time,
// redirects are never followed, every phase of the request has a timeout
// that ends well inside the engine's write margin, and the response body is
// read only up to a cap.
package webhook
