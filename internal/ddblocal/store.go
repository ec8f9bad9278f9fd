package ddblocal

import (
	"bytes"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/btree"
)

// entry is one stored record: the encoded key followed by the encoded item,
// in a single allocation.
type entry struct {
	buf  []byte
	klen uint32
	size uint32 // DynamoDB's size of the item, computed once at write
}

func (e entry) key() []byte  { return e.buf[:e.klen] }
func (e entry) data() []byte { return e.buf[e.klen:] }
func (e entry) item() Item   { return decodeItem(e.data()) }

// makeEntry encodes key and item into one exact-size allocation (so a
// million items do not each carry slack), through scratch, a buffer the
// caller owns (the DB's, under its write lock).
func makeEntry(scratch *[]byte, key []byte, item Item, size int) entry {
	buf := append((*scratch)[:0], key...)
	buf = encodeItem(buf, item)
	*scratch = buf
	exact := make([]byte, len(buf))
	copy(exact, buf)
	return entry{buf: exact, klen: uint32(len(key)), size: uint32(size)}
}

// sizeOf is the stored item's size, 0 for no item.
func sizeOf(e *entry) int {
	if e == nil {
		return 0
	}
	return int(e.size)
}

func entryLess(a, b entry) bool { return bytes.Compare(a.key(), b.key()) < 0 }

func probe(key []byte) entry { return entry{buf: key, klen: uint32(len(key))} }

const btreeDegree = 32

func newTree() *btree.BTreeG[entry] { return btree.NewG(btreeDegree, entryLess) }

// pendingIndexOp is a change to a lagging index, applied once the clock
// reaches visibleAt.
type pendingIndexOp struct {
	visibleAt time.Time
	del       []byte
	put       *entry
}

// index is the stored state of one secondary index.
type index struct {
	activeAt  time.Time // a new global index is backfilling before
	schema    *indexSchema
	tree      *btree.BTreeG[entry]
	sizeBytes int64
	pending   []pendingIndexOp
}

func (ix *index) apply(op pendingIndexOp) {
	if op.del != nil {
		if old, ok := ix.tree.Delete(probe(op.del)); ok {
			ix.sizeBytes -= int64(old.size)
		}
	}
	if op.put != nil {
		if old, ok := ix.tree.ReplaceOrInsert(*op.put); ok {
			ix.sizeBytes -= int64(old.size)
		}
		ix.sizeBytes += int64(op.put.size)
	}
}

// catchUp applies the pending changes that are visible at now, in order,
// and returns how many it applied.
func (ix *index) catchUp(now time.Time) int {
	n := 0
	for n < len(ix.pending) && !ix.pending[n].visibleAt.After(now) {
		ix.apply(ix.pending[n])
		n++
	}
	if n > 0 {
		// Reslicing is O(1); append reallocates (dropping the dead prefix)
		// when the backing array fills.
		ix.pending = ix.pending[n:]
	}
	return n
}

// expiry is an item's place in the TTL order.
type expiry struct {
	at  int64
	key string
}

func expiryLess(a, b expiry) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.key < b.key
}

// table is the stored state of one table.
type table struct {
	lifecycle
	schema    *tableSchema
	items     *btree.BTreeG[entry]
	indexes   []*index
	sizeBytes int64

	ttlAttr    string
	ttlEnabled bool
	expiries   *btree.BTreeG[expiry]

	// stream is the enabled stream (nil: none); streams are the table's
	// streams still retained, oldest first, stream included.
	stream  *stream
	streams []*stream
	tags    map[string]string
	// history is the table's administration calls, for snapshots of a
	// persistent engine.
	history []metaOp
}

func newTable(s *tableSchema) *table {
	t := &table{schema: s, items: newTree()}
	for _, ixs := range s.indexes {
		t.indexes = append(t.indexes, &index{schema: ixs, tree: newTree()})
	}
	return t
}

func (t *table) get(key []byte) (entry, bool) { return t.items.Get(probe(key)) }

