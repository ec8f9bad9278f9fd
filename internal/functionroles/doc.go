// Package functionroles holds the DynamoDB permissions each of Ferry's
// Lambda functions uses, derived from the calls its code makes: roles.json,
// checked in, and Load to read it.
//
// The file is not written by hand. TestRolesAreTheCalls runs each
// function's code paths against the embedded DynamoDB behind a recorder —
// the function handlers themselves (the HTTP API for enqueue, the drainer,
// reaper and retention handlers), and the store conformance suite
// (internal/outbox/storetest) for the paths a handler run cannot reach on
// demand — maps every request to its IAM actions and resources
// (internal/iamaction: each item of a transaction by itself, a Query of an
// index on the index) and fails when the result differs from roles.json.
// After a change to what the engine calls, regenerate it with
//
//	go test ./internal/functionroles -run TestRolesAreTheCalls -update
//
// and review the diff. The CDK stack (infra/) grants exactly these
// permissions, and its tests compare the synthesized roles with this file.
package functionroles
