package ddblocal

import (
	"encoding/binary"
	"os"
)

// CrashForTest stops a persistent engine as a SIGKILL would: the log file
// and the directory lock are released, nothing is flushed or snapshotted
// (a background snapshot is waited for, as the process would have been
// killed before or after it).
func CrashForTest(db *DB) {
	w := db.mu.wal
	db.waitSnapshot()
	w.mu.Lock()
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	_ = w.man.close()
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
