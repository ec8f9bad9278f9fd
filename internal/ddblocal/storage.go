package ddblocal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/smithy-go"
)

// What a persistent engine does when its disk fills up (issue 28 item 3).
//
// A write call changes the engine's memory before its log record is
// written (the record is sealed as the call releases the write lock), so a
// record that cannot be written would leave memory ahead of the log. To
// keep that from happening, the data directory holds a reserve: a file
// (RESERVE) of allocated but unused space. When appending a record fails
// for want of space, the reserve is released and the record written into
// the room it leaves; from then on the engine is *degraded*: write calls
// are refused before they change anything, with ServiceUnavailable (HTTP
// 503, which the SDKs retry), while reads are served (everything in memory
// is in the log). Each refused write, each health check (Health, `GET /`)
// tries to allocate the reserve again; once the disk has room for it the
// engine takes writes again, without a restart.
//
// When even the released reserve is not enough (a record bigger than it,
// or several at once), the record stays pending in memory, in order: until
// it is written, reads are refused too (memory holds a change the log does
// not), and each call tries to write it. The call whose record it is was
// answered ServiceUnavailable, so whether it took effect was never
// promised; once written and fsynced it is durable like any other.
//
// A failed fsync (or any error but a full disk) is final: after it, what
// the kernel kept of the file is not known, so every call answers
// ServiceUnavailable and Health says a restart is needed. Nothing
// acknowledged is lost: an acknowledged call's record was fsynced.

const (
	reserveName = "RESERVE"
	// defaultReserve is the reserve's size; smaller reserves are taken on
	// a disk that has less room, down to minReserve.
	defaultReserve = 4 << 20
	minReserve     = 64 << 10
)