// writeOutcome is what commit did beyond the base item.
type writeOutcome struct {
	indexUnits []float64 // write units per index, aligned with t.indexes
}

// commit replaces the item at key with newItem (deleting it when newItem is
// nil) and keeps every index, the TTL order and the change feed exact. The
// caller has validated everything; commit cannot fail.
func (t *table) commit(db *DB, key []byte, old *entry, newItem Item, newSize int, now time.Time, byTTL bool) writeOutcome {
	var oldItem Item
	if old != nil {
		if len(t.indexes) > 0 || t.ttlEnabled {
			oldItem = old.item()
		}
		t.sizeBytes -= int64(old.size)
	}
	var ne *entry
	if newItem != nil {
		e := makeEntry(&db.scratch, key, newItem, newSize)
		ne = &e
		t.items.ReplaceOrInsert(e)
		t.sizeBytes += int64(newSize)
	} else if old != nil {
		t.items.Delete(probe(key))
	}
	out := writeOutcome{indexUnits: make([]float64, len(t.indexes))}
	for i, ix := range t.indexes {
		out.indexUnits[i] = t.commitIndex(db, ix, key, oldItem, newItem, newSize, now)
	}
	if t.ttlEnabled {
		t.trackExpiry(key, oldItem, newItem)
	}
	t.record(db, old, ne, now, byTTL)
	if w := db.mu.wal; w != nil {
		w.addCommit(t.schema.name, key, ne, now, byTTL)
	}
	return out
}

func (t *table) commitIndex(db *DB, ix *index, baseKey []byte, oldItem, newItem Item, newSize int, now time.Time) float64 {
	s := t.schema
	var oldKey, newKey []byte
	var inOld, inNew bool
	if oldItem != nil {
		oldKey, inOld = s.indexKey(ix.schema, oldItem, baseKey)
	}
	if newItem != nil {
		newKey, inNew = s.indexKey(ix.schema, newItem, baseKey)
	}
	var ops []pendingIndexOp
	units := 0.0
	project := func(item Item, size int) (Item, int) {
		if ix.schema.projection == types.ProjectionTypeAll {
			return item, size
		}
		p := ix.schema.project(item, s.keys)
		return p, sizeOfItem(p)
	}
	switch {
	case !inOld && !inNew:
		return 0
	case inOld && !inNew:
		ops = append(ops, pendingIndexOp{del: oldKey})
		_, sz := project(oldItem, sizeOfItem(oldItem))
		units = writeUnits(sz)
	case !inOld && inNew:
		np, sz := project(newItem, newSize)
		e := makeEntry(&db.scratch, newKey, np, sz)
		ops = append(ops, pendingIndexOp{put: &e})
		units = writeUnits(sz)
	case bytes.Equal(oldKey, newKey):
		op := ix.schema.project(oldItem, s.keys)
		np, sz := project(newItem, newSize)
		e := makeEntry(&db.scratch, newKey, np, sz)
		if bytes.Equal(e.data(), encodeItem(nil, op)) {
			return 0 // nothing the index keeps changed: no index write
		}
		ops = append(ops, pendingIndexOp{put: &e})
		units = writeUnits(sz)
	default:
		_, osz := project(oldItem, sizeOfItem(oldItem))
		np, sz := project(newItem, newSize)
		e := makeEntry(&db.scratch, newKey, np, sz)
		ops = append(ops, pendingIndexOp{del: oldKey}, pendingIndexOp{put: &e})
		units = writeUnits(osz) + writeUnits(sz)
	}
	lag := time.Duration(0)
	if ix.schema.global && db.indexLag != nil {
		lag = db.indexLag(s.name, ix.schema.name)
	}
	if lag <= 0 && len(ix.pending) == 0 {
		for _, op := range ops {
			ix.apply(op)
		}
		return units
	}
	for _, op := range ops {
		op.visibleAt = now.Add(lag)
		ix.pending = append(ix.pending, op)
	}
	db.lagging.Add(int64(len(ops)))
	return units
}
