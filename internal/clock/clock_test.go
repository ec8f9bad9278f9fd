package clock

import (
	"testing"
	"time"
)

func TestManualMovesOnlyWhenTold(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m := NewManual(start)
	if got := m.Now(); !got.Equal(start) {
		t.Fatalf("Now() = %v, want %v", got, start)
	}
	if got := m.Advance(90 * time.Second); !got.Equal(start.Add(90 * time.Second)) {
		t.Fatalf("Advance returned %v", got)
	}
	if got := m.Now(); !got.Equal(start.Add(90 * time.Second)) {
		t.Fatalf("Now() after Advance = %v", got)
	}
	m.Set(start.Add(-time.Minute)) // skew may move a clock back
	if got := m.Now(); !got.Equal(start.Add(-time.Minute)) {
		t.Fatalf("Now() after Set = %v", got)
	}
}

func TestOffsetReadsTheBaseShifted(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m := NewManual(start)
	o := Offset{Base: m, Skew: -2 * time.Second}
	m.Advance(time.Minute)
	if got, want := o.Now(), start.Add(time.Minute-2*time.Second); !got.Equal(want) {
		t.Fatalf("Offset.Now() = %v, want %v", got, want)
	}
}
