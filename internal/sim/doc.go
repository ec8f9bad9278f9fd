// Package sim is Ferry's deterministic simulator: it runs the real engine
// (internal/outbox) against the embedded DynamoDB (internal/ddblocal) in
// process, with one seed driving the clock, the order of steps and every
// fault, and checks the invariants of design.md §11 after every step.
//
// # Running it
//
//	make sim SEEDS=1000 STEPS=500   # progress bar, then a summary table
//	make sim SEED=123 STEPS=500     # replay one seed: its whole trace
//	go test ./internal/sim -run TestSeed -seed=123 -steps=500 -simtrace
//	make sim-ci                     # the CI budget (part of make test)
//	make sim-exhaustive             # every schedule of small worlds (explore.go)
//
// # How a run works
//
// One run is single threaded in effect. Drainers are coroutines: the
// DynamoDB client the engines get (simDB) hands control back to the
// scheduler before every call, and the simulated providers do so inside
// every provider call, so the scheduler can interleave drainers with each
// other and with the atomic steps (enqueue, admit/cancel, erasure, reaper,
// retention, TTL sweep, clock moves) at every protocol point: after the
// claim, after the write fence, during the provider call, after it answered
// and before the outcome write. A killed drainer never runs another call.
// Drainers run with Concurrency 1, so no two goroutines ever run at once
// and the same seed replays byte for byte (TestSameSeedSameTrace).
//
// Four hosts share one manual clock, each through clock.Offset with a skew
// within ±ClockSkew/2: three of the newer build and one older build that
// does not know the at-most-once kind nor the second variant of the
// idempotent kind. A third registry (kind "next") enqueues rows no build of
// the run knows: they and the lane members behind them must stay untouched
// and live. The fault plan (ddblocal.FaultPlan) fails calls before or after
// their commit, throttles them, makes them conflict or slows them (the
// sleeper advances the clock); global indexes lag up to 5 s; an eventually
// consistent read of a lane tail may answer the tail as it was up to 5 s
// before (staleread.go, ADR 0017); TTL deletes up to 3 days late. Providers (one per delivery class) answer every outcome,
// fail after accepting, panic, or hang past the lease.
//
// # Checkers
//
// The checkers read the table's change feed (every committed write,
// attributed to the process that made it) and the providers' call records,
// so they judge what landed: nothing lost, ended actions final and shaped
// (stop reason, no payload, TTL), fencing (no write of a stale holder, no
// claim without the partition's current claim fence), rolling upgrades (no
// build writes a row it does not decode), lanes (no start before every
// earlier member ended, never two members in provider calls at once),
// at-most-once, exactly-once for read-back kinds, idempotent duplicates only
// after an injected ambiguity, idempotency of enqueues, the provider call's
// deadline within the lease (fence-margin), and liveness once faults stop.
// TestCheckersCatchBrokenEngines proves each of them against a broken
// variant (Broken).
//
// A lane member that ended out of order and was then deleted (retention,
// TTL) while an earlier member is live used to cut the engine's lane chain
// (design.md §7.3); the lanes invariant now fails on it like on any other early
// start, and on the deletion itself while a live member still names the row
// (ADR 0019).
//
// # The exhaustive mode
//
// Explore (ferry-sim -exhaustive) runs the same engine and checkers over
// every schedule of small worlds within bounds instead of random ones: every
// process is a coroutine, a step is one DynamoDB call (or the end of a
// provider call), and a depth-first search with replay, sleep sets and state
// hashing enumerates the orders of the steps, with up to a given number of
// them failed (a crash, a lost answer, a storm of transaction conflicts) and
// of preemptions. See explore.go.
package sim
