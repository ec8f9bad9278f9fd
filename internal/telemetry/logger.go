package telemetry

import (
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"

	"github.com/ferryhq/ferry/internal/version"
)

// LockedWriter serialises writes so that log lines and EMF lines sharing one
// stream (stdout in Lambda) never interleave.
type LockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLockedWriter wraps w.
func NewLockedWriter(w io.Writer) *LockedWriter { return &LockedWriter{w: w} }

// Write writes p in one call to the underlying writer.
func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// ParseLevel reads a LOG_LEVEL value: debug, info (the default when empty),
// warn or error, in any case.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q (want debug, info, warn or error)", s)
}

// LogColdStart writes a function's first line, at its cold start: the
// build's version (internal/version) and Go release, so each instance's logs
// say which build ran. The function's name is expected on log already.
func LogColdStart(log *slog.Logger) {
	log.Info("cold start", slog.String(KeyVersion, version.String()), slog.String("go", runtime.Version()))
}

// NewLogger returns a JSON slog logger writing to w at level.
func NewLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// The log keys naming an action. Nothing else about an action is logged
// except its state, attempt and partition.
const (
	KeyActionID   = "action.id"
	KeyActionKind = "action.kind"
)
