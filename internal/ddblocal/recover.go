package ddblocal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
)

// Start-up (Open) brings back every acknowledged write of a data directory
// or refuses to start. What a crash can leave, and so what is taken as a
// torn tail and dropped:
//
//   - a record cut short, damaged, or zeroes, at the end of the newest
//     segment, numbered above the MANIFEST's durable mark (so no client saw
//     it acknowledged), with no whole record anywhere after it;
//   - a newest segment whose header was cut short while it was created,
//     before the MANIFEST listed it.
//
// A directory written by a build before 0.1.0 (the first on-disk format:
// log segments without record numbers, no MANIFEST, snapshots without the
// number of the record after them) is not read: start-up refuses it with a
// FormatError naming the file, changing nothing, salvage or not.
//
// Anything else is damage, and start-up refuses with a CorruptionError that
// names the file and offset, changing nothing in the directory: a damaged
// record in any other place (a bad record followed by a whole one, one in a
// segment before the newest, one at or below the durable mark), a missing
// segment, snapshot or MANIFEST, a segment that does not continue the
// numbering, a log that ends below the durable mark. The bytes of a torn
// tail are kept beside the segment (wal-N.log.torn-OFFSET), never deleted.
//
// With WithSalvage the operator accepts losing what follows the first
// damage: start-up keeps every record before it and moves the rest into a
// salvage-N-OFFSET directory, reporting both (Recovery.Salvage).

// CorruptionError reports a data directory that cannot be trusted: a
// damaged or missing log segment, snapshot or MANIFEST. Open refuses to
// start on it rather than use or drop data silently, and changes nothing in
// the directory.
type CorruptionError struct {
	Dir     string // the data directory
	File    string // in Dir
	Offset  int64
	Reason  string
	Missing bool // File is not there (Offset is 0)
	// Salvageable: starting with WithSalvage (ferry dynamodb --salvage)
	// keeps every write before the damage and sets the rest aside.
	Salvageable bool
}

func (e *CorruptionError) Error() string {
	s := fmt.Sprintf("ddblocal: %s is damaged at offset %d: %s. Start-up stopped and changed nothing in the directory. ", e.File, e.Offset, e.Reason)
	if e.Missing {
		s = fmt.Sprintf("ddblocal: %s is missing: %s. Start-up stopped and changed nothing in the directory. ", e.File, e.Reason)
	}
	if e.Salvageable {
		dir := e.Dir
		if dir == "" {
			dir = "DIR"
		}
		return s + fmt.Sprintf("Keep a copy of the directory, then restore it from a backup, or run `ferry dynamodb --data-dir %s --salvage` once (Go: ddblocal.WithSalvage) to keep every write before this point and move the rest aside (docs/dynamodb.md, \"When start-up refuses\")", dir)
	}
	return s + "Keep a copy of the directory, then restore it from a backup (docs/dynamodb.md, \"When start-up refuses\")"
}

// FormatError reports a data directory written by a build of ferry before
// 0.1.0, in the first on-disk format, which this version does not read and
// has no migration for. Open refuses it and changes nothing in the
// directory; the way on is an empty directory.
type FormatError struct {
	Dir   string // the data directory
	File  string // in Dir: the file of the first format
	Found string // what marks it as such
}

func (e *FormatError) Error() string {
	dir := e.Dir
	if dir == "" {
		dir = "DIR"
	}
	return fmt.Sprintf("ddblocal: %s was written by a build of ferry before 0.1.0 (%s); this version does not read that format and has no migration for it. Start-up stopped and changed nothing in the directory. Start with an empty directory: give another --data-dir, or move %s aside (docs/dynamodb.md, \"When start-up refuses\")", e.File, e.Found, dir)
}

// TornTail describes the end of the newest log segment cut short by a crash
// or power loss during a write: a call that was never answered. Open drops
// it and keeps its bytes in the file Kept.
type TornTail struct {
	File   string
	Offset int64  // where the last whole record ends
	Bytes  int64  // how many bytes after it were dropped
	Reason string // what was there
	Kept   string // the file in the data directory holding the dropped bytes
}

