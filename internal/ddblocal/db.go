package ddblocal

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
)

// DB is the embedded DynamoDB engine. Its methods have the signatures of
// *dynamodb.Client's, so a *DB satisfies API and outbox.DynamoDB. It is safe
// for concurrent use; each call is atomic.
type DB struct {
	// mu guards tables and everything in them. Reads share it; every write
	// (including a transaction over several tables) holds it alone, which
	// makes each call atomic and serializable.
	mu     engineLock
	tables map[string]*table
	// scratch is an encoding buffer reused by writes (under mu).
	scratch []byte

	clock    clock.Clock
	region   string
	account  string
	faults   FaultPlan
	sleep    Sleeper
	indexLag func(table, index string) time.Duration
	lagging  atomic.Int64

	ttlDelay  time.Duration
	ttlEvery  time.Duration
	nextSweep time.Time

	tokenWindow time.Duration
	tokens      map[string]tokenRecord
	tokenOrder  []tokenRecord // by commit order, for O(expired) expiry

	changeSeq       uint64
	streams         []*stream // every stream retained, oldest first
	changeRetention time.Duration
	changeLimit     int
	watchMu         sync.Mutex
	watchers        map[int]chan struct{}
	nextWatcher     int

	statsMu sync.Mutex
	stats   map[string]*CapacityStats

	unprocessed *unprocessedPlan // WithUnprocessed
	statusDelay time.Duration    // WithTableStatusDelay
	deleting    map[string]*deletingTable

	// persistence (Open)
	persistent  bool
	snapEvery   int64
	snapSet     bool
	salvage     bool
	disk        diskHooks
	reserveSize int
	recovery    Recovery
	unlockDir   func()
}

// Option configures a DB.
type Option func(*DB)

// WithClock sets the clock that drives TTL sweeps, token windows, index lag
// and change timestamps. The default is the system clock.
func WithClock(c clock.Clock) Option { return func(db *DB) { db.clock = c } }

// WithRegion sets the region and account used in ARNs.
func WithRegion(region, account string) Option {
	return func(db *DB) { db.region, db.account = region, account }
}

// WithFaults installs a fault plan asked once per call.
func WithFaults(p FaultPlan) Option { return func(db *DB) { db.faults = p } }

// WithSeed installs a RandomFaults plan with the given seed and rates.
func WithSeed(seed uint64, rates FaultRates) Option {
	return func(db *DB) { db.faults = NewRandomFaults(seed, rates) }
}

// WithSleeper sets how an injected delay is spent. The default sleeps on
// the real timer; the simulator advances its clock instead.
func WithSleeper(s Sleeper) Option { return func(db *DB) { db.sleep = s } }

// WithIndexLag makes each write reach the global secondary indexes only
// after lag(table, index) has passed on the clock. Base-table reads and
// local secondary indexes are never late.
func WithIndexLag(lag func(table, index string) time.Duration) Option {
	return func(db *DB) { db.indexLag = lag }
}

// WithIndexLagDuration is WithIndexLag with one fixed lag for every index.
func WithIndexLagDuration(d time.Duration) Option {
	return WithIndexLag(func(string, string) time.Duration { return d })
}

// WithTTLDelay sets how long after its TTL an item becomes eligible for the
// sweep (DynamoDB takes up to a few days). The default is 0.
func WithTTLDelay(d time.Duration) Option { return func(db *DB) { db.ttlDelay = d } }

// WithTTLSweepEvery makes the engine run SweepTTL itself, at the start of a
// call, whenever every has passed on the clock since the last sweep. By
// default sweeps happen only when SweepTTL is called.
func WithTTLSweepEvery(every time.Duration) Option { return func(db *DB) { db.ttlEvery = every } }

// WithChangeRetention sets how long change records are kept (DynamoDB
// Streams keeps 24 hours, the default).
func WithChangeRetention(d time.Duration) Option { return func(db *DB) { db.changeRetention = d } }

// WithChangeLimit caps the change records kept per table (the oldest go
// first), so a long-running local stack does not keep every version of
// every item for the whole retention. The default is 1,000,000; 0 or less
// means no cap.
func WithChangeLimit(n int) Option { return func(db *DB) { db.changeLimit = n } }

