//go:build unix

package ddblocal

import (
	"errors"
	"syscall"
)

// isNoSpace reports whether err says the disk (or the user's quota) is full.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