// Salvage describes what an Open with WithSalvage set aside.
type Salvage struct {
	Damage []CorruptionError // what start-up found, in order
	Dir    string            // the directory (in the data directory) holding what was set aside ("": nothing was)
	Files  []string          // what it holds
	// Replayed is the number of the last record kept; Acknowledged the
	// highest number the MANIFEST said was on disk (0: not known). When
	// Acknowledged is above Replayed, acknowledged writes were lost.
	Replayed, Acknowledged uint64
}

// WithSalvage makes Open start from a damaged data directory: it keeps
// every log record before the first damage, moves the rest of the log into
// a salvage-… directory beside it, and reports both (Recovery.Salvage). A
// damaged snapshot is still refused. Use it once, after reading the
// refusal: writes after the damage are not replayed.
func WithSalvage() Option { return func(db *DB) { db.salvage = true } }

// loader is one start-up: what it found and decided, applied to the
// directory only once it is sure to succeed.
type loader struct {
	db      *DB
	dir     string
	pinned  *clock.Manual
	rec     Recovery
	salvage bool

	man    manifestState
	manGen uint64
	hasMan bool

	snap   uint64 // the snapshot loaded (0: none)
	base   uint64 // the first segment replayed
	top    uint64 // the newest segment
	expect uint64 // the number of the next record

	torn      *TornTail
	removeTop bool             // the newest segment's creation was cut short
	stop      *CorruptionError // salvage: replay stopped here
	stopSeg   uint64
	obsolete  []string // covered by the snapshot loaded, or unfinished
}

// load restores the state in dir: the newest snapshot, then the log
// segments after it.
func (db *DB) load(dir string) (*loader, error) {
	// Replay as the engine ran: a pinned clock, no faults, no sweeps, no lag.
	saved := *db.replaySave()
	pinned := clock.NewManual(time.Unix(0, 0))
	db.clock, db.faults, db.ttlEvery, db.indexLag = pinned, nil, 0, nil
	defer db.replayRestore(saved)

	ld := &loader{db: db, dir: dir, pinned: pinned, rec: Recovery{Dir: dir}, salvage: db.salvage}
	if err := ld.plan(); err != nil {
		return nil, err
	}
	for n := ld.base; n <= ld.top && ld.stop == nil; n++ {
		if err := ld.replaySegment(n, n == ld.top); err != nil {
			return nil, err
		}
	}
	if err := ld.checkDurable(); err != nil {
		return nil, err
	}
	if err := ld.apply(); err != nil {
		return nil, err
	}
	ld.rec.Tables = len(db.tables)
	for _, t := range db.tables {
		ld.rec.Items += int64(t.items.Len())
		// A table is ACTIVE after a restart: CREATING, UPDATING and a
		// backfilling index end with the process that began them (the
		// replay's pinned clock may leave them in the future).
		t.lifecycle = lifecycle{}
		for _, ix := range t.indexes {
			ix.activeAt = time.Time{}
		}
	}
	clear(db.deleting)
	return ld, nil
}

// refuse stops start-up on damage, or with salvage, stops the replay there.
func (ld *loader) refuse(seg uint64, ce *CorruptionError) error {
	if !ld.salvage || !ce.Salvageable {
		return ce
	}
	if ld.stop == nil {
		ld.stop, ld.stopSeg = ce, seg
		ld.note(ce)
	}
	return nil
}

// note records damage that salvage went past.
func (ld *loader) note(ce *CorruptionError) {
	if ld.rec.Salvage == nil {
		ld.rec.Salvage = &Salvage{}
	}
	ld.rec.Salvage.Damage = append(ld.rec.Salvage.Damage, *ce)
}

