package email

import (
	"testing"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
)

// NewMailDirSenderMust returns a sink in a temporary directory, for tests.
func NewMailDirSenderMust(t testing.TB) *MailDir {
	t.Helper()
	m, err := NewMailDirSender(t.TempDir(), clock.NewManual(time.Unix(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
