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
//	make sim-coverage               # how much of internal/outbox the runs reach
//	make sim-mutants                # every planted bug on 20 fresh seeds
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
// The work an engine does at once (a drain's lane groups, a sweep's
// partitions, a claim's updates: outbox.WithParallel) becomes threads of
// the process (threads.go), of which exactly one runs at a time, chosen by
// the seed, so the same seed replays byte for byte whatever the
// concurrency (TestSameSeedSameTrace).
//
// The drainer runs in every form a user or a function runs it
// (functions.go, library.go): DrainPartition, the drainer function's
// scheduled sweep (Engine.Sweep, several partitions and lane groups at
// once, its time budget from the function's timeout) and its stream
// invocations (the table's change records since the stream's checkpoint;
// the records of a partition it could not drain are delivered again), the
// API's run-now, Engine.Drain as a user's test calls it, and a library
// driver (FenceTake, Claim, AttemptFinish, FenceRelease). Beside the
// enqueue, the caller's own transaction (caller.go: EnqueueItems, its own
// row, its conflicts, lost answers, late sends, Resolve) and batches;
// delivery evidence (DeliveryRecord, as a coroutine an erasure can
// overtake), listings and reads (reads.go), bad input, late admits and
// cancels, and the operator's PartitionsSet (entries.go). Every exported
// Engine method is called (TestEveryEngineEntryPointIsDriven).
//
// Fault schedules (schedules.go) give each seed weights of its own that
// make rare paths common in some seeds: relink storms, retention while a
// proposal holds its lane past the retention period, clocks at the skew
// bound, lost read-back calls and failing read-backs, receivers deferring
// forever, stale tail reads on one lane, count changes racing enqueues,
// drainers dying at every point, stale holders frozen past their lease
// while another drainer reclaims their action, write fences late in the
// lease (as the drainer's clock reads it), a stranded lane at the front of
// the due index, hot lanes whose enqueues give up (LaneBusyError), the
// older build draining most partitions, two drainers started on one
// partition, reads many times as often. Options.Classic runs the step mix of before them (the regression
// seeds replay in it).
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
// The steps of issue 27 add: a caller's transaction commits its action
// exactly when its own row (caller-tx); delivery evidence never changes an
// action, confirms an UNCERTAIN one at most once and goes with its action
// (evidence); every action a listing selects is listed exactly once, in
// lane order for a lane (listing); a consistent read answers the row as it
// is (get); bad input is refused and changes nothing (bad-input); an
// enqueue that gives up on a busy lane wrote nothing and says why; what
// the engine reports to its Observer holds to the state machine
// (state-machine, observer.go).
// TestCheckersCatchBrokenEngines proves each of them against a broken
// variant (Broken, one per guard of design.md §11: Variants), and make
// sim-mutants measures how many fresh seeds catch each.
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
