package lambdastack

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// memorySampler samples the resident memory of the stack's processes (and
// their children: each emulator runs its bootstrap) once a second and
// keeps the largest total. It reads /proc, so it measures nothing
// elsewhere than on Linux.
type memorySampler struct {
	pids func() []int
	mu   sync.Mutex
	max  int64
}

func newMemorySampler(pids func() []int) *memorySampler { return &memorySampler{pids: pids} }

func (m *memorySampler) run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		m.sample()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (m *memorySampler) sample() {
	seen := map[int]bool{}
	var total int64
	var walk func(pid int)
	walk = func(pid int) {
		if seen[pid] {
			return
		}
		seen[pid] = true
		total += residentBytes(pid)
		for _, c := range childPIDs(pid) {
			walk(c)
		}
	}
	for _, p := range m.pids() {
		walk(p)
	}
	m.mu.Lock()
	m.max = max(m.max, total)
	m.mu.Unlock()
}

func (m *memorySampler) peak() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.max
}

// residentBytes is a process's VmRSS.
func residentBytes(pid int) int64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// childPIDs lists a process's children (of all its threads).
func childPIDs(pid int) []int {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(raw)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}
