package sim

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

// Broken selects deliberately broken variants of the engine or its
// surroundings, to prove that each checker catches its violation. Zero is
// the real engine.
type Broken uint32

// The broken variants.
const (
	// BreakEpochCondition strips the epoch and owner guard from the holder's
	// writes (write fence, outcome, release, lease renewal).
	BreakEpochCondition Broken = 1 << iota
	// BreakPredecessorCheck strips the lane predecessor ConditionCheck from
	// claims and hides predecessors from the claim's pre-read.
	BreakPredecessorCheck
	// BreakClaimFence strips the claim fence: FenceTake always succeeds and
	// claims do not check the fence version.
	BreakClaimFence
	// BreakProviderTwice makes the at-most-once provider stub deliver every
	// call twice.
	BreakProviderTwice
	// BreakKeepPayload keeps the payload of ended actions.
	BreakKeepPayload
	// BreakDropPut acknowledges a keyless, laneless enqueue without writing it.
	BreakDropPut
	// BreakOldBuildKnowsAll gives the older build every kind and variant while
	// the checkers still take it for the older build.
	BreakOldBuildKnowsAll
	// BreakReaperBlind hides the due index and the fence rows' in-flight
	// maps from the reaper.
	BreakReaperBlind
	// BreakSkewBound runs the older build's host with its clock behind by
	// four times the configured ClockSkew: the bound every lease computation
	// relies on does not hold.
	BreakSkewBound
	// BreakReadBackBlind makes the read-back provider stub answer "absent"
	// whatever it holds.
	BreakReadBackBlind
	// BreakNoIdempotencyRecord drops the idempotency record from enqueues
	// (from their transactions, and its written-first put, design.md §4.2).
	BreakNoIdempotencyRecord
	// BreakIdemResend makes the idempotent adapter answer Retry after its
	// receiver accepted the call.
	BreakIdemResend
	// BreakDropJournal acknowledges retention journal writes without
	// writing them (design.md §3.6).
	BreakDropJournal
	// BreakInflightLost drops the in-flight entries a claim records on the
	// fence row (design.md §3.3): claimed actions are then in no index.
	BreakInflightLost
	// BreakUnboundedDeferrals drops a deferral's count and its bounds from
	// its write: the row never shows a run of deferrals, so none ends.
	BreakUnboundedDeferrals
	// BreakSkipRecordStrip acknowledges the idempotency record's strip and
	// TTL after an end without writing it (design.md §3.5).
	BreakSkipRecordStrip
	// BreakRetireKeptBlind hides a partition's action rows from the
	// reaper's retirement check of `kept` (ADR 0011 §2): a partition with
	// ended rows left is retired.
	BreakRetireKeptBlind
	// BreakTailLies writes the lane tail of an enqueue that proposes
	// naming the partition after the one its member is in (ADR 0011 §1).
	BreakTailLies
	// BreakTailCondition strips the condition from the enqueue's lane tail
	// put (design.md §3.4): a tail read stale (ADR 0017) is then acted on.
	BreakTailCondition
	// BreakHeldTTL gives a held lane member's end or tombstone its TTL
	// (ADR 0019): TTL and retention may then delete a link of a lane's
	// chain while an earlier member is live.
	BreakHeldTTL
	// BreakAdmitAnyState strips the state from Admit's condition: an
	// ended action can be admitted again.
	BreakAdmitAnyState
	// BreakDueKeysDropped drops the due index keys from the write that
	// puts an action back to ADMITTED (a retry, a deferral, a release).
	BreakDueKeysDropped
	// BreakItemsWithoutAction drops the action's put from the items
	// EnqueueItems hands a caller (design.md §4.5).
	BreakItemsWithoutAction
	// BreakEvidenceKept acknowledges the deletes of delivery evidence
	// without making them (design.md §3.9: erasure deletes it).
	BreakEvidenceKept
	// BreakListingSkips drops the last entry of a workspace index page
	// that has more after it: a listing's cursor passes it.
	BreakListingSkips
)

