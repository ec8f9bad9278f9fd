// Package outbox is Ferry's domain and engine: actions, kinds and their
// adapters, lanes, the state machine, the enqueue, claim, attempt and end
// protocols, the reaper, retention and erasure, and the DynamoDB store they
// run on.
//
// docs/design.md describes the table and the protocols; comments cite its
// sections. Files by concept: config.go; registry.go and adapter.go (kinds,
// variants, the adapter contract); item.go (attribute names, keys and the
// action row's codec); table.go (the table and its indexes); due.go (the
// due index and its iterator); rowread.go (consistent reads of action rows);
// enqueue.go and idemfirst.go (enqueue; the idempotency record);
// action_read.go (get, list, admit, cancel); claimfence.go (the claim
// fence row's requests); inflight.go (a holder's view of the in-flight map,
// reclaim candidates); candidates.go (due candidates, lane groups and what
// blocks them); claim.go (the claim in its steps); lanewalk.go
// and lanelink.go (lane order past ended members; the lane tail and
// successor links);
// payloadread.go (a batch's rows read once); attempt.go (read-back, write
// fence, execute); outcome.go (the outcome rules and backoff); end.go and
// write.go (ending; the conditions of action writes, settled updates and
// transactions); journal.go (the retention journal);
// drain.go; reap.go; retain.go (retention and erasure). The store
// conformance suite is the storetest package.
//
// The package imports no provider SDK. Adapters (internal/adapters) import
// it, never the reverse. It talks to DynamoDB only through the DynamoDB
// interface and reads time only through an injected clock.Clock.
package outbox