// logFile is an open log segment: an *os.File, or a test's wrapper that
// runs out of space.
type logFile interface {
	Write(p []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Close() error
}

// diskHooks let tests give the log a disk that fills up.
type diskHooks struct {
	wrap func(f *os.File) logFile
	// allocate gives f size allocated bytes (0: releases them).
	allocate func(f *os.File, size int64) error
}

// HealthError is Health's answer for an engine that cannot take writes.
type HealthError struct {
	// Degraded: reads are served (unless Reason says otherwise) and writes
	// refused until the disk has room again, without a restart. Otherwise
	// the log failed and only a restart recovers.
	Degraded bool
	Reason   string
}

func (e *HealthError) Error() string {
	if e.Degraded {
		return "degraded: " + e.Reason
	}
	return "failed: " + e.Reason
}

func unavailable(msg string) error {
	return &smithy.GenericAPIError{Code: "ServiceUnavailable", Message: msg, Fault: smithy.FaultServer}
}

const (
	msgDiskFull = "the data directory's disk is full: writes are refused until it has room again (reads are served); retry later"
	msgStuck    = "the data directory's disk is full and a write could not be logged yet: calls are refused until it has room again; retry later"
)

func msgFailed(err error) string {
	return fmt.Sprintf("the data directory's log failed (%v): restart to recover (nothing acknowledged is lost)", err)
}

// reserveLocked makes the reserve hold its space again. At start-up
// (adapt) it takes as much as the disk allows, from reserveSize down to
// minReserve, and keeps that size; afterwards only that whole size will do,
// so a disk that keeps filling up does not whittle the reserve away. It
// runs under w.mu.
func (w *wal) reserveLocked(adapt bool) error {
	if w.reserve == nil {
		f, err := os.OpenFile(filepath.Join(w.dir, reserveName), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return fmt.Errorf("ddblocal: %w", err)
		}
		w.reserve = f
	}
	var err error
	for size := int64(w.reserveSize); size >= minReserve; size /= 2 {
		if err = w.disk.allocate(w.reserve, size); err == nil {
			w.reserveHeld = size
			w.reserveSize = int(size)
			return nil
		}
		if !isNoSpace(err) {
			return fmt.Errorf("ddblocal: allocating %s: %w", reserveName, err)
		}
		if !adapt {
			break
		}
	}
	_ = w.disk.allocate(w.reserve, 0)
	w.reserveHeld = 0
	return fmt.Errorf("ddblocal: allocating %s: %w", reserveName, err)
}

// releaseReserveLocked frees the reserve's space for the log.
func (w *wal) releaseReserveLocked() {
	if w.reserve != nil && w.reserveHeld > 0 {
		if err := w.disk.allocate(w.reserve, 0); err == nil {
			w.reserveHeld = 0
		}
	}
}

// noSpaceLocked records that the disk is full: the reserve goes to the log
// and writes are refused from now on.
func (w *wal) noSpaceLocked(err error) {
	if !w.full {
		w.full, w.fullErr = true, err
	}
	w.releaseReserveLocked()
}

// recoverLocked tries to leave the degraded state: write the records still
// pending, then take the reserve again. It reports what is left.
func (w *wal) recoverLocked() error {
	if w.err != nil {
		return &HealthError{Reason: msgFailed(w.err)}
	}
	if !w.flushPendingLocked() {
		return &HealthError{Degraded: true, Reason: msgStuck}
	}
	if w.full {
		if err := w.reserveLocked(false); err != nil {
			if !isNoSpace(err) {
				w.fail(err)
				return &HealthError{Reason: msgFailed(err)}
			}
			return &HealthError{Degraded: true, Reason: msgDiskFull}
		}
		w.full, w.fullErr = false, nil
	}
	return nil
}

// flushPendingLocked writes the records the disk had no room for, in
// order; false while some remain.
func (w *wal) flushPendingLocked() bool {
	for len(w.unwritten) > 0 && w.err == nil {
		err := w.writeFrame(w.unwritten[0])
		if err != nil {
			if isNoSpace(err) {
				return false
			}
			w.fail(err)
			return false
		}
		w.unwritten[0] = nil
		w.unwritten = w.unwritten[1:]
	}
	return w.err == nil
}

// Health reports whether a persistent engine can take writes: nil, or a
// *HealthError saying why not and whether it recovers by itself (the disk
// full: degraded) or needs a restart (the log failed). It tries to recover
// first, so it is also how a degraded engine notices the disk has room
// again. An in-memory engine is always healthy.
func (db *DB) Health() error {
	w := db.mu.wal
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.recoverLocked()
}

// writeOps are the calls that write: refused before they change anything
// while the log cannot take writes.
var writeOps = map[string]bool{
	"PutItem": true, "UpdateItem": true, "DeleteItem": true, "BatchWriteItem": true, "TransactWriteItems": true,
	"CreateTable": true, "UpdateTable": true, "DeleteTable": true, "UpdateTimeToLive": true,
	"TagResource": true, "UntagResource": true,
}

// admitWrite refuses a write call, before it changes anything, while the
// log cannot take writes.
func (db *DB) admitWrite() error {
	w := db.mu.wal
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return callError(w.recoverLocked())
}

// logWritable says whether the log takes writes now; the engine's own
// writes (the TTL sweep) wait while it does not. Under the write lock.
func (db *DB) logWritable() bool {
	w := db.mu.wal
	if w == nil {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err == nil && !w.full && len(w.unwritten) == 0
}

// callError turns a HealthError into what a call answers.
func callError(err error) error {
	var he *HealthError
	if !errors.As(err, &he) {
		return err
	}
	return unavailable(he.Reason)
}

// writeZeroes writes size zero bytes at the start of f (the reserve where
// fallocate is not available); on failure f is emptied again.
func writeZeroes(f *os.File, size int64) error {
	buf := make([]byte, 64<<10)
	for off := int64(0); off < size; {
		k := min(int64(len(buf)), size-off)
		if _, err := f.WriteAt(buf[:k], off); err != nil {
			_ = f.Truncate(0)
			return err
		}
		off += k
	}
	return nil
}