// Options describes one run.
type Options struct {
	Seed   uint64
	Steps  int
	Broken Broken
	// KillEnqueues kills enqueue processes between their DynamoDB calls
	// (a quarter of them, after 1 to 3 calls), from a random source of its
	// own: off, a seed runs exactly as it always did. With it the crash
	// between a keyed enqueue's record and its action (design.md §4.2) happens,
	// and resends finish those enqueues.
	KillEnqueues bool
	// Repartition changes the partition count mid-run as a rolling
	// deploy of a new `partitions` does: now and then a new count between
	// 2 and 6 is chosen and hosts take it one by one (old and new counts
	// side by side), up and down; at the end of the steps every host has
	// the last count, and the run drains that many partitions. Its draws
	// come from a source of their own. Today's engine does not support a
	// live change (docs/deploy.md: drain first; ADR 0011, proposed):
	// TestRepartitionIsCaughtByTheCheckers shows what the checkers find.
	Repartition bool
	// OtherBuild, when set, runs the older build's host (old1) on another
	// build's engine (otherbuild.go): the previous release's, generated
	// from its source, beside this build's on the other hosts (design.md
	// §15). That host keeps the older build's kinds. Such a run is Classic:
	// the other build's engine is driven through the entry points of
	// Engine only.
	OtherBuild OtherBuild
	// Classic runs the simulator as it was before issue 27: drainers call
	// DrainPartition one lane group at a time, and no other entry point
	// (entries.go), fault schedule (schedules.go) or check of them runs.
	// The regression seeds (regress_test.go) replay in it what they found.
	Classic bool
}

// Violation is one broken invariant.
type Violation struct {
	Check string // which checker: "nothing-lost", "at-most-once", ...
	Step  int
	Msg   string
}

func (v Violation) String() string { return fmt.Sprintf("step %d: %s: %s", v.Step, v.Check, v.Msg) }

// Result is what one run did and found.
type Result struct {
	Seed       uint64
	Steps      int
	Trace      []byte         // the readable trace (steps, faults, states)
	Violations []Violation    // empty when every invariant held
	Faults     map[string]int // faults injected, by class
	Actions    map[string]int // actions by end state
	Ops        map[string]int // steps by kind
	Calls      map[string]int // exported Engine methods called, by name (entries.go)
}

// Failed reports whether an invariant broke.
func (r *Result) Failed() bool { return len(r.Violations) > 0 }

// Replay is the command that replays the run.
func (r *Result) Replay() string {
	return fmt.Sprintf("make sim SEED=%d STEPS=%d   (or: go test ./internal/sim -run TestSeed -seed=%d -steps=%d)", r.Seed, r.Steps, r.Seed, r.Steps)
}

// simConfig is the engine configuration of every run: small numbers so that
// leases lapse, partitions collide and seq blocks run out within a few
// hundred steps.
var simConfig = outbox.Config{
	Table:       "ferry",
	Partitions:  3,
	Lease:       60 * time.Second,
	WriteMargin: 20 * time.Second,
	RetryBase:   time.Second,
	RetryCap:    30 * time.Second,
	BatchSize:   4,
	MaxAttempts: 4,
	Retention:   time.Hour,
	RowCap:      60,
	ClockSkew:   2 * time.Second,
	StuckAfter:  5 * time.Minute,
	SeqBlock:    4,
	// Small deferral bounds, so that receivers answering 429 with
	// Retry-After 0 reach them within a run.
	MaxDeferrals: 2,
	MaxDeferTime: 15 * time.Second,
}

var epoch0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// host is one deployed build on one machine: an engine with its registry
// and its own (skewed) view of the clock.
type host struct {
	name  string
	idx   int  // seeds its engine's random source
	parts int  // its engine's Config.Partitions
	gen   int  // engines built for it (Options.Repartition)
	old   bool // the older build
	skew  time.Duration
	clk   clock.Offset
	// eng is this build's engine, nil on a host that runs another build's
	// (Options.OtherBuild: other, driven through engine()).
	eng   *outbox.Engine
	other Engine
	reg   *outbox.Registry
	// adapters are reg's, for another build's registry (Options.OtherBuild).
	adapters []outbox.Adapter
	// containers counts the function containers the host started
	// (functions.go: the owner its invocations drain under).
	containers int
}

