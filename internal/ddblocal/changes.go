package ddblocal

import (
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Change is one record of a table's change feed, like a DynamoDB Streams
// record: what happened to one item, in commit order.
type Change struct {
	// Seq increases with every change in the engine (across tables).
	Seq uint64
	// Table is the table's name.
	Table string
	// EventName is INSERT, MODIFY or REMOVE.
	EventName string
	// Keys is the item's primary key.
	Keys Item
	// OldImage and NewImage are present as the table's StreamViewType says.
	OldImage Item
	NewImage Item
	// At is the engine clock's time of the change.
	At time.Time
	// ByTTL marks a deletion by the TTL sweep (DynamoDB Streams names the
	// principal "dynamodb.amazonaws.com" in userIdentity).
	ByTTL bool
}

// Change event names.
const (
	EventInsert = "INSERT"
	EventModify = "MODIFY"
	EventRemove = "REMOVE"
)

type changeRecord struct {
	seq      uint64
	at       time.Time
	event    string
	old, new []byte // encoded items, nil when absent or not kept
	keys     []byte // encoded key attributes
	byTTL    bool
}

// record appends the change of one commit to the table's current stream,
// when it has one. A write that changes nothing writes no record, as in
// DynamoDB Streams.
func (t *table) record(db *DB, old, ne *entry, now time.Time, byTTL bool) {
	st := t.stream
	if st == nil {
		return
	}
	if old == nil && ne == nil {
		return
	}
	if old != nil && ne != nil && string(old.data()) == string(ne.data()) {
		return
	}
	db.changeSeq++
	r := changeRecord{seq: db.changeSeq, at: now, byTTL: byTTL}
	var img Item
	switch {
	case old == nil:
		r.event = EventInsert
		img = ne.item()
	case ne == nil:
		r.event = EventRemove
		img = old.item()
	default:
		r.event = EventModify
		img = ne.item()
	}
	r.keys = encodeItem(nil, t.schema.keyItem(img))
	view := st.view
	if old != nil && (view == types.StreamViewTypeOldImage || view == types.StreamViewTypeNewAndOldImages) {
		r.old = old.data()
	}
	if ne != nil && (view == types.StreamViewTypeNewImage || view == types.StreamViewTypeNewAndOldImages) {
		r.new = ne.data()
	}
	st.trim(now.Add(-db.changeRetention), db.changeLimit-1)
	st.records = append(st.records, r)
	db.notifyWatchers()
}

// Changes returns the table's change records with Seq >= fromSeq, oldest
// first, from its current stream and the streams it had before that are
// still retained (nil for an unknown table or a table that never had a
// stream).
func (db *DB) Changes(tableName string, fromSeq uint64) []Change {
	db.mu.RLock()
	defer db.mu.RUnlock()
	t, ok := db.tables[tableName]
	if !ok {
		return nil
	}
	var out []Change
	for _, st := range t.streams {
		i := sort.Search(len(st.records), func(i int) bool { return st.records[i].seq >= fromSeq })
		for _, r := range st.records[i:] {
			out = append(out, r.change(tableName))
		}
	}
	return out
}

func (r *changeRecord) change(tableName string) Change {
	c := Change{Seq: r.seq, Table: tableName, EventName: r.event, Keys: decodeItem(r.keys), At: r.at, ByTTL: r.byTTL}
	if r.old != nil {
		c.OldImage = decodeItem(r.old)
	}
	if r.new != nil {
		c.NewImage = decodeItem(r.new)
	}
	return c
}

// Watch returns a channel that receives a signal (coalesced: buffered one)
// after every commit that added a change record, and a function that stops
// the watch. Read Changes after a signal to learn what changed.
func (db *DB) Watch() (<-chan struct{}, func()) {
	db.watchMu.Lock()
	defer db.watchMu.Unlock()
	id := db.nextWatcher
	db.nextWatcher++
	ch := make(chan struct{}, 1)
	db.watchers[id] = ch
	return ch, func() {
		db.watchMu.Lock()
		defer db.watchMu.Unlock()
		delete(db.watchers, id)
	}
}

func (db *DB) notifyWatchers() {
	db.watchMu.Lock()
	defer db.watchMu.Unlock()
	for _, ch := range db.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// streamEnabled reports whether the schema asks for a stream.
func (s *tableSchema) streamEnabled() bool {
	return s.stream != nil && aws.ToBool(s.stream.StreamEnabled)
}
