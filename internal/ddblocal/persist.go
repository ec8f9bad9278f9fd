package ddblocal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ferryhq/ferry/internal/clock"
)

// Persistence (Open): the engine stays an in-memory engine, and a data
// directory keeps what it needs to come back after a stop, a SIGKILL or a
// power loss:
//
//   - a write-ahead log (wal.go) of every write call, appended under the
//     call's lock and fsynced before the call answers;
//   - snapshots: the whole state, written in the background from
//     copy-on-write clones of the B-trees when the log has grown, so
//     start-up reads one snapshot and a short log.
//
// Item writes are logged as their effect (the key and the new item's
// encoded bytes); table administration calls (CreateTable, UpdateTable,
// DeleteTable, UpdateTimeToLive, TagResource, UntagResource) as their SDK
// input, replayed through the same code at their recorded time. Change
// records (the streams), index entries and TTL order follow from those on
// replay exactly as they did live.
//
// DESIGN.md's rule "nothing acknowledged is lost" holds in this sense: an
// answered call is in the log and fsynced, and a call answers only after
// every call before it in the log is durable too (reads included, so no
// client sees a write that a crash could take back).

// engineLock is the engine's lock. Releasing the write lock seals the log
// record of the call that held it.
type engineLock struct {
	sync.RWMutex
	wal *wal // nil: in memory only
	db  *DB  // for snapshots
}

// Unlock releases the write lock, after writing the call's log record.
func (l *engineLock) Unlock() {
	if w := l.wal; w != nil {
		w.seal()
		if w.snapEvery > 0 && w.segSize > w.snapEvery && !w.snapping.Load() && l.db.logWritable() {
			l.db.startSnapshotLocked()
		}
	}
	l.RWMutex.Unlock()
}

// logMeta records a table-administration call (its input, at the engine's
// time). Deferred right after taking the write lock, so it runs before the
// unlock whatever the outcome: a call that failed half-way is replayed the
// same way.
func (db *DB) logMeta(op, tableName string, in any) {
	if !db.persistent {
		return
	}
	w := db.mu.wal // nil while Open replays
	b, err := json.Marshal(in)
	if err != nil {
		if w != nil {
			w.mu.Lock()
			w.fail(fmt.Errorf("ddblocal: encoding a %s for the log: %w", op, err))
			w.mu.Unlock()
		}
		return
	}
	m := metaOp{op: op, at: db.clock.Now(), input: b}
	if w != nil {
		w.addMeta(m.op, m.at, m.input)
	}
	if t, ok := db.tables[tableName]; ok {
		t.history = append(t.history, m)
	}
}

// logToken records a transaction's idempotency token.
func (db *DB) logToken(r tokenRecord) {
	if w := db.mu.wal; w != nil {
		w.addToken(r)
	}
}

// metaOp is one table-administration call of a table's history.
type metaOp struct {
	op    string
	at    time.Time
	input []byte
}

// Option for persistence.

// WithSnapshotEvery makes a persistent engine write a snapshot whenever its
// log has grown by more than n bytes since the last one (default 64 MiB; 0
// or less: only at Close).
func WithSnapshotEvery(n int64) Option { return func(db *DB) { db.snapEvery = n; db.snapSet = true } }

// Recovery describes what Open found in the data directory.
type Recovery struct {
	Dir      string
	Snapshot string // the snapshot file loaded ("" when none)
	Segments int    // log segments replayed
	Records  int    // log records replayed
	Tables   int
	Items    int64
	// TornTail is set when the newest log segment ended with a record cut
	// short by a crash (a call that was never answered): it was dropped,
	// and its bytes kept in TornTail.Kept.
	TornTail *TornTail
	// Salvage is set when WithSalvage let start-up go past damage: what it
	// found and what it set aside.
	Salvage *Salvage
}

