package ddblocal

import (
	"bufio"
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
// A log file (a segment) is an 8-byte magic followed by records:
//
//	record   := length:uint32 crc:uint32 payload      (little endian;
//	            crc is CRC-32C of the payload)
//	payload  := mutation*
//	mutation := 1 table:str key:bytes hasItem:byte [item:bytes size:uvarint] at:varint byTTL:byte   (an item commit)
//	          | 2 op:str at:varint input:bytes                                                    (a table-administration call, its SDK input as JSON)
//	          | 3 token:str digest:[32]byte at:varint                                              (a transaction's idempotency token)
//
// str and bytes are a uvarint length and the bytes; at is Unix nanoseconds
// on the engine's clock.

const (
	walMagic      = "FDDBWAL1"
	mutCommit     = 1
	mutMeta       = 2
	mutToken      = 3
	frameHeader   = 8
	maxRecordSize = 1 << 30
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
	f       *os.File
	seg     uint64 // the segment f writes
	segSize int64
	written uint64 // bytes appended since open, over every segment
	synced  uint64 // bytes known durable
	syncing bool
	err     error // sticky: after a failed write or fsync nothing is answered

	// snapshots
	snapEvery  int64         // start a snapshot when a segment grows past this
	snapDone   chan struct{} // under mu; closed when the snapshot in flight ends
	snapping   atomic.Bool   // a snapshot is in flight
	snapErr    error
	lastSnap   uint64
	syncOnSeal bool // tests: fsync inside seal (no group commit)
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
	if err := w.writeFrame(payload); err != nil {
		w.fail(err)
		return
	}
	if w.syncOnSeal {
		if err := w.f.Sync(); err != nil {
			w.fail(err)
		}
		w.synced = w.written
	}
	if cap(w.pending) > 1<<20 {
		w.pending = nil // do not keep a huge call's buffer
	}
}

func (w *wal) writeFrame(payload []byte) error {
	if len(payload) > maxRecordSize {
		return fmt.Errorf("ddblocal: a log record of %d bytes is over the limit", len(payload))
	}
	var hdr [frameHeader]byte
	binary.LittleEndian.PutUint32(hdr[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(hdr[4:], crc32.Checksum(payload, castagnoli))
	// One write per record: a crash tears at most this record.
	buf := make([]byte, 0, frameHeader+len(payload))
	buf = append(append(buf, hdr[:]...), payload...)
	n, err := w.f.Write(buf)
	w.written += uint64(n)
	w.segSize += int64(n)
	if err != nil {
		return fmt.Errorf("ddblocal: writing %s: %w", segmentName(w.seg), err)
	}
	return nil
}

// waitDurable returns once everything written so far is on disk (or the
// log failed). Concurrent callers share one fsync.
func (w *wal) waitDurable() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	target := w.written
	for w.synced < target && w.err == nil {
		if w.syncing {
			w.cond.Wait()
			continue
		}
		w.syncing = true
		upTo, f := w.written, w.f
		w.mu.Unlock()
		err := f.Sync()
		w.mu.Lock()
		w.syncing = false
		if err != nil {
			w.fail(fmt.Errorf("ddblocal: fsync of the log: %w", err))
		} else if upTo > w.synced {
			w.synced = upTo
		}
		w.cond.Broadcast()
	}
	return w.err
}

// rotate makes segment n the one written, after the current one is
// durable. It runs under the engine's write lock.
func (w *wal) rotate(n uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.syncing {
		w.cond.Wait()
	}
	if w.err != nil {
		return w.err
	}
	if w.f != nil {
		if err := w.f.Sync(); err != nil {
			w.fail(err)
			return err
		}
		w.synced = w.written
		if err := w.f.Close(); err != nil {
			w.fail(err)
			return err
		}
		w.f = nil
	}
	f, err := createSynced(filepath.Join(w.dir, segmentName(n)), []byte(walMagic))
	if err != nil {
		w.fail(err)
		return err
	}
	w.f, w.seg, w.segSize = f, n, int64(len(walMagic))
	return nil
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

// CorruptionError reports a log or snapshot that cannot be trusted: a
// record whose checksum fails with data after it, or a snapshot that does
// not read whole. Open refuses to start on it rather than use or drop data
// silently.
type CorruptionError struct {
	File   string
	Offset int64
	Reason string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("ddblocal: %s is corrupt at offset %d: %s; nothing after it is used. Move the data directory aside (or restore it) and start again", e.File, e.Offset, e.Reason)
}

// TornTail describes the end of the last log segment that was cut short,
// as a crash or power loss during a write leaves it: a call that was never
// answered. Open reports it (Recovery) and truncates it.
type TornTail struct {
	File   string
	Offset int64 // where the last whole record ends
	Bytes  int64 // how many bytes after it were dropped
}

// readSegment reads the records of one segment, calling apply for each
// payload. last says whether it is the newest segment: only there is a cut
// record at the end a torn tail (reported) rather than corruption (an
// error).
func readSegment(path string, last bool, apply func([]byte) error) (*TornTail, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ddblocal: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("ddblocal: %w", err)
	}
	size := st.Size()
	name := filepath.Base(path)
	r := bufio.NewReaderSize(f, 1<<20)
	magic := make([]byte, len(walMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != walMagic {
		if last && size < int64(len(walMagic)) {
			return &TornTail{File: name, Offset: 0, Bytes: size}, nil
		}
		return nil, &CorruptionError{File: name, Offset: 0, Reason: "not a log segment (bad magic)"}
	}
	off := int64(len(walMagic))
	var hdr [frameHeader]byte
	var payload []byte
	for off < size {
		torn := func(reason string) (*TornTail, error) {
			if last {
				return &TornTail{File: name, Offset: off, Bytes: size - off}, nil
			}
			return nil, &CorruptionError{File: name, Offset: off, Reason: reason}
		}
		if size-off < frameHeader {
			return torn("a record header cut short")
		}
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, fmt.Errorf("ddblocal: reading %s: %w", name, err)
		}
		n := int64(binary.LittleEndian.Uint32(hdr[0:]))
		sum := binary.LittleEndian.Uint32(hdr[4:])
		if n == 0 && sum == 0 && allZero(r, size-off-frameHeader) {
			// A preallocated or zero-filled end (as some file systems leave
			// after a power loss): nothing was written there.
			return torn("zeroes")
		}
		if n > maxRecordSize || off+frameHeader+n > size {
			return torn("a record cut short")
		}
		if int64(cap(payload)) < n {
			payload = make([]byte, n)
		}
		payload = payload[:n]
		if _, err := io.ReadFull(r, payload); err != nil {
			return nil, fmt.Errorf("ddblocal: reading %s: %w", name, err)
		}
		if crc32.Checksum(payload, castagnoli) != sum {
			if off+frameHeader+n == size {
				return torn("the last record's checksum fails")
			}
			return nil, &CorruptionError{File: name, Offset: off, Reason: "a record's checksum fails and data follows it"}
		}
		if err := apply(payload); err != nil {
			return nil, fmt.Errorf("ddblocal: replaying %s at offset %d: %w", name, off, err)
		}
		off += frameHeader + n
	}
	return nil, nil
}

// allZero reports whether the next n bytes of r are all zero (it consumes
// them).
func allZero(r *bufio.Reader, n int64) bool {
	buf := make([]byte, 64<<10)
	for n > 0 {
		k := int64(len(buf))
		if n < k {
			k = n
		}
		if _, err := io.ReadFull(r, buf[:k]); err != nil {
			return false
		}
		if !bytes.Equal(buf[:k], make([]byte, k)) {
			return false
		}
		n -= k
	}
	return true
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
