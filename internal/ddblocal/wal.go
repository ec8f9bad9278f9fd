package ddblocal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// The write-ahead log of a persistent engine (Open). Every write call's
// mutations are appended as one framed record while the call still holds
// the engine's write lock, so the log's order is the commit order and a
// call is in the log whole or not at all; the call answers only after an
// fsync covered its record (group commit: one fsync serves every call
// waiting at that moment).
//
// A log file (a segment) is a header followed by records (little endian):
//
//	header   := "FDDBWAL2" firstSeq:uint64 crc:uint32           (crc: CRC-32C of the 16 bytes before it)
//	record   := length:uint32 seq:uint64 pcrc:uint32 hcrc:uint32 payload
//	            (pcrc: CRC-32C of the payload; hcrc: of the 16 header bytes before it)
//	payload  := mutation*
//	mutation := 1 table:str key:bytes hasItem:byte [item:bytes size:uvarint] at:varint byTTL:byte   (an item commit)
//	          | 2 op:str at:varint input:bytes                                                    (a table-administration call, its SDK input as JSON)
//	          | 3 token:str digest:[32]byte at:varint                                              (a transaction's idempotency token)
//
// str and bytes are a uvarint length and the bytes; at is Unix nanoseconds
// on the engine's clock. Records are numbered (seq) from 1 without gaps
// across segments, a segment's header names the first number in it, and the
// MANIFEST (manifest.go) says which segments exist and the highest number
// known durable: together they tell a write cut short by a crash (only
// above that number, only at the end of the newest segment) from damage
// (anything else), which start-up refuses (recover.go).
//
// Segments of the first format ("FDDBWAL1": records of length, CRC and
// payload, no numbers, no MANIFEST), written by builds before 0.1.0, are
// not read: start-up refuses a directory holding one (FormatError).

