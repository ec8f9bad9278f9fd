package ddblocal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// The MANIFEST of a data directory says what start-up must find there, so
// that a missing file or a log cut short is an error rather than a smaller
// state:
//
//   - snap: the snapshot the state starts from (0: none);
//   - firstSeg, lastSeg: the log segments after it, every one of them
//     (segments are numbered without gaps);
//   - durable: the sequence number of the last log record known to be on
//     disk. Every write a client saw acknowledged has a sequence number at or
//     below it, so start-up refuses a log that ends, or is damaged, at or
//     below it: only records above it can be a torn tail.
//
// It is two copies (slots) of one fixed-size record, each checksummed, in
// different pages of the file; start-up uses the valid slot with the
// highest generation. Changes of the files (a new segment, a snapshot) write
// both slots and fsync before anything relies on them. The durable mark is
// written after every log fsync, before any call it covers is answered,
// into the slot not holding the newest generation, and not fsynced itself:
// a process killed at any point leaves it exact (the page cache outlives the
// process); after a power loss it may be behind, never ahead, of the log.

const (
	manifestName  = "MANIFEST"
	manifestMagic = "FDDBMAN1"
	manifestSlot  = 4096 // bytes between the two slots' starts
	manifestSize  = 8 + 5*8 + 4
)

// manifestState is what one slot records.
type manifestState struct {
	snap     uint64
	firstSeg uint64
	lastSeg  uint64
	durable  uint64
}

// manifest is the open MANIFEST of a persistent engine. Its methods run
// under the log's mutex.
type manifest struct {
	f     *os.File
	gen   uint64
	state manifestState
}

func (s manifestState) encode(gen uint64) []byte {
	b := make([]byte, 0, manifestSize)
	b = append(b, manifestMagic...)
	for _, v := range []uint64{gen, s.snap, s.firstSeg, s.lastSeg, s.durable} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeManifestSlot(b []byte) (manifestState, uint64, bool) {
	if len(b) < manifestSize || string(b[:8]) != manifestMagic ||
		crc32.Checksum(b[:manifestSize-4], castagnoli) != binary.LittleEndian.Uint32(b[manifestSize-4:]) {
		return manifestState{}, 0, false
	}
	u := func(i int) uint64 { return binary.LittleEndian.Uint64(b[8+8*i:]) }
	return manifestState{snap: u(1), firstSeg: u(2), lastSeg: u(3), durable: u(4)}, u(0), true
}

// readManifest returns dir's manifest state; ok is false when there is no
// MANIFEST. A MANIFEST with no valid slot is a CorruptionError.
func readManifest(dir string) (state manifestState, gen uint64, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, manifestName))
	if errors.Is(err, os.ErrNotExist) {
		return manifestState{}, 0, false, nil
	}
	if err != nil {
		return manifestState{}, 0, false, fmt.Errorf("ddblocal: %w", err)
	}
	found := false
	for _, off := range []int{0, manifestSlot} {
		if off >= len(b) {
			continue
		}
		if s, g, valid := decodeManifestSlot(b[off:]); valid && (!found || g > gen) {
			state, gen, found = s, g, true
		}
	}
	if !found {
		return manifestState{}, 0, false, &CorruptionError{File: manifestName, Offset: 0, Reason: "neither copy of the manifest reads whole"}
	}
	return state, gen, true, nil
}

// openManifest opens (creating if needed) dir's MANIFEST and makes it say
// state, durably.
func openManifest(dir string, gen uint64, state manifestState) (*manifest, error) {
	path := filepath.Join(dir, manifestName)
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ddblocal: %w", err)
	}
	m := &manifest{f: f, gen: gen}
	if err := m.commit(state); err != nil {
		f.Close()
		return nil, err
	}
	if statErr != nil {
		if err := syncDir(dir); err != nil {
			f.Close()
			return nil, err
		}
	}
	return m, nil
}

// commit makes the manifest say state in both slots and fsyncs it.
func (m *manifest) commit(state manifestState) error {
	m.gen++
	b := state.encode(m.gen)
	for _, off := range []int64{0, manifestSlot} {
		if _, err := m.f.WriteAt(b, off); err != nil {
			return fmt.Errorf("ddblocal: writing %s: %w", manifestName, err)
		}
	}
	if err := m.f.Sync(); err != nil {
		return fmt.Errorf("ddblocal: fsync of %s: %w", manifestName, err)
	}
	m.state = state
	return nil
}

// markDurable records that log records up to seq are on disk, in the slot
// that does not hold the newest generation, without an fsync.
func (m *manifest) markDurable(seq uint64) error {
	if seq <= m.state.durable {
		return nil
	}
	state := m.state
	state.durable = seq
	m.gen++
	if _, err := m.f.WriteAt(state.encode(m.gen), int64(m.gen%2)*manifestSlot); err != nil {
		return fmt.Errorf("ddblocal: writing %s: %w", manifestName, err)
	}
	m.state = state
	return nil
}

func (m *manifest) close() error {
	if m == nil || m.f == nil {
		return nil
	}
	err := m.f.Close()
	m.f = nil
	return err
}