func (h *host) now() time.Time { return h.clk.Now() }

// engine is the engine the host runs, for the entry points every build
// has (Engine): this build's, or another build's (Options.OtherBuild).
func (h *host) engine() Engine {
	if h.other != nil {
		return h.other
	}
	return h.eng
}

// decodes reports whether this build may touch a row of kind and variant,
// as the checkers see it (the older build does not know kindAMO nor the
// idempotent kind's second variant; no build knows kindFuture).
func (h *host) decodes(kind, variant string) bool {
	switch kind {
	case kindRB:
		return true
	case kindIdem:
		return !h.old || variant == "v1"
	case kindAMO:
		return !h.old
	}
	return false
}

type rates struct {
	failBefore, failAfter, throttle, conflict, delay float64
	maxDelay                                         time.Duration
	kill, hang                                       float64
}

// world is one run.
type world struct {
	// foreignReady: the tables of foreignTable exist.
	foreignReady bool
	opt          Options
	cfg          outbox.Config
	rng          *rand.Rand
	krng         *rand.Rand // Options.KillEnqueues draws
	prng         *rand.Rand // Options.Repartition draws
	// srng draws the schedule of threads within a process (threads.go)
	// and the new steps' choices: a source of its own.
	srng *rand.Rand
	// running is the coroutine process whose thread runs now (nil: none,
	// or an atomic step).
	running *proc
	// streamAt is the table stream's checkpoint: the first change record
	// no stream invocation has taken yet (functions.go).
	streamAt uint64
	// The callers' transactions (caller.go): the table of their own rows
	// made, the transactions prepared and not sent, the rows that were
	// there before their transaction (the caller's own conflict).
	appReady  bool
	pendingTx []*callerTx
	appPre    map[string]bool
	// Delivery evidence (entries.go): the last event sent about each
	// action id, the actions confirmed as gone out.
	events    map[string]outbox.DeliveryEvent
	confirmed map[string]bool
	// lastCursor is the last listing cursor handed out (a bad input forges
	// one from it).
	lastCursor string
	// The fault schedules of the run (schedules.go), the relink storms
	// under way (by the ending action's key: refusals left), and a fault
	// the next DynamoDB call gets.
	sched  schedules
	storms map[string]int
	forced *ddblocal.Fault
	// freezing: a stale holder is frozen (schedules.go freeze) while other
	// drainers run.
	freezing bool
	parts    int // the last partition count a deploy chose (Options.Repartition)
	clk      *clock.Manual
	db       *ddblocal.DB
	wrap     *simDB
	hosts    []*host // hosts[0..2] new build, hosts[3] older build
	future   *host   // a newer build that enqueues kindFuture only
	procs    []*proc // live drainers
	nproc    int
	step     int
	faultsOn bool
	quiet    bool // quiesce phase: providers answer Done
	rt       rates
	maxLag   time.Duration
	ttlDelay time.Duration
	cur      *proc // the process whose DynamoDB call is running
	checking bool  // the checkers are reading: no faults
	feedSeq  uint64
	stopped  bool // a violation was found
	stale    *staleTails
	// ex is the schedule explorer's hold on this run (explore.go; nil in
	// a random run); silent drops the trace and row histories (the
	// explorer replays a failing schedule with them).
	ex     *exRun
	silent bool

	trace bytes.Buffer
	res   *Result

	tokens map[string]*token
	ntok   int
	rows   map[string]*row     // action id -> shadow
	lanes  map[string][]string // "ws/lane" -> action ids in insert order
	fences map[int]fenceState
	// In-flight tracking (design.md §3.3): the seqs in each partition's fence map,
	// and the EXECUTING actions that are not in the due index.
	inflight map[int]map[int64]bool
	outOfDue map[string]bool
	// recCopy: the idempotency records (by pk) that carry a copy of their
	// action, and that action's id (design.md §4.2).
	recCopy map[string]string
	// stripOwed: records (by pk) whose action ended while they still
	// carried its copy; the ending process owes their strip (design.md §3.5:
	// written right after the end lands).
	stripOwed map[string]stripDebt
	// minted: every action id an enqueue answered, and the row key it
	// names (ids are never handed out twice, design.md §3.10).
	minted map[string]string
	calls  []*callRec // provider calls still in flight

	excused map[string]string // live at the end, and why that is allowed
}