const (
	walMagic        = "FDDBWAL2"
	walMagicFormat1 = "FDDBWAL1" // refused (before 0.1.0)
	segHeader       = 8 + 8 + 4
	recordHeader    = 4 + 8 + 4 + 4
	frameHeader     = 8 // snapshot frames: length, CRC
	mutCommit       = 1
	mutMeta         = 2
	mutToken        = 3
	maxRecordSize   = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func segmentName(n uint64) string  { return fmt.Sprintf("wal-%016d.log", n) }
func snapshotName(n uint64) string { return fmt.Sprintf("snap-%016d", n) }

// wal is the open log of a persistent engine.
type wal struct {
	dir string

	// pending collects the mutations of the write call in progress; only the
	// holder of the engine's write lock touches it.
	pending []byte

	mu      sync.Mutex
	cond    *sync.Cond
	f       logFile
	seg     uint64 // the segment f writes
	segSize int64
	written uint64 // bytes appended since open, over every segment
	synced  uint64 // bytes known durable
	nextSeq uint64 // the number of the next record
	syncing bool
	err     error // sticky: after a failed write or fsync nothing is answered
	man     *manifest

	// a full disk (storage.go)
	disk        diskHooks
	reserve     *os.File
	reserveSize int
	reserveHeld int64
	full        bool     // the disk is full: writes are refused, reads served
	fullErr     error    // what said so
	unwritten   [][]byte // records the disk had no room for, in order

	// snapshots
	snapEvery  int64         // start a snapshot when a segment grows past this
	snapDone   chan struct{} // under mu; closed when the snapshot in flight ends
	snapping   atomic.Bool   // a snapshot is in flight
	snapErr    error
	lastSnap   uint64
	syncOnSeal bool // tests: fsync inside seal (no group commit)
	skipSync   bool // tests: answer without an fsync (a write a crash may tear)
	replayed   bool // Open replayed log records no snapshot holds yet
}

func (w *wal) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// addCommit appends an item commit to the call's mutations.
func (w *wal) addCommit(table string, key []byte, ne *entry, at time.Time, byTTL bool) {
	b := append(w.pending, mutCommit)
	b = appendString(b, table)
	b = appendBytes(b, key)
	if ne == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = appendBytes(b, ne.data())
		b = binary.AppendUvarint(b, uint64(ne.size))
	}
	b = binary.AppendVarint(b, at.UnixNano())
	if byTTL {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	w.pending = b
}

func (w *wal) addMeta(op string, at time.Time, input []byte) {
	b := append(w.pending, mutMeta)
	b = appendString(b, op)
	b = binary.AppendVarint(b, at.UnixNano())
	w.pending = appendBytes(b, input)
}

func (w *wal) addToken(r tokenRecord) {
	b := append(w.pending, mutToken)
	b = appendString(b, r.token)
	b = append(b, r.digest[:]...)
	w.pending = binary.AppendVarint(b, r.at.UnixNano())
}

// seal writes the call's mutations as one record (no fsync: waitDurable
// does that). It runs under the engine's write lock.
func (w *wal) seal() {
	if len(w.pending) == 0 {
		return
	}
	payload := w.pending
	w.pending = w.pending[:0]
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	w.append(payload)
	if w.syncOnSeal && len(w.unwritten) == 0 && w.err == nil {
		if err := w.f.Sync(); err != nil {
			w.fail(err)
			return
		}
		w.markDurable(w.written, w.nextSeq-1)
	}
	if cap(w.pending) > 1<<20 {
		w.pending = nil // do not keep a huge call's buffer
	}
}

// append writes one record. When the disk is full it releases the reserve
// and tries again; a record even that does not make room for stays pending
// (storage.go). It runs under w.mu.
func (w *wal) append(payload []byte) {
	if len(w.unwritten) > 0 && !w.flushPendingLocked() {
		w.unwritten = append(w.unwritten, bytes.Clone(payload)) // behind the ones before it
		return
	}
	err := w.writeFrame(payload)
	if err != nil && isNoSpace(err) {
		w.noSpaceLocked(err)
		err = w.writeFrame(payload)
	}
	switch {
	case err == nil:
	case isNoSpace(err):
		w.unwritten = append(w.unwritten, bytes.Clone(payload))
	default:
		w.fail(err)
	}
}

// writeFrame writes one record. A write that fails leaves nothing of the
// record in the file: what part of it was written is cut off again.
func (w *wal) writeFrame(payload []byte) error {
	if len(payload) > maxRecordSize {
		return fmt.Errorf("ddblocal: a log record of %d bytes is over the limit", len(payload))
	}
	// One write per record: a crash tears at most this record.
	buf := make([]byte, recordHeader, recordHeader+len(payload))
	binary.LittleEndian.PutUint32(buf[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint64(buf[4:], w.nextSeq)
	binary.LittleEndian.PutUint32(buf[12:], crc32.Checksum(payload, castagnoli))
	binary.LittleEndian.PutUint32(buf[16:], crc32.Checksum(buf[:16], castagnoli))
	buf = append(buf, payload...)
	n, err := w.f.Write(buf)
	if err == nil && n < len(buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		if n > 0 {
			if terr := w.f.Truncate(w.segSize); terr != nil {
				return fmt.Errorf("ddblocal: cutting a failed write (%v) from %s: %w", err, segmentName(w.seg), terr)
			}
		}
		return fmt.Errorf("ddblocal: writing %s: %w", segmentName(w.seg), err)
	}
	w.written += uint64(n)
	w.segSize += int64(n)
	w.nextSeq++
	return nil
}

// markDurable records that the log is on disk up to byte upTo (over every
// segment since open) and record seq, in memory and in the MANIFEST, before
// any call it covers answers.
func (w *wal) markDurable(upTo, seq uint64) {
	if upTo > w.synced {
		w.synced = upTo
	}
	if err := w.man.markDurable(seq); err != nil {
		w.fail(err)
	}
}

// waitDurable returns once everything written so far is on disk (or the
// log failed). Concurrent callers share one fsync.
func (w *wal) waitDurable() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.skipSync {
		return w.err
	}
	target := w.written
	for w.synced < target && w.err == nil {
		if w.syncing {
			w.cond.Wait()
			continue
		}
		w.syncing = true
		upTo, upToSeq, f := w.written, w.nextSeq-1, w.f
		w.mu.Unlock()
		err := f.Sync()
		w.mu.Lock()
		w.syncing = false
		if err != nil {
			w.fail(fmt.Errorf("ddblocal: fsync of the log: %w", err))
		} else {
			w.markDurable(upTo, upToSeq)
		}
		w.cond.Broadcast()
	}
	return w.err
}

// rotate makes segment n the one written, after the current one is
// durable. It runs under the engine's write lock. When the disk has no room
// for the new segment, the current one stays in use (the log is marked
// full; see storage.go) and the error is returned.
func (w *wal) rotate(n uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.syncing {
		w.cond.Wait()
	}
	if w.err != nil {
		return w.err
	}
	path := filepath.Join(w.dir, segmentName(n))
	nf, err := createSynced(path, segmentHeader(w.nextSeq))
	if err != nil {
		if isNoSpace(err) && w.f != nil {
			_ = os.Remove(path)
			w.noSpaceLocked(err)
			return err
		}
		w.fail(err)
		return err
	}
	if w.f != nil {
		if err := w.f.Sync(); err != nil {
			nf.Close()
			w.fail(err)
			return err
		}
		w.markDurable(w.written, w.nextSeq-1)
		if err := w.f.Close(); err != nil {
			nf.Close()
			w.fail(err)
			return err
		}
		w.f = nil
	}
	w.f, w.seg, w.segSize = w.disk.wrap(nf), n, segHeader
	state := w.man.state
	state.lastSeg = n
	if err := w.man.commit(state); err != nil {
		w.fail(err)
		return err
	}
	return w.err
}

// segmentHeader is the header of a segment whose first record is firstSeq.
func segmentHeader(firstSeq uint64) []byte {
	b := binary.LittleEndian.AppendUint64([]byte(walMagic), firstSeq)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// createSynced creates path with content, fsynced together with its
// directory, and returns it open for appending.
func createSynced(path string, content []byte) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ddblocal: %w", err)
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return nil, fmt.Errorf("ddblocal: writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("ddblocal: fsync of %s: %w", path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("ddblocal: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("ddblocal: fsync of %s: %w", dir, err)
	}
	return nil
}

// walReader decodes the mutations of one record.
type walReader struct {
	b   []byte
	err error
}

var errShortRecord = errors.New("a mutation runs past the end of its record")

func (r *walReader) byte() byte {
	if r.err != nil || len(r.b) < 1 {
		r.err = errShortRecord
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *walReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShortRecord
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *walReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errShortRecord
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *walReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil || uint64(len(r.b)) < n {
		r.err = errShortRecord
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *walReader) fixed(n int) []byte {
	if r.err != nil || len(r.b) < n {
		r.err = errShortRecord
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}