// plan reads the MANIFEST and loads the snapshot; it decides which
// segments to replay.
func (ld *loader) plan() error {
	snaps, segs, tmps, err := listDir(ld.dir)
	if err != nil {
		return err
	}
	if err := refuseFirstFormat(ld.dir, segs); err != nil {
		return err
	}
	ld.obsolete = tmps
	ld.man, ld.manGen, ld.hasMan, err = readManifest(ld.dir)
	var ce *CorruptionError
	if errors.As(err, &ce) && ld.salvage {
		ld.note(ce) // replayed without it
		err = nil
	}
	if err != nil {
		return err
	}
	if !ld.hasMan && len(segs) > 0 && ce == nil {
		// The MANIFEST is written before the first segment is created.
		ce := &CorruptionError{File: manifestName, Missing: true, Salvageable: true,
			Reason: "the directory holds log segments that need it: which segments and records there should be is not known"}
		if !ld.salvage {
			return ce
		}
		ld.note(ce)
	}
	ld.base, ld.expect = 1, 1
	if ld.hasMan && ld.man.snap > 0 && (len(snaps) == 0 || snaps[len(snaps)-1] < ld.man.snap) {
		return &CorruptionError{File: snapshotName(ld.man.snap), Missing: true, Reason: "the MANIFEST names it as the state the log starts from"}
	}
	if len(snaps) > 0 {
		ld.snap = snaps[len(snaps)-1]
		ld.rec.Snapshot = snapshotName(ld.snap)
		next, err := ld.db.loadSnapshot(filepath.Join(ld.dir, ld.rec.Snapshot), ld.snap, ld.pinned)
		if err != nil {
			return err
		}
		ld.base, ld.expect = ld.snap, next
		for _, n := range snaps[:len(snaps)-1] {
			ld.obsolete = append(ld.obsolete, snapshotName(n))
		}
	}
	ld.top = ld.base - 1
	for _, n := range segs {
		if n < ld.base {
			if ld.snap > 0 {
				ld.obsolete = append(ld.obsolete, segmentName(n)) // covered by the snapshot
			}
			continue
		}
		ld.top = max(ld.top, n)
	}
	if ld.hasMan {
		ld.top = max(ld.top, ld.man.lastSeg)
	}
	return nil
}

// refuseFirstFormat refuses a directory holding a log segment of the first
// format (walMagicFormat1), written by a build before 0.1.0. It is read
// before anything else, so such a directory is named for what it is rather
// than for the MANIFEST it lacks.
func refuseFirstFormat(dir string, segs []uint64) error {
	for _, n := range segs {
		f, err := os.Open(filepath.Join(dir, segmentName(n)))
		if err != nil {
			return fmt.Errorf("ddblocal: %w", err)
		}
		magic := make([]byte, len(walMagicFormat1))
		_, err = io.ReadFull(f, magic)
		f.Close()
		if err == nil && string(magic) == walMagicFormat1 {
			return &FormatError{File: segmentName(n), Found: "a log segment of the first format, " + walMagicFormat1 + ", whose records have no numbers"}
		}
	}
	return nil
}

// replaySegment replays segment n (the newest when newest is set).
func (ld *loader) replaySegment(n uint64, newest bool) error {
	name := segmentName(n)
	path := filepath.Join(ld.dir, name)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		reason := "the segments before and after it are here"
		if ld.hasMan {
			reason = fmt.Sprintf("the MANIFEST lists segments %d to %d", ld.man.firstSeg, ld.man.lastSeg)
		}
		return ld.refuse(n, &CorruptionError{File: name, Reason: reason, Missing: true, Salvageable: true})
	}
	if err != nil {
		return fmt.Errorf("ddblocal: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("ddblocal: %w", err)
	}
	ld.rec.Segments++
	seg := &segmentScan{ld: ld, n: n, name: name, path: path, size: st.Size(), newest: newest, r: bufio.NewReaderSize(f, 1<<20)}
	return seg.run()
}