type fenceState struct {
	cv    int64
	owner string
}

// token is the simulator's name for one enqueue request: it is in the
// payload ("t") and, when the request has one, the idempotency key.
type token struct {
	name                                string
	kind, variant, ws, lane, subj, ikey string
	propose                             bool
	acked                               bool
	ids                                 []string // actions created for it (a second only after the first is gone)
	execs                               int
	accepted                            []*callRec
	effectRef                           map[string]string // read-back kind: action id -> the provider holds its effect
	maybeSent                           map[string]bool   // at-most-once kind: action id -> a call may have delivered
	// deferring: its receiver answers every call "429, Retry-After: 0"
	// (or deferWait) until the run quiets down.
	deferring bool
	deferWait time.Duration
	// forever: it defers after the run quiets down too (the engine's
	// bounds end it, design.md §7.2).
	forever bool
	// unadmitted: a proposal nobody admits or cancels (the retention
	// schedule's lane "p"); expiresIn: its enqueue expires that long after
	// it (0: as drawn).
	unadmitted bool
	expiresIn  time.Duration
	// strands: its provider hangs on half its calls until the run quiets
	// down (the stranded-lane schedule).
	strands bool
	// loseFirst (the read-back-fail schedule): its first call before the
	// quiet end takes the effect and loses the answer, and its enqueue
	// allows 8 attempts: a later attempt must read back before it calls
	// again. lostFirst: done.
	loseFirst, lostFirst bool
}

// row is the shadow of one action row, kept from the change feed.
type row struct {
	id     string
	item   ddblocal.Item
	tok    *token
	gone   string // why it went ("" while it exists)
	goneAt uint64 // the change that made it go
	hist   []string
	ended  int
	// createdAt is when its insert landed (the indexes show it within
	// the run's lag).
	createdAt time.Time
	// createdSeq and endedSeq are the feed positions of its insert and
	// its end (0: not ended).
	createdSeq, endedSeq uint64
	// goneBy is the process whose write made it go (nil: TTL); evWriter
	// the last process that wrote its delivery evidence (entries.go).
	goneBy, evWriter *proc
	goneCall         int // goneBy's call that made it go
	// endedBy is the process whose write ended the row: it must journal
	// the ending for retention (design.md §3.6) unless it died first.
	endedBy *proc
	// claims are the committed claims of the row by epoch: for a
	// claim-fenced kind (design.md §5) the claim is the reference point of the
	// fencing check.
	claims map[int64]claimRec
	// defers counts the row's deferral writes in a row, and deferSince
	// is when the first of them landed (the deferral-bound checker).
	defers     int
	deferSince time.Time
}

// claimRec is one committed claim of an action.
type claimRec struct {
	owner  string
	fenced bool   // the claim itself set the write fence
	at     uint64 // the change that committed it
}

// callRec is one provider call.
type callRec struct {
	tok      *token
	p        *proc
	id       string
	start    time.Time
	deadline time.Time
	accepted bool
	inflight bool
	flagged  string // the injected ambiguity that excuses a later duplicate
}