func (r Recovery) String() string {
	s := fmt.Sprintf("%d tables, %d items from %s", r.Tables, r.Items, r.Dir)
	if r.Snapshot != "" {
		s += " (snapshot " + r.Snapshot
	} else {
		s += " (no snapshot"
	}
	s += fmt.Sprintf(", %d log records in %d segments)", r.Records, r.Segments)
	if t := r.TornTail; t != nil {
		s += fmt.Sprintf("; dropped a torn tail of %d bytes at offset %d of %s (%s: a write that was never acknowledged; its bytes are kept in %s)", t.Bytes, t.Offset, t.File, t.Reason, t.Kept)
	}
	if sv := r.Salvage; sv != nil {
		for _, d := range sv.Damage {
			where := fmt.Sprintf("at offset %d", d.Offset)
			if d.Missing {
				where = "missing"
			}
			s += fmt.Sprintf("; SALVAGED past damage: %s %s: %s", d.File, where, d.Reason)
		}
		if sv.Dir != "" {
			s += fmt.Sprintf("; set aside in %s: %s", sv.Dir, strings.Join(sv.Files, ", "))
		}
		s += fmt.Sprintf("; kept records up to %d", sv.Replayed)
		if sv.Acknowledged > sv.Replayed {
			s += fmt.Sprintf(", LOST acknowledged records %d to %d", sv.Replayed+1, sv.Acknowledged)
		}
	}
	return s
}

// Open returns an engine whose data lives in dir (created if missing):
// everything a previous engine on dir acknowledged, then every write made
// through it. It fails on a damaged or incomplete data directory
// (CorruptionError, recover.go: it never drops an acknowledged write), on
// one written by a build before 0.1.0 (FormatError), and when another
// process has dir open. Close it to release dir.
func Open(dir string, opts ...Option) (*DB, error) {
	db := New(opts...)
	db.persistent = true
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("ddblocal: %w", err)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	ld, err := db.load(dir)
	if err != nil {
		unlock()
		var ce *CorruptionError
		if errors.As(err, &ce) {
			ce.Dir = dir
		}
		var fe *FormatError
		if errors.As(err, &fe) {
			fe.Dir = dir
		}
		return nil, err
	}
	next := ld.expect
	man, err := openManifest(dir, ld.manGen, manifestState{snap: ld.snap, firstSeg: ld.base, lastSeg: ld.top, durable: next - 1})
	if err != nil {
		unlock()
		return nil, err
	}
	w := &wal{dir: dir, snapEvery: 64 << 20, replayed: ld.rec.Records > 0, nextSeq: next, man: man,
		disk: db.disk, reserveSize: db.reserveSize}
	if w.disk.wrap == nil {
		w.disk.wrap = func(f *os.File) logFile { return f }
	}
	if w.disk.allocate == nil {
		w.disk.allocate = allocateFile
	}
	if w.reserveSize == 0 {
		w.reserveSize = defaultReserve
	}
	if db.snapSet {
		w.snapEvery = db.snapEvery
	}
	w.cond = sync.NewCond(&w.mu)
	if err := w.rotate(ld.top + 1); err != nil {
		_ = man.close()
		unlock()
		return nil, err
	}
	w.mu.Lock()
	if err := w.reserveLocked(true); err != nil {
		if !isNoSpace(err) {
			w.mu.Unlock()
			w.closeFiles()
			unlock()
			return nil, err
		}
		w.full, w.fullErr = true, err // start degraded: reads only until the disk has room
	}
	w.mu.Unlock()
	db.recovery = ld.rec
	db.unlockDir = unlock
	db.mu.db = db
	db.mu.wal = w
	return db, nil
}

// Recovery reports what Open found (zero for an engine made with New).
func (db *DB) Recovery() Recovery { return db.recovery }

