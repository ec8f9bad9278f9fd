package ddblocal

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/google/btree"

	"github.com/ferryhq/ferry/internal/clock"
)

// A snapshot (snap-N) is the engine's whole state as of the start of log
// segment N, written to snap-N.tmp, fsynced and renamed: it is whole or
// absent. It uses the log's framing (wal.go) after an 8-byte magic; each
// frame's payload starts with a kind:
//
//	1 header   version changeSeq segment nextSeq   (nextSeq: the number of segment's first log record)
//	2 table    name history(op at input)*          (the table's administration calls, replayed on load)
//	3 items    table (key data size)*
//	4 index    table index (key data size)*
//	5 expiries table (at key)*
//	6 stream   arn label table view created shard startSeq closed closedAt endSeq trimmed attached keys
//	7 records  arn (seq at event keys old new byTTL)*
//	8 tokens   (token digest at)*
//	9 footer   frames
//
// Start-up then costs reading the file: entries go into the B-trees as
// they are, nothing is decoded or re-indexed.

const (
	snapMagic   = "FDDBSNP1"
	snapVersion = 1
	snapChunk   = 1 << 20

	snapHeader   = 1
	snapTable    = 2
	snapItems    = 3
	snapIndex    = 4
	snapExpiries = 5
	snapStream   = 6
	snapRecords  = 7
	snapTokens   = 8
	snapFooter   = 9
)

// snapState is what a snapshot writes, captured under the write lock:
// B-tree clones (copy-on-write, O(1)) and copies of slice headers (the
// slices are only ever appended to or resliced).
type snapState struct {
	seg       uint64
	nextSeq   uint64
	changeSeq uint64
	tables    []snapTableState
	streams   []snapStreamState
	tokens    []tokenRecord
}

type snapTableState struct {
	name     string
	history  []metaOp
	items    *btree.BTreeG[entry]
	indexes  []snapIndexState
	expiries *btree.BTreeG[expiry]
}

type snapIndexState struct {
	name    string
	tree    *btree.BTreeG[entry]
	pending []pendingIndexOp
}

type snapStreamState struct {
	st       stream
	attached bool
}

func (db *DB) captureLocked(seg uint64) *snapState {
	w := db.mu.wal
	w.mu.Lock()
	next := w.nextSeq
	w.mu.Unlock()
	s := &snapState{seg: seg, nextSeq: next, changeSeq: db.changeSeq}
	attached := map[*stream]bool{}
	for _, name := range sortedKeys(db.tables) {
		t := db.tables[name]
		ts := snapTableState{name: name, history: t.history, items: t.items.Clone()}
		for _, ix := range t.indexes {
			ts.indexes = append(ts.indexes, snapIndexState{name: ix.schema.name, tree: ix.tree.Clone(), pending: ix.pending})
		}
		if t.ttlEnabled && t.expiries != nil {
			ts.expiries = t.expiries.Clone()
		}
		for _, st := range t.streams {
			attached[st] = true
		}
		s.tables = append(s.tables, ts)
	}
	for _, st := range db.streams {
		s.streams = append(s.streams, snapStreamState{st: *st, attached: attached[st]})
	}
	for _, r := range db.tokenOrder {
		if cur, ok := db.tokens[r.token]; ok && cur.at.Equal(r.at) {
			s.tokens = append(s.tokens, r)
		}
	}
	return s
}

