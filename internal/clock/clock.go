// Package clock is the only place in Ferry that reads the wall clock.
//
// Engine code, the embedded DynamoDB and the simulator take a Clock by
// injection so that tests and the simulator can drive time themselves.
package clock

import (
	"sync"
	"time"
)

// Clock tells the current time.
type Clock interface {
	Now() time.Time
}

// System is the real wall clock.
type System struct{}

// Now returns the current wall-clock time.
func (System) Now() time.Time { return time.Now() }

// Manual is a clock that only moves when told to. It is safe for concurrent
// use.
type Manual struct {
	mu  sync.Mutex
	now time.Time
}

// NewManual returns a Manual clock set to start.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

// Now returns the clock's current time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the clock forward by d and returns the new time.
func (m *Manual) Advance(d time.Duration) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
	return m.now
}

// Set moves the clock to t (which may be earlier than now, to model skew).
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = t
}

// Offset is a clock that reads another clock shifted by a fixed skew, to
// model processes whose clocks disagree.
type Offset struct {
	Base Clock
	Skew time.Duration
}

// Now returns the base clock's time plus the skew.
func (o Offset) Now() time.Time { return o.Base.Now().Add(o.Skew) }