func newWorld(opt Options) *world {
	if opt.OtherBuild != nil {
		opt.Classic = true // another build is driven through Engine only
	}
	w := &world{
		opt:       opt,
		cfg:       simConfig.WithDefaults(),
		rng:       rand.New(rand.NewPCG(opt.Seed, opt.Seed^0x5deece66d)),
		krng:      rand.New(rand.NewPCG(opt.Seed, 0x6b696c6c)),
		prng:      rand.New(rand.NewPCG(opt.Seed, 0x70617274)),
		srng:      rand.New(rand.NewPCG(opt.Seed, 0x73636864)),
		clk:       clock.NewManual(epoch0),
		tokens:    map[string]*token{},
		rows:      map[string]*row{},
		lanes:     map[string][]string{},
		fences:    map[int]fenceState{},
		inflight:  map[int]map[int64]bool{},
		outOfDue:  map[string]bool{},
		recCopy:   map[string]string{},
		stripOwed: map[string]stripDebt{},
		minted:    map[string]string{},
		appPre:    map[string]bool{},
		res: &Result{Seed: opt.Seed, Steps: opt.Steps, Faults: map[string]int{}, Actions: map[string]int{},
			Ops: map[string]int{}, Calls: map[string]int{}},
		events:    map[string]outbox.DeliveryEvent{},
		confirmed: map[string]bool{},
		storms:    map[string]int{},
	}
	// The seed draws how hostile this run is.
	r := w.rng
	level := r.Float64()
	w.rt = rates{
		failBefore: level * 0.03 * r.Float64(),
		failAfter:  level * 0.03 * r.Float64(),
		throttle:   level * 0.03 * r.Float64(),
		conflict:   level * 0.03 * r.Float64(),
		delay:      level * 0.08 * r.Float64(),
		maxDelay:   time.Duration(1+r.IntN(30)) * time.Second,
		kill:       0.3 + r.Float64(),
		hang:       level * 0.1,
	}
	w.maxLag = time.Duration(r.IntN(5001)) * time.Millisecond
	w.ttlDelay = time.Duration(r.IntN(4)) * 24 * time.Hour
	w.db = ddblocal.New(
		ddblocal.WithClock(w.clk),
		ddblocal.WithFaults(ddblocal.FaultPlanFunc(w.decide)),
		ddblocal.WithSleeper(func(_ context.Context, d time.Duration) error { w.clk.Advance(d); return nil }),
		ddblocal.WithIndexLag(w.indexLag),
		ddblocal.WithTTLDelay(w.ttlDelay),
		ddblocal.WithChangeRetention(100*365*24*time.Hour),
	)
	w.wrap = &simDB{w: w, db: w.db}
	w.stale = newStaleTails(opt.Seed)
	names := []string{"new1", "new2", "new3", "old1"}
	for i, n := range names {
		skew := time.Duration(r.Int64N(int64(w.cfg.ClockSkew)+1)) - w.cfg.ClockSkew/2
		if i == 3 && opt.Broken&BreakSkewBound != 0 {
			skew = -4 * w.cfg.ClockSkew
		}
		h := &host{name: n, old: i == 3, skew: skew, clk: clock.Offset{Base: w.clk, Skew: skew}}
		h.reg, h.adapters = w.registry(h.old && opt.Broken&BreakOldBuildKnowsAll == 0, false)
		w.hosts = append(w.hosts, h)
	}
	if !opt.Classic {
		w.drawSchedules()
	}
	w.future = &host{name: "next", clk: clock.Offset{Base: w.clk}}
	w.future.reg, w.future.adapters = w.registry(false, true)
	w.parts = w.cfg.Partitions
	for i, h := range append(append([]*host(nil), w.hosts...), w.future) {
		h.idx = i
		w.build(h, w.cfg.Partitions)
	}
	w.tracef(nil, "seed %d steps %d broken %#x: faults before=%.3f after=%.3f throttle=%.3f conflict=%.3f delay=%.3f(max %s) hang=%.3f; index lag <= %s; TTL %s late; skews %s %s %s %s",
		opt.Seed, opt.Steps, uint32(opt.Broken), w.rt.failBefore, w.rt.failAfter, w.rt.throttle, w.rt.conflict, w.rt.delay, w.rt.maxDelay, w.rt.hang,
		w.maxLag, w.ttlDelay, w.hosts[0].skew, w.hosts[1].skew, w.hosts[2].skew, w.hosts[3].skew)
	w.traceSchedules()
	return w
}