// Close writes a snapshot (so the next Open reads no log), closes the log
// and releases the data directory. Calls after Close fail. It does nothing
// for an engine made with New.
func (db *DB) Close() error {
	w := db.mu.wal
	if w == nil {
		return nil
	}
	for {
		db.waitSnapshot()
		db.mu.RWMutex.Lock()
		if !w.snapping.Load() {
			break
		}
		db.mu.RWMutex.Unlock()
	}
	w.mu.Lock()
	// Not while the disk is full: the log holds everything acknowledged,
	// and the next start replays it.
	final := (w.replayed || w.segSize > segHeader) && w.err == nil && !w.full && len(w.unwritten) == 0
	w.mu.Unlock()
	if final {
		db.startSnapshotLocked()
	}
	db.mu.RWMutex.Unlock()
	db.waitSnapshot()
	var err error
	w.mu.Lock()
	if w.snapErr != nil {
		err = w.snapErr
	}
	if cerr := w.closeFiles(); cerr != nil && err == nil {
		err = cerr
	}
	w.fail(errors.New("ddblocal: the engine is closed"))
	w.mu.Unlock()
	if db.unlockDir != nil {
		db.unlockDir()
		db.unlockDir = nil
	}
	return err
}

func (db *DB) waitSnapshot() {
	w := db.mu.wal
	w.mu.Lock()
	done := w.snapDone
	w.mu.Unlock()
	if done != nil {
		<-done
	}
}

// closeFiles closes the segment, the MANIFEST and the reserve.
func (w *wal) closeFiles() error {
	var err error
	if w.f != nil {
		err = w.f.Close()
		w.f = nil
	}
	if cerr := w.man.close(); cerr != nil && err == nil {
		err = cerr
	}
	if w.reserve != nil {
		_ = w.reserve.Close()
		w.reserve = nil
	}
	return err
}

// durable waits until the log holds every call before this answer. While
// records the disk had no room for are pending, memory holds changes the
// log does not, so no call is answered (storage.go).
func (db *DB) durable() error {
	w := db.mu.wal
	if w == nil {
		return nil
	}
	w.mu.Lock()
	pending := !w.flushPendingLocked() && w.err == nil
	w.mu.Unlock()
	if pending {
		return unavailable(msgStuck)
	}
	if err := w.waitDurable(); err != nil {
		return unavailable(msgFailed(err))
	}
	return nil
}

// --- start-up ---

// listDir returns the snapshot and segment numbers in dir, ascending, and
// the leftovers of snapshots never finished.
func listDir(dir string) (snaps, segs []uint64, tmps []string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("ddblocal: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "snap-") && strings.HasSuffix(name, ".tmp"):
			tmps = append(tmps, name)
		case strings.HasPrefix(name, "snap-"):
			if n, err := strconv.ParseUint(strings.TrimPrefix(name, "snap-"), 10, 64); err == nil {
				snaps = append(snaps, n)
			}
		case strings.HasPrefix(name, "wal-") && strings.HasSuffix(name, ".log"):
			if n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, "wal-"), ".log"), 10, 64); err == nil {
				segs = append(segs, n)
			}
		}
	}
	sort.Slice(snaps, func(i, j int) bool { return snaps[i] < snaps[j] })
	sort.Slice(segs, func(i, j int) bool { return segs[i] < segs[j] })
	return snaps, segs, tmps, nil
}

type replayState struct {
	clock    clock.Clock
	faults   FaultPlan
	ttlEvery time.Duration
	indexLag func(string, string) time.Duration
}

func (db *DB) replaySave() *replayState {
	return &replayState{clock: db.clock, faults: db.faults, ttlEvery: db.ttlEvery, indexLag: db.indexLag}
}

func (db *DB) replayRestore(s replayState) {
	db.clock, db.faults, db.ttlEvery, db.indexLag = s.clock, s.faults, s.ttlEvery, s.indexLag
	if db.ttlEvery > 0 {
		db.nextSweep = db.clock.Now().Add(db.ttlEvery)
	}
	db.statsMu.Lock()
	db.stats = map[string]*CapacityStats{}
	db.statsMu.Unlock()
}

