// Package sim is Ferry's deterministic simulator: it runs the real engine
// (internal/outbox) against the embedded DynamoDB (internal/ddblocal) in
// process, with one seed driving the clock, the order of steps and every
// fault, and checks the invariants of DESIGN.md §5 after every step.
//
// One run is single threaded in effect: drainers are coroutines that the
// scheduler resumes one DynamoDB call (or one provider call) at a time, so
// any interleaving of drainers, the reaper, retention, erasure, enqueues and
// clock moves can happen, and the same seed replays byte for byte. A drainer
// can be killed at any of those points: from then on none of its calls
// reaches DynamoDB or a provider, as if its Lambda had died.
//
// The checkers read the table's change feed (every committed write, with the
// process that made it) and the simulated providers' call records, so they
// judge what landed, not what the engine believes. Each checker is proven by
// a test that runs a deliberately broken variant (Broken) and requires the
// checker to fail.
package sim