// startSnapshotLocked captures the state, starts log segment seg+1 and
// writes the snapshot in the background. The caller holds the write lock.
func (db *DB) startSnapshotLocked() {
	w := db.mu.wal
	n := w.seg + 1
	state := db.captureLocked(n)
	if err := w.rotate(n); err != nil {
		return // the log is failed (sticky): calls answer errors
	}
	done := make(chan struct{})
	w.mu.Lock()
	w.snapDone = done
	w.mu.Unlock()
	w.snapping.Store(true)
	go func() {
		defer close(done)
		defer w.snapping.Store(false)
		err := writeSnapshot(w.dir, state)
		if err == nil {
			// The MANIFEST names the snapshot before the segments it covers go.
			w.mu.Lock()
			ms := w.man.state
			ms.snap, ms.firstSeg = n, n
			err = w.man.commit(ms)
			w.mu.Unlock()
		}
		if err == nil {
			err = pruneDir(w.dir, n)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if err != nil {
			w.snapErr = err // the log still holds everything; only start-up is slower
		} else {
			w.snapErr = nil
			w.replayed = false
		}
		w.snapDone = nil
	}()
}

// pruneDir removes the segments and snapshots snapshot n covers.
func pruneDir(dir string, n uint64) error {
	snaps, segs, _, err := listDir(dir)
	if err != nil {
		return err
	}
	for _, s := range segs {
		if s < n {
			if err := os.Remove(filepath.Join(dir, segmentName(s))); err != nil {
				return fmt.Errorf("ddblocal: %w", err)
			}
		}
	}
	for _, s := range snaps {
		if s < n {
			if err := os.Remove(filepath.Join(dir, snapshotName(s))); err != nil {
				return fmt.Errorf("ddblocal: %w", err)
			}
		}
	}
	return nil
}

// frameWriter writes framed payloads, cutting a kind's entries into chunks.
type frameWriter struct {
	w      *bufio.Writer
	frames uint64
	err    error
	buf    []byte
}

func (fw *frameWriter) frame(payload []byte) {
	if fw.err != nil {
		return
	}
	var hdr [frameHeader]byte
	binary.LittleEndian.PutUint32(hdr[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(hdr[4:], crc32.Checksum(payload, castagnoli))
	if _, err := fw.w.Write(hdr[:]); err != nil {
		fw.err = err
		return
	}
	if _, err := fw.w.Write(payload); err != nil {
		fw.err = err
	}
	fw.frames++
}

// entries writes a tree's entries as frames of kind, each starting with
// prefix.
func (fw *frameWriter) entries(kind byte, prefix []byte, tree *btree.BTreeG[entry]) {
	start := func() { fw.buf = append(append(fw.buf[:0], kind), prefix...) }
	start()
	n := 0
	tree.Ascend(func(e entry) bool {
		fw.buf = appendBytes(fw.buf, e.key())
		fw.buf = appendBytes(fw.buf, e.data())
		fw.buf = binary.AppendUvarint(fw.buf, uint64(e.size))
		n++
		if len(fw.buf) >= snapChunk {
			fw.frame(fw.buf)
			start()
			n = 0
		}
		return fw.err == nil
	})
	if n > 0 {
		fw.frame(fw.buf)
	}
}

func writeSnapshot(dir string, s *snapState) error {
	final := filepath.Join(dir, snapshotName(s.seg))
	tmp := final + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("ddblocal: %w", err)
	}
	fw := &frameWriter{w: bufio.NewWriterSize(f, 1<<20)}
	if _, err := fw.w.WriteString(snapMagic); err != nil {
		fw.err = err
	}
	b := []byte{snapHeader}
	b = binary.AppendUvarint(b, snapVersion)
	b = binary.AppendUvarint(b, s.changeSeq)
	b = binary.AppendUvarint(b, s.seg)
	b = binary.AppendUvarint(b, s.nextSeq)
	fw.frame(b)
	for _, t := range s.tables {
		b = append(b[:0], snapTable)
		b = appendString(b, t.name)
		b = binary.AppendUvarint(b, uint64(len(t.history)))
		for _, m := range t.history {
			b = appendString(b, m.op)
			b = binary.AppendVarint(b, m.at.UnixNano())
			b = appendBytes(b, m.input)
		}
		fw.frame(b)
		name := appendString(nil, t.name)
		fw.entries(snapItems, name, t.items)
		for _, ix := range t.indexes {
			tree := ix.tree
			if len(ix.pending) > 0 {
				// A lagging index is written caught up (it is caught up at
				// start-up anyway): apply its pending changes to the clone.
				tree = tree.Clone()
				for _, op := range ix.pending {
					if op.del != nil {
						tree.Delete(probe(op.del))
					}
					if op.put != nil {
						tree.ReplaceOrInsert(*op.put)
					}
				}
			}
			fw.entries(snapIndex, appendString(append([]byte(nil), name...), ix.name), tree)
		}
		if t.expiries != nil {
			b = append(append(b[:0], snapExpiries), name...)
			t.expiries.Ascend(func(x expiry) bool {
				b = binary.AppendVarint(b, x.at)
				b = appendString(b, x.key)
				if len(b) >= snapChunk {
					fw.frame(b)
					b = append(append(b[:0], snapExpiries), name...)
				}
				return true
			})
			if len(b) > 1+len(name) {
				fw.frame(b)
			}
		}
	}
	for _, ss := range s.streams {
		st := &ss.st
		b = append(b[:0], snapStream)
		for _, v := range []string{st.arn, st.label, st.tableName, string(st.view), st.shardID} {
			b = appendString(b, v)
		}
		b = binary.AppendVarint(b, st.created.UnixNano())
		b = binary.AppendUvarint(b, st.startSeq)
		b = appendBool(b, st.closed)
		b = binary.AppendVarint(b, st.closedAt.UnixNano())
		b = binary.AppendUvarint(b, st.endSeq)
		b = binary.AppendUvarint(b, st.trimmed)
		b = appendBool(b, ss.attached)
		b = binary.AppendUvarint(b, uint64(len(st.keys)))
		for _, k := range st.keys {
			b = appendString(b, aws.ToString(k.AttributeName))
			b = appendString(b, string(k.KeyType))
		}
		fw.frame(b)
		arn := appendString(nil, st.arn)
		b = append(append(b[:0], snapRecords), arn...)
		for i := range st.records {
			r := &st.records[i]
			b = binary.AppendUvarint(b, r.seq)
			b = binary.AppendVarint(b, r.at.UnixNano())
			b = appendString(b, r.event)
			b = appendBytes(b, r.keys)
			b = appendOptBytes(b, r.old)
			b = appendOptBytes(b, r.new)
			b = appendBool(b, r.byTTL)
			if len(b) >= snapChunk {
				fw.frame(b)
				b = append(append(b[:0], snapRecords), arn...)
			}
		}
		if len(b) > 1+len(arn) {
			fw.frame(b)
		}
	}
	b = append(b[:0], snapTokens)
	for _, r := range s.tokens {
		b = appendString(b, r.token)
		b = append(b, r.digest[:]...)
		b = binary.AppendVarint(b, r.at.UnixNano())
	}
	fw.frame(b)
	fw.frame(binary.AppendUvarint([]byte{snapFooter}, fw.frames))
	if fw.err == nil {
		fw.err = fw.w.Flush()
	}
	if fw.err == nil {
		fw.err = f.Sync()
	}
	if err := f.Close(); err != nil && fw.err == nil {
		fw.err = err
	}
	if fw.err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("ddblocal: writing %s: %w", filepath.Base(final), fw.err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("ddblocal: %w", err)
	}
	return syncDir(dir)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendOptBytes(b, v []byte) []byte {
	if v == nil {
		return append(b, 0)
	}
	return appendBytes(append(b, 1), v)
}

func (r *walReader) optBytes() []byte {
	if r.byte() == 0 {
		return nil
	}
	return r.bytes()
}

func (r *walReader) str() string { return string(r.bytes()) }

// loadSnapshot restores snapshot number seg (at path) into an empty
// engine. It returns the number of the first log record after it. A
// snapshot written before the log numbered its records (a build before
// 0.1.0: its header ends without that number) is refused (FormatError).
func (db *DB) loadSnapshot(path string, seg uint64, pinned *clock.Manual) (nextSeq uint64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("ddblocal: %w", err)
	}
	defer f.Close()
	name := filepath.Base(path)
	rd := bufio.NewReaderSize(f, 1<<20)
	magic := make([]byte, len(snapMagic))
	if _, err := io.ReadFull(rd, magic); err != nil || string(magic) != snapMagic {
		return 0, &CorruptionError{File: name, Offset: 0, Reason: "not a snapshot (bad magic)"}
	}
	off := int64(len(snapMagic))
	var (
		hdr        [frameHeader]byte
		payload    []byte
		frames     uint64
		sawHeader  bool
		sawFooter  bool
		changeSeq  uint64
		streams    []*stream
		attached   = map[*stream]bool{}
		streamsArn = map[string]*stream{}
	)
	corrupt := func(reason string) error { return &CorruptionError{File: name, Offset: off, Reason: reason} }
	for !sawFooter {
		if _, err := io.ReadFull(rd, hdr[:]); err != nil {
			return 0, corrupt("it ends before its footer")
		}
		n := binary.LittleEndian.Uint32(hdr[0:])
		if n > maxRecordSize {
			return 0, corrupt("a frame length out of range")
		}
		if uint32(cap(payload)) < n {
			payload = make([]byte, n)
		}
		payload = payload[:n]
		if _, err := io.ReadFull(rd, payload); err != nil {
			return 0, corrupt("it ends before its footer")
		}
		if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(hdr[4:]) {
			return 0, corrupt("a frame's checksum fails")
		}
		r := &walReader{b: payload}
		kind := r.byte()
		if !sawHeader && kind != snapHeader {
			return 0, corrupt("no header")
		}
		switch kind {
		case snapHeader:
			if v := r.uvarint(); v != snapVersion && r.err == nil {
				return 0, corrupt(fmt.Sprintf("snapshot version %d is not known to this version of ferry", v))
			}
			changeSeq = r.uvarint()
			if got := r.uvarint(); got != seg && r.err == nil {
				return 0, corrupt(fmt.Sprintf("it is the snapshot of segment %d, not %d (its file name)", got, seg))
			}
			if len(r.b) == 0 && r.err == nil {
				return 0, &FormatError{File: name, Found: "a snapshot of the first format, whose header does not number the log record after it"}
			}
			if nextSeq = r.uvarint(); nextSeq == 0 && r.err == nil {
				return 0, corrupt("its header numbers the log record after it 0 (records are numbered from 1)")
			}
			sawHeader = true
		case snapTable:
			tname := r.str()
			count := r.uvarint()
			for i := uint64(0); i < count && r.err == nil; i++ {
				m := metaOp{op: r.str(), at: time.Unix(0, r.varint()), input: r.bytes()}
				if r.err != nil {
					break
				}
				m.input = append([]byte(nil), m.input...)
				if err := db.replayMeta(m, pinned); err != nil {
					return 0, corrupt(err.Error())
				}
			}
			if _, ok := db.tables[tname]; !ok && r.err == nil {
				return 0, corrupt("table " + tname + " does not come back from its history")
			}
		case snapItems, snapIndex:
			t, ok := db.tables[r.str()]
			var ix *index
			if kind == snapIndex {
				iname := r.str()
				for _, x := range t.indexesOrNil() {
					if x.schema.name == iname {
						ix = x
					}
				}
				ok = ok && ix != nil
			}
			if !ok && r.err == nil {
				return 0, corrupt("entries of an unknown table or index")
			}
			for len(r.b) > 0 && r.err == nil {
				k, d := r.bytes(), r.bytes()
				size := r.uvarint()
				if r.err != nil {
					break
				}
				buf := make([]byte, len(k)+len(d))
				copy(buf, k)
				copy(buf[len(k):], d)
				e := entry{buf: buf, klen: uint32(len(k)), size: uint32(size)}
				if ix != nil {
					ix.tree.ReplaceOrInsert(e)
					ix.sizeBytes += int64(size)
				} else {
					t.items.ReplaceOrInsert(e)
					t.sizeBytes += int64(size)
				}
			}
		case snapExpiries:
			t, ok := db.tables[r.str()]
			if (!ok || t.expiries == nil) && r.err == nil {
				return 0, corrupt("expiries of a table without TTL")
			}
			for len(r.b) > 0 && r.err == nil {
				at := r.varint()
				key := r.str()
				if r.err == nil {
					t.expiries.ReplaceOrInsert(expiry{at: at, key: key})
				}
			}
		case snapStream:
			st := &stream{arn: r.str(), label: r.str(), tableName: r.str(), view: types.StreamViewType(r.str()), shardID: r.str()}
			st.created = time.Unix(0, r.varint())
			st.startSeq = r.uvarint()
			st.closed = r.byte() == 1
			st.closedAt = time.Unix(0, r.varint())
			st.endSeq = r.uvarint()
			st.trimmed = r.uvarint()
			att := r.byte() == 1
			nk := r.uvarint()
			for i := uint64(0); i < nk && r.err == nil; i++ {
				st.keys = append(st.keys, stypes.KeySchemaElement{AttributeName: aws.String(r.str()), KeyType: stypes.KeyType(r.str())})
			}
			if !st.closed {
				st.closedAt = time.Time{}
			}
			streams = append(streams, st)
			streamsArn[st.arn] = st
			attached[st] = att
		case snapRecords:
			st := streamsArn[r.str()]
			if st == nil && r.err == nil {
				return 0, corrupt("records of an unknown stream")
			}
			for len(r.b) > 0 && r.err == nil {
				rec := changeRecord{seq: r.uvarint(), at: time.Unix(0, r.varint()), event: r.str()}
				rec.keys = cloneBytes(r.bytes())
				rec.old = cloneBytes(r.optBytes())
				rec.new = cloneBytes(r.optBytes())
				rec.byTTL = r.byte() == 1
				if r.err == nil {
					st.records = append(st.records, rec)
				}
			}
		case snapTokens:
			for len(r.b) > 0 && r.err == nil {
				rec := tokenRecord{token: r.str()}
				copy(rec.digest[:], r.fixed(32))
				rec.at = time.Unix(0, r.varint())
				if r.err == nil {
					db.tokens[rec.token] = rec
					db.tokenOrder = append(db.tokenOrder, rec)
				}
			}
		case snapFooter:
			if got := r.uvarint(); got != frames && r.err == nil {
				return 0, corrupt(fmt.Sprintf("its footer counts %d frames, %d were read", got, frames))
			}
			sawFooter = true
		default:
			return 0, corrupt(fmt.Sprintf("unknown frame kind %d", kind))
		}
		if r.err != nil {
			return 0, corrupt(r.err.Error())
		}
		frames++
		off += frameHeader + int64(n)
	}
	// The streams as they were (the history replay made its own).
	db.changeSeq = changeSeq
	db.streams = streams
	for _, t := range db.tables {
		t.stream, t.streams = nil, nil
	}
	for _, st := range streams {
		t, ok := db.tables[st.tableName]
		if !ok || !attached[st] {
			continue
		}
		t.streams = append(t.streams, st)
		if !st.closed {
			t.stream = st
		}
	}
	return nextSeq, nil
}

func (t *table) indexesOrNil() []*index {
	if t == nil {
		return nil
	}
	return t.indexes
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}
