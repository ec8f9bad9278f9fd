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
// A call graph of the engine's source checks the runs' reach: an action a
// function's entry points can reach that no run recorded fails the test
// too (a missing run would otherwise leave the role short, as
// dynamodb:ConditionCheckItem once was), unless staticOnly grants it with
// a reason.
// After a change to what the engine calls, regenerate it with
//
//	go test ./internal/functionroles -run TestRolesAreTheCalls -update
//
// and review the diff. The CDK stack (infra/) grants exactly these
// permissions, and its tests compare the synthesized roles with this file.
package functionroles
