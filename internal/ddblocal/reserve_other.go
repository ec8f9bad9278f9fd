//go:build !linux

package ddblocal

import "os"

// allocateFile makes f size bytes long (0: empty) by writing zeroes, so the space is
// the reserve's until it is released.
func allocateFile(f *os.File, size int64) error {
	if err := f.Truncate(0); err != nil || size == 0 {
		return err
	}
	return writeZeroes(f, size)
}
