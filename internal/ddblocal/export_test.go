package ddblocal

import (
	"encoding/binary"
	"os"
	"sync"
	"syscall"
)

// CrashForTest stops a persistent engine as a SIGKILL would: the log file
// and the directory lock are released, nothing is flushed or snapshotted
// (a background snapshot is waited for, as the process would have been
// killed before or after it).
func CrashForTest(db *DB) {
	w := db.mu.wal
	db.waitSnapshot()
	w.mu.Lock()
	_ = w.closeFiles()
	w.fail(errCrashed)
	w.mu.Unlock()
	db.unlockDir()
}

var errCrashed = errorString("crashed")

type errorString string

func (e errorString) Error() string { return string(e) }

// RecordOffsetsForTest returns where each record of a log segment starts,
// reading the segment's framing only (no checksums), so a test can damage a
// chosen record.
func RecordOffsetsForTest(path string) ([]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var offs []int64
	off := int64(segHeader)
	for off+recordHeader <= int64(len(b)) {
		offs = append(offs, off)
		off += recordHeader + int64(binary.LittleEndian.Uint32(b[off:]))
	}
	return offs, nil
}

// UnsyncedForTest runs fn with the log's fsyncs skipped: the writes fn makes
// are in the log (as the page cache holds them) but were never durable, so
// no client could have seen them acknowledged; a crash may tear them.
func UnsyncedForTest(db *DB, fn func()) {
	w := db.mu.wal
	w.mu.Lock()
	w.skipSync = true
	w.mu.Unlock()
	fn()
	w.mu.Lock()
	w.skipSync = false
	w.mu.Unlock()
}

// RecordHeaderForTest is the size of a log record's header.
const RecordHeaderForTest = recordHeader

// DiskForTest is a disk with a set number of free bytes, for the log
// segments and the reserve of a persistent engine (WithDiskForTest): a
// write that does not fit writes what fits and fails with ENOSPC, as a
// full file system does. Snapshots and the MANIFEST use the real disk.
type DiskForTest struct {
	mu       sync.Mutex
	free     int64
	reserved int64
	Refused  int // writes that did not fit
}

// SetFree sets how many bytes are free.
func (d *DiskForTest) SetFree(n int64) {
	d.mu.Lock()
	d.free = n
	d.mu.Unlock()
}

// WithDiskForTest puts the log of an Open engine on d, with a reserve of
// reserve bytes.
func WithDiskForTest(d *DiskForTest, reserve int) Option {
	return func(db *DB) {
		db.reserveSize = reserve
		db.disk = diskHooks{
			wrap: func(f *os.File) logFile {
				st, _ := f.Stat()
				return &testLogFile{f: f, d: d, size: st.Size()}
			},
			allocate: func(f *os.File, size int64) error {
				d.mu.Lock()
				defer d.mu.Unlock()
				d.free += d.reserved
				d.reserved = 0
				if size > d.free {
					return &os.PathError{Op: "fallocate", Path: f.Name(), Err: syscall.ENOSPC}
				}
				d.free -= size
				d.reserved = size
				return nil
			},
		}
	}
}

type testLogFile struct {
	f    *os.File
	d    *DiskForTest
	size int64
}

func (t *testLogFile) Write(p []byte) (int, error) {
	t.d.mu.Lock()
	defer t.d.mu.Unlock()
	if int64(len(p)) > t.d.free {
		t.d.Refused++
		n, _ := t.f.Write(p[:t.d.free])
		t.d.free -= int64(n)
		t.size += int64(n)
		return n, &os.PathError{Op: "write", Path: t.f.Name(), Err: syscall.ENOSPC}
	}
	n, err := t.f.Write(p)
	t.d.free -= int64(n)
	t.size += int64(n)
	return n, err
}

func (t *testLogFile) Truncate(size int64) error {
	t.d.mu.Lock()
	defer t.d.mu.Unlock()
	if err := t.f.Truncate(size); err != nil {
		return err
	}
	t.d.free += t.size - size
	t.size = size
	return nil
}

func (t *testLogFile) Sync() error  { return t.f.Sync() }
func (t *testLogFile) Close() error { return t.f.Close() }
