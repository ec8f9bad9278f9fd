// Package devstack is what `ferry dev` runs: the whole of Ferry in one
// process on one machine. It wires the embedded DynamoDB (or the endpoint
// named by --dynamodb-endpoint), the HTTP API with bearer tokens, the drainer
// (woken at once by every enqueue and by the table's change feed, and polling
// as a backstop), the reaper and retention on timers, and the built-in
// adapters with a local mail sink.
//
// The stack runs the same engine and the same handlers as the Lambda
// functions; only the triggers differ (goroutines and timers instead of
// EventBridge schedules and DynamoDB Streams).
package devstack