// replayRecord applies one log record.
func (db *DB) replayRecord(p []byte, pinned *clock.Manual) error {
	r := &walReader{b: p}
	for len(r.b) > 0 && r.err == nil {
		switch kind := r.byte(); kind {
		case mutCommit:
			name := string(r.bytes())
			key := r.bytes()
			var item Item
			size := 0
			if r.byte() == 1 {
				data := r.bytes()
				size = int(r.uvarint())
				if r.err == nil {
					item = decodeItem(data)
				}
			}
			at := time.Unix(0, r.varint())
			byTTL := r.byte() == 1
			if r.err != nil {
				break
			}
			if err := db.replayCommit(name, key, item, size, at, byTTL); err != nil {
				return err
			}
		case mutMeta:
			op := string(r.bytes())
			at := time.Unix(0, r.varint())
			input := r.bytes()
			if r.err != nil {
				break
			}
			if err := db.replayMeta(metaOp{op: op, at: at, input: input}, pinned); err != nil {
				return err
			}
		case mutToken:
			tok := string(r.bytes())
			var rec tokenRecord
			rec.token = tok
			copy(rec.digest[:], r.fixed(32))
			rec.at = time.Unix(0, r.varint())
			if r.err != nil {
				break
			}
			db.tokens[tok] = rec
			db.tokenOrder = append(db.tokenOrder, rec)
		default:
			return fmt.Errorf("unknown mutation kind %d", kind)
		}
	}
	return r.err
}

func (db *DB) replayCommit(name string, key []byte, item Item, size int, at time.Time, byTTL bool) error {
	t, ok := db.tables[name]
	if !ok {
		return fmt.Errorf("the log writes an item of table %s, which does not exist at that point", name)
	}
	var oldPtr *entry
	if old, ok := t.get(key); ok {
		oldPtr = &old
	}
	if item == nil && oldPtr == nil {
		return nil
	}
	t.commit(db, key, oldPtr, item, size, at, byTTL)
	return nil
}

// replayMeta runs a table-administration call again at its time. The call
// may fail again as it failed then; only an input the engine cannot read is
// an error.
func (db *DB) replayMeta(m metaOp, pinned *clock.Manual) error {
	pinned.Set(m.at)
	ctx := context.Background()
	bad := func(err error) error { return fmt.Errorf("decoding a logged %s: %w", m.op, err) }
	switch m.op {
	case "CreateTable":
		var in dynamodb.CreateTableInput
		if err := json.Unmarshal(m.input, &in); err != nil {
			return bad(err)
		}
		_, _ = db.CreateTable(ctx, &in)
	case "DeleteTable":
		var in dynamodb.DeleteTableInput
		if err := json.Unmarshal(m.input, &in); err != nil {
			return bad(err)
		}
		_, _ = db.DeleteTable(ctx, &in)
	case "UpdateTable":
		var in dynamodb.UpdateTableInput
		if err := json.Unmarshal(m.input, &in); err != nil {
			return bad(err)
		}
		_, _ = db.UpdateTable(ctx, &in)
	case "UpdateTimeToLive":
		var in dynamodb.UpdateTimeToLiveInput
		if err := json.Unmarshal(m.input, &in); err != nil {
			return bad(err)
		}
		_, _ = db.UpdateTimeToLive(ctx, &in)
	case "TagResource":
		var in dynamodb.TagResourceInput
		if err := json.Unmarshal(m.input, &in); err != nil {
			return bad(err)
		}
		_, _ = db.TagResource(ctx, &in)
	case "UntagResource":
		var in dynamodb.UntagResourceInput
		if err := json.Unmarshal(m.input, &in); err != nil {
			return bad(err)
		}
		_, _ = db.UntagResource(ctx, &in)
	default:
		return fmt.Errorf("unknown table call %q in the log", m.op)
	}
	return nil
}

// tableNameOfARN is the table name in a table ARN ("" when it is not one).
func tableNameOfARN(arn string) string {
	_, name, ok := strings.Cut(arn, ":table/")
	if !ok {
		return ""
	}
	name, _, _ = strings.Cut(name, "/")
	return name
}
