//go:build unix

package ddblocal

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir takes an exclusive lock (flock) on the data directory itself, so
// two engines never write one data directory. The lock belongs to the open
// directory, not to a file in it, so deleting or replacing a file (the LOCK
// file earlier versions locked) cannot let a second process in; the kernel
// releases it when the process ends, however it ends.
func lockDir(dir string) (func(), error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("ddblocal: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("ddblocal: the data directory %s is in use by another process (it holds the directory's lock): stop that process, or give this one another --data-dir", dir)
		}
		return nil, fmt.Errorf("ddblocal: locking %s: %w", dir, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
