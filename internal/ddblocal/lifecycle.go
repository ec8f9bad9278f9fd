package ddblocal

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Table lifecycles. On AWS a new table is CREATING for seconds (item calls
// answer ResourceNotFoundException meanwhile), an updated one UPDATING (a
// new global secondary index backfilling: no reads from it), a deleted one
// DELETING (its name not free yet). Code that skips the waiter passes
// against an engine where everything is ACTIVE at once and fails on AWS.
//
// With WithTableStatusDelay(d), each of these states lasts d on the
// engine's clock, or until the next DescribeTable of the table, whichever
// comes first: a client that waits the way AWS asks (a DescribeTable loop,
// the SDKs' waiters) sees the state once and is not kept sleeping by a
// waiter's 20-second poll, while one that does not wait meets the state.
// The Go API's default is 0 (every state is over at once; the simulator
// and the tests run on manual clocks); `ferry dynamodb` defaults to
// DefaultServerTableStatusDelay.

// DefaultServerTableStatusDelay is how long `ferry dynamodb` keeps a
// table CREATING, UPDATING or DELETING by default.
const DefaultServerTableStatusDelay = time.Second

// WithTableStatusDelay sets how long a table stays CREATING, UPDATING or
// DELETING (at most: a DescribeTable of it ends the state early).
func WithTableStatusDelay(d time.Duration) Option {
	return func(db *DB) { db.statusDelay = max(d, 0) }
}

// lifecycle is a table's transient state.
type lifecycle struct {
	activeAt      time.Time // CREATING before
	updatingUntil time.Time // UPDATING before
}

// deletingTable is a deleted table while it is DELETING.
type deletingTable struct {
	t     *table
	until time.Time
}

func (t *table) status(now time.Time) types.TableStatus {
	switch {
	case now.Before(t.activeAt):
		return types.TableStatusCreating
	case now.Before(t.updatingUntil):
		return types.TableStatusUpdating
	}
	return types.TableStatusActive
}

// settle ends the table's transient states (a DescribeTable saw them).
// Under the write lock.
func (t *table) settle(now time.Time) {
	if now.Before(t.activeAt) {
		t.activeAt = now
	}
	if now.Before(t.updatingUntil) {
		t.updatingUntil = now
	}
	for _, ix := range t.indexes {
		if now.Before(ix.activeAt) {
			ix.activeAt = now
		}
	}
}

// transient reports whether the table or one of its indexes is in a
// transient state at now.
func (t *table) transient(now time.Time) bool {
	if now.Before(t.activeAt) || now.Before(t.updatingUntil) {
		return true
	}
	for _, ix := range t.indexes {
		if now.Before(ix.activeAt) {
			return true
		}
	}
	return false
}

// describeAt describes the table in its state at now, indexes included.
func (t *table) describeAt(now time.Time) *types.TableDescription {
	st := t.status(now)
	d := t.describe(st)
	for i := range d.GlobalSecondaryIndexes {
		g := &d.GlobalSecondaryIndexes[i]
		ix := t.indexByName(aws.ToString(g.IndexName))
		switch {
		case st == types.TableStatusCreating:
			g.IndexStatus = types.IndexStatusCreating
		case ix != nil && now.Before(ix.activeAt):
			g.IndexStatus = types.IndexStatusCreating
			g.Backfilling = aws.Bool(true)
		}
	}
	return d
}

func (t *table) indexByName(name string) *index {
	for _, ix := range t.indexes {
		if ix.schema.name == name {
			return ix
		}
	}
	return nil
}

// inUse refuses a table-administration call on a table in a transient
// state, as DynamoDB does.
func (t *table) inUse(now time.Time) error {
	switch t.status(now) {
	case types.TableStatusCreating:
		return inUseError("Attempt to change a resource which is still in use: Table is being created: " + t.schema.name)
	case types.TableStatusUpdating:
		return inUseError("Attempt to change a resource which is still in use: Table is being updated: " + t.schema.name)
	}
	return nil
}

// deletingNamed returns the DELETING table of that name at now, if any.
func (db *DB) deletingNamed(name string, now time.Time) *deletingTable {
	if d, ok := db.deleting[name]; ok && now.Before(d.until) {
		return d
	}
	return nil
}

// purgeDeleting forgets the deleted tables whose DELETING state is over.
// Under the write lock.
func (db *DB) purgeDeleting(now time.Time) {
	for name, d := range db.deleting {
		if !now.Before(d.until) {
			delete(db.deleting, name)
		}
	}
}

// backfillingError refuses a read from an index still being built.
func backfillingError(name string) error {
	return validationError("Cannot read from backfilling global secondary index: %s", name)
}