// New returns an empty engine.
func New(opts ...Option) *DB {
	db := &DB{
		tables:          map[string]*table{},
		deleting:        map[string]*deletingTable{},
		clock:           clock.System{},
		region:          "us-east-1",
		account:         "000000000000",
		sleep:           realSleep,
		tokenWindow:     10 * time.Minute,
		tokens:          map[string]tokenRecord{},
		changeRetention: 24 * time.Hour,
		changeLimit:     1_000_000,
		watchers:        map[int]chan struct{}{},
		stats:           map[string]*CapacityStats{},
	}
	for _, o := range opts {
		o(db)
	}
	if db.ttlEvery > 0 {
		db.nextSweep = db.clock.Now().Add(db.ttlEvery)
	}
	return db
}

// Now returns the engine's clock reading.
func (db *DB) Now() time.Time { return db.clock.Now() }

// call is one API call in progress: its fault decision and its name.
type call struct {
	op    string
	table string
	fault Fault
	db    *DB
}

// begin starts a call: it checks the context, runs a due TTL sweep, asks
// the fault plan and applies the faults that act before the call.
func (db *DB) begin(ctx context.Context, op, tableName string) (*call, error) {
	c := &call{op: op, table: tableName, db: db}
	if err := ctx.Err(); err != nil {
		return nil, opError(op, err)
	}
	db.countCall(tableName, op)
	if writeOps[op] {
		if err := db.admitWrite(); err != nil {
			return nil, opError(op, err)
		}
	}
	if db.ttlEvery > 0 {
		now := db.clock.Now()
		db.mu.Lock()
		if !now.Before(db.nextSweep) {
			db.sweepLocked(now)
		}
		db.mu.Unlock()
	}
	if db.faults == nil {
		return c, nil
	}
	c.fault = db.faults.Decide(Call{Op: op, Table: tableName})
	if c.fault.Delay > 0 {
		if err := db.sleep(ctx, c.fault.Delay); err != nil {
			return nil, opError(op, err)
		}
	}
	switch c.fault.Kind {
	case FaultFailBefore:
		return nil, opError(op, c.injectedErr())
	case FaultThrottle, FaultConflict:
		// A transaction reports both as a cancellation reason of its first
		// action (ThrottlingError, TransactionConflict).
		if op == "TransactWriteItems" || op == "TransactGetItems" {
			break
		}
		if c.fault.Kind == FaultConflict {
			return nil, opError(op, conflictError())
		}
		if c.fault.Err != nil {
			return nil, opError(op, c.fault.Err)
		}
		return nil, opError(op, throughputError())
	}
	return c, nil
}

func (c *call) injectedErr() error {
	if c.fault.Err != nil {
		return c.fault.Err
	}
	return internalError()
}

// finish ends a call: an error passes through wrapped; a success becomes the
// injected error when the plan chose to fail after the commit.
func finish[T any](c *call, out *T, err error) (*T, error) {
	if derr := c.db.durable(); derr != nil {
		return nil, opError(c.op, derr)
	}
	if err != nil {
		return nil, opError(c.op, err)
	}
	if c.fault.Kind == FaultFailAfter {
		return nil, opError(c.op, c.injectedErr())
	}
	return out, nil
}

// lockRead takes the read lock after bringing lagging indexes of the table
// up to the clock (which needs the write lock).
func (db *DB) lockRead(tableName string) {
	if db.lagging.Load() > 0 {
		db.mu.Lock()
		db.catchUpLocked(tableName)
		db.mu.Unlock()
	}
	db.mu.RLock()
}

func (db *DB) catchUpLocked(tableName string) {
	t, ok := db.tables[tableName]
	if !ok {
		return
	}
	now := db.clock.Now()
	for _, ix := range t.indexes {
		if n := ix.catchUp(now); n > 0 {
			db.lagging.Add(-int64(n))
		}
	}
}

// table returns the named table, ValidationException for a name no table
// can have, or ResourceNotFoundException.
func (db *DB) table(name string) (*table, error) {
	t, ok := db.tables[name]
	if !ok {
		if err := validateTableName(name, "tableName"); err != nil {
			return nil, err
		}
		return nil, notFoundError(msgResourceNotFound)
	}
	if db.statusDelay > 0 && db.clock.Now().Before(t.activeAt) {
		return nil, notFoundError(msgResourceNotFound) // still CREATING
	}
	return t, nil
}
