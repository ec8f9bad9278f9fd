package ddblocal

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
	w.fail(errCrashed)
	w.mu.Unlock()
	db.unlockDir()
}

var errCrashed = errorString("crashed")

type errorString string

func (e errorString) Error() string { return string(e) }