// segmentScan reads one segment.
type segmentScan struct {
	ld     *loader
	n      uint64
	name   string
	path   string
	size   int64
	newest bool
	r      *bufio.Reader
	off    int64
}

func (s *segmentScan) corrupt(off int64, reason string) error {
	return s.ld.refuse(s.n, &CorruptionError{File: s.name, Offset: off, Reason: reason, Salvageable: true})
}

func (s *segmentScan) run() error {
	ld := s.ld
	hdr := make([]byte, segHeader)
	k, _ := io.ReadFull(s.r, hdr)
	hdr = hdr[:k]
	switch {
	case k < segHeader:
		return s.cutHeader(fmt.Sprintf("its header is cut short (%d of %d bytes)", k, segHeader))
	case string(hdr[:len(walMagic)]) != walMagic:
		return s.cutHeader("not a log segment (bad magic)")
	case crc32.Checksum(hdr[:16], castagnoli) != binary.LittleEndian.Uint32(hdr[16:]):
		return s.cutHeader("its header's checksum fails")
	}
	if first := binary.LittleEndian.Uint64(hdr[8:]); first != ld.expect {
		return s.corrupt(0, fmt.Sprintf("its first record is number %d, but the log before it ends at record %d: records are missing", first, ld.expect-1))
	}
	s.off = segHeader
	var rh [recordHeader]byte
	var payload []byte
	for s.off < s.size {
		if s.size-s.off < recordHeader {
			return s.badRecord("a record header cut short")
		}
		if _, err := io.ReadFull(s.r, rh[:]); err != nil {
			return fmt.Errorf("ddblocal: reading %s: %w", s.name, err)
		}
		length := int64(binary.LittleEndian.Uint32(rh[0:]))
		seq := binary.LittleEndian.Uint64(rh[4:])
		if crc32.Checksum(rh[:16], castagnoli) != binary.LittleEndian.Uint32(rh[16:]) {
			return s.badRecord("a record header's checksum fails")
		}
		if seq != ld.expect {
			return s.corrupt(s.off, fmt.Sprintf("a whole record numbered %d where %d was expected", seq, ld.expect))
		}
		if length > maxRecordSize || s.off+recordHeader+length > s.size {
			return s.badRecord("a record cut short")
		}
		if int64(cap(payload)) < length {
			payload = make([]byte, length)
		}
		payload = payload[:length]
		if _, err := io.ReadFull(s.r, payload); err != nil {
			return fmt.Errorf("ddblocal: reading %s: %w", s.name, err)
		}
		if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(rh[12:]) {
			return s.badRecord("a record's checksum fails")
		}
		if err := ld.db.replayRecord(payload, ld.pinned); err != nil {
			return fmt.Errorf("ddblocal: replaying record %d at offset %d of %s: %w", seq, s.off, s.name, err)
		}
		ld.rec.Records++
		ld.expect++
		s.off += recordHeader + length
	}
	return nil
}

// cutHeader handles a segment whose header is not whole: a newest segment
// the MANIFEST does not list yet was being created when the process
// stopped (no record was ever written to it); anywhere else it is damage.
func (s *segmentScan) cutHeader(reason string) error {
	ld := s.ld
	if s.newest && (!ld.hasMan || s.n > ld.man.lastSeg) && ld.stop == nil {
		ld.torn = &TornTail{File: s.name, Offset: 0, Bytes: s.size, Reason: reason + ", in a segment being created"}
		ld.removeTop = true
		return nil
	}
	return s.corrupt(0, reason)
}

