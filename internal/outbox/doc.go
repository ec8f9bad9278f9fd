// Package outbox is Ferry's domain and engine: actions, kinds and their
// adapters, lanes, the state machine, the enqueue, claim, attempt and end
// protocols, the reaper, retention and erasure, and the DynamoDB store they
// run on.
//
// Files by concept: config.go, registry.go (kinds and variants), item.go
// (the table's names and the action codec), table.go (the table and its
// indexes), enqueue.go, action_read.go (get, list, admit, cancel), claim.go
// (claim fence and batch claim), lanewalk.go (lane order past ended
// members), attempt.go (read-back, write fence, execute, outcome), outcome.go
// (the outcome rules and backoff), end.go, write.go (ambiguous writes),
// drain.go, reap.go, retain.go (retention and erasure). The store conformance
// suite is the storetest package; docs/adr/0001 and 0002 record the layout
// and the protocols.
//
// The package imports no provider SDK. Adapters (internal/adapters) import
// it, never the reverse. It talks to DynamoDB only through the DynamoDB
// interface and reads time only through an injected clock.Clock.
package outbox
