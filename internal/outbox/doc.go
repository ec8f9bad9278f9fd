// Package outbox is Ferry's domain and engine: actions, kinds and their
// adapters, lanes, the state machine, the enqueue, claim, attempt and end
// protocols, the reaper, retention and erasure, and the DynamoDB store they
// run on.
//
// The package imports no provider SDK. Adapters (internal/adapters) import
// it, never the reverse. It talks to DynamoDB only through the DynamoDB
// interface and reads time only through an injected clock.Clock.
package outbox