// badRecord decides what a record that does not read whole at s.off is: a
// torn tail (the newest segment, numbered above the durable mark, nothing
// whole after it) or damage.
func (s *segmentScan) badRecord(reason string) error {
	ld := s.ld
	switch {
	case !s.newest:
		return s.corrupt(s.off, reason+", in a segment before the newest (a crash cuts short only the newest)")
	case !ld.hasMan:
		return s.corrupt(s.off, reason+", and without a MANIFEST nothing says it was never acknowledged")
	case ld.expect <= ld.man.durable:
		return s.corrupt(s.off, fmt.Sprintf("%s, in record %d, which was acknowledged (the MANIFEST says records up to %d reached the disk)", reason, ld.expect, ld.man.durable))
	}
	at, err := wholeRecordAfter(s.path, s.off+1, s.size, ld.expect)
	if err != nil {
		return err
	}
	if at >= 0 {
		return s.corrupt(s.off, fmt.Sprintf("%s, and a whole record follows it at offset %d", reason, at))
	}
	ld.torn = &TornTail{File: s.name, Offset: s.off, Bytes: s.size - s.off, Reason: reason}
	return nil
}

// wholeRecordAfter returns the first offset at or after from where a whole
// record header numbered from minSeq on (below minSeq+2^32) starts in the
// file, or -1. A record cut short by a crash is the last thing in its
// segment; a whole one after a damaged one means the damage is not a crash's.
func wholeRecordAfter(path string, from, size int64, minSeq uint64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return -1, fmt.Errorf("ddblocal: %w", err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for pos := from; pos+recordHeader <= size; {
		k, err := f.ReadAt(buf, pos)
		if err != nil && !errors.Is(err, io.EOF) {
			return -1, fmt.Errorf("ddblocal: %w", err)
		}
		b := buf[:k]
		for i := 0; i+recordHeader <= len(b); i++ {
			h := b[i : i+recordHeader]
			seq := binary.LittleEndian.Uint64(h[4:])
			if seq < minSeq || seq-minSeq >= 1<<32 || binary.LittleEndian.Uint32(h[0:]) > maxRecordSize {
				continue
			}
			if crc32.Checksum(h[:16], castagnoli) == binary.LittleEndian.Uint32(h[16:]) {
				return pos + int64(i), nil
			}
		}
		if k < recordHeader {
			break
		}
		pos += int64(k - recordHeader + 1)
	}
	return -1, nil
}

// checkDurable refuses a log that ends below the MANIFEST's durable mark:
// acknowledged writes are missing (a segment cut at a record boundary, or
// removed).
func (ld *loader) checkDurable() error {
	if !ld.hasMan || ld.stop != nil || ld.expect-1 >= ld.man.durable {
		return nil
	}
	file, off, seg := manifestName, int64(0), uint64(0)
	if ld.top >= ld.base {
		seg = ld.top
		file = segmentName(ld.top)
		if st, err := os.Stat(filepath.Join(ld.dir, file)); err == nil {
			off = st.Size()
		}
		if ld.torn != nil {
			off = ld.torn.Offset
		}
	}
	return ld.refuse(seg, &CorruptionError{File: file, Offset: off, Salvageable: true,
		Reason: fmt.Sprintf("the log ends after record %d, but the MANIFEST says records up to %d reached the disk: acknowledged writes are missing (a segment cut short or removed)", ld.expect-1, ld.man.durable)})
}

// apply makes the directory what start-up decided: a torn tail moved
// aside, salvaged files set aside, the log on disk, covered files removed.
func (ld *loader) apply() error {
	if sv := ld.rec.Salvage; sv != nil {
		sv.Replayed = ld.expect - 1
		if ld.hasMan {
			sv.Acknowledged = ld.man.durable
		}
	}
	if ld.stop != nil {
		if err := ld.setAside(); err != nil {
			return err
		}
	}
	if t := ld.torn; t != nil {
		if err := ld.keepTorn(t); err != nil {
			return err
		}
		ld.rec.TornTail = t
	}
	// What was replayed is served from now on: it must be on disk even if
	// the crash left it only in the page cache.
	if ld.top >= ld.base {
		if err := syncFile(filepath.Join(ld.dir, segmentName(ld.top))); err != nil {
			return err
		}
	}
	for _, name := range ld.obsolete {
		_ = os.Remove(filepath.Join(ld.dir, name))
	}
	return syncDir(ld.dir)
}

// keepTorn moves the bytes of a torn tail into a file of their own and cuts
// the segment there.
func (ld *loader) keepTorn(t *TornTail) error {
	path := filepath.Join(ld.dir, t.File)
	kept, err := freeName(ld.dir, fmt.Sprintf("%s.torn-%d", t.File, t.Offset))
	if err != nil {
		return err
	}
	t.Kept = kept
	if ld.removeTop {
		// A segment whose creation was cut short holds no record: keep it
		// whole under the new name; the next segment takes its number.
		if err := os.Rename(path, filepath.Join(ld.dir, kept)); err != nil {
			return fmt.Errorf("ddblocal: %w", err)
		}
		ld.top--
		return nil
	}
	if err := copyTail(path, t.Offset, filepath.Join(ld.dir, kept)); err != nil {
		return err
	}
	if err := os.Truncate(path, t.Offset); err != nil {
		return fmt.Errorf("ddblocal: dropping the torn tail of %s: %w", t.File, err)
	}
	return nil
}

// setAside (salvage) moves what follows the first damage into a directory
// of its own: the rest of the damaged segment and every later segment.
func (ld *loader) setAside() error {
	ce := ld.stop
	sv := ld.rec.Salvage
	if ld.stopSeg < ld.base { // the log ends early: nothing is set aside
		return nil
	}
	name, err := freeName(ld.dir, fmt.Sprintf("salvage-%d-%d", ld.stopSeg, ce.Offset))
	if err != nil {
		return err
	}
	aside := filepath.Join(ld.dir, name)
	if err := os.Mkdir(aside, 0o755); err != nil {
		return fmt.Errorf("ddblocal: %w", err)
	}
	sv.Dir = name
	first := filepath.Join(ld.dir, segmentName(ld.stopSeg))
	keep := ce.Offset > 0 && ce.File == segmentName(ld.stopSeg)
	if st, err := os.Stat(first); err == nil && keep && ce.Offset < st.Size() {
		part := fmt.Sprintf("%s.from-%d", segmentName(ld.stopSeg), ce.Offset)
		if err := copyTail(first, ce.Offset, filepath.Join(aside, part)); err != nil {
			return err
		}
		if err := os.Truncate(first, ce.Offset); err != nil {
			return fmt.Errorf("ddblocal: %w", err)
		}
		sv.Files = append(sv.Files, part)
	}
	from := ld.stopSeg
	if keep {
		from++
	}
	for n := from; n <= ld.top; n++ {
		if err := os.Rename(filepath.Join(ld.dir, segmentName(n)), filepath.Join(aside, segmentName(n))); err == nil {
			sv.Files = append(sv.Files, segmentName(n))
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("ddblocal: %w", err)
		}
	}
	ld.top = from - 1
	ld.torn = nil // inside what was set aside
	return syncDir(aside)
}

// freeName returns name, or name with a suffix, that no file in dir has.
func freeName(dir, name string) (string, error) {
	for i := 0; i < 1000; i++ {
		try := name
		if i > 0 {
			try = fmt.Sprintf("%s.%d", name, i)
		}
		if _, err := os.Lstat(filepath.Join(dir, try)); errors.Is(err, os.ErrNotExist) {
			return try, nil
		}
	}
	return "", fmt.Errorf("ddblocal: no free name for %s in %s", name, dir)
}

// copyTail writes the bytes of src from off on to a new file dst, fsynced.
func copyTail(src string, off int64, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("ddblocal: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("ddblocal: %w", err)
	}
	if _, err := io.Copy(out, io.NewSectionReader(in, off, 1<<62)); err != nil {
		out.Close()
		return fmt.Errorf("ddblocal: keeping %s: %w", dst, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return fmt.Errorf("ddblocal: fsync of %s: %w", dst, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("ddblocal: %w", err)
	}
	return syncDir(filepath.Dir(dst))
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("ddblocal: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("ddblocal: fsync of %s: %w", path, err)
	}
	return nil
}