// noSleep is the engines' Sleeper: it returns at once.
func noSleep(context.Context, time.Duration) error { return nil }

// build gives h an engine with parts partitions. The first engine of each
// host draws from the source every run always used.
func (w *world) build(h *host, parts int) {
	cfg := w.cfg
	cfg.Partitions = parts
	src := rand.NewPCG(w.opt.Seed+uint64(h.idx)+1, 77)
	if h.gen > 0 {
		src = rand.NewPCG(w.opt.Seed+uint64(h.idx)+1, 77+uint64(h.gen))
	}
	var eng *outbox.Engine
	var other Engine
	var err error
	if h.old && w.opt.OtherBuild != nil {
		other, err = w.opt.OtherBuild(w.wrap, h.clk, h.adapters, cfg, rand.New(src))
	} else {
		// No wait between an enqueue's refused tries: steps are atomic, and
		// a wait would only spend wall time.
		eng, err = outbox.New(w.wrap, h.clk, h.reg, cfg, outbox.WithRand(rand.New(src)), outbox.WithSleeper(noSleep), outbox.WithParallel(w.parallel),
			outbox.WithObserver(observer{w}))
	}
	if err != nil {
		panic(fmt.Sprintf("sim: engine: %v", err))
	}
	h.eng, h.other, h.parts = eng, other, parts
	h.gen++
}

func (w *world) indexLag(string, string) time.Duration {
	if w.maxLag <= 0 {
		return 0
	}
	return time.Duration(w.rng.Int64N(int64(w.maxLag) + 1))
}

// tracef appends one line to the trace: step, time since the start, actor.
func (w *world) tracef(p *proc, format string, args ...any) {
	if w.silent {
		return
	}
	who := "sim"
	if p != nil {
		who = p.name
	}
	fmt.Fprintf(&w.trace, "%04d %10s %-14s ", w.step, fmtDur(w.clk.Now().Sub(epoch0)), who)
	fmt.Fprintf(&w.trace, format, args...)
	w.trace.WriteByte('\n')
}

func fmtDur(d time.Duration) string {
	ms := d.Milliseconds()
	return fmt.Sprintf("+%d:%02d:%02d.%03d", ms/3600000, ms/60000%60, ms/1000%60, ms%1000)
}

// violate records a broken invariant and stops the run.
func (w *world) violate(check string, ids []string, format string, args ...any) {
	v := Violation{Check: check, Step: w.step, Msg: fmt.Sprintf(format, args...)}
	w.res.Violations = append(w.res.Violations, v)
	w.tracef(nil, "VIOLATION %s: %s", check, v.Msg)
	for _, id := range ids {
		w.dumpRow(id)
	}
	w.stopped = true
}

func (w *world) dumpRow(id string) {
	r := w.rows[id]
	if r == nil {
		fmt.Fprintf(&w.trace, "     action %s: never seen\n", id)
		return
	}
	tn := "?"
	if r.tok != nil {
		tn = r.tok.name + " " + r.tok.kind + "/" + r.tok.variant + " lane=" + r.tok.ws + "/" + r.tok.lane + " subj=" + r.tok.subj
		fmt.Fprintf(&w.trace, "     action %s (%s) provider calls=%d accepted=%d\n", id, tn, r.tok.execs, len(r.tok.accepted))
	} else {
		fmt.Fprintf(&w.trace, "     action %s\n", id)
	}
	for _, h := range r.hist {
		fmt.Fprintf(&w.trace, "       %s\n", h)
	}
	if r.gone != "" {
		fmt.Fprintf(&w.trace, "       gone: %s\n", r.gone)
	} else {
		fmt.Fprintf(&w.trace, "       now: %s\n", rowState(r.item))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
