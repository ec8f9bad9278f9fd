package ddblocal

import (
	"errors"
	"os"
	"syscall"
)

// allocateFile makes f size bytes long (0: empty) with every block allocated
// (fallocate), so the space is the reserve's until it is released; where
// the file system cannot, it writes zeroes.
func allocateFile(f *os.File, size int64) error {
	if err := f.Truncate(0); err != nil || size == 0 {
		return err
	}
	err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return writeZeroes(f, size)
	}
	if err != nil {
		_ = f.Truncate(0)
	}
	return err
}
