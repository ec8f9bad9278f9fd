// Package eventbridge is the adapter of the built-in "eventbridge" kind: one
// event put on an Amazon EventBridge bus with PutEvents.
//
// The kind is declared an idempotent receiver: EventBridge itself does not
// deduplicate, but every event carries the action id in its detail
// ("ferry_action_id"), the same on every attempt, and consumers must
// deduplicate by it. With that contract a retry after the write fence is
// harmless, and delivery is at least once.
package eventbridge
