package ddblocal_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
)

// Issue 28 item 1: damage to the log of a data directory must never drop
// acknowledged writes silently. Start-up either brings back every
// acknowledged write or refuses, naming the file and offset, and leaves the
// directory as it found it.

// ackedDir writes `sessions` sessions of `each` acknowledged items to a fresh
// data directory, each session ended by a crash (SIGKILL), so the directory
// holds one log segment per session and no snapshot. Item id i has v = i.
func ackedDir(t *testing.T, sessions, each int) string {
	t.Helper()
	dir := t.TempDir()
	for sess := range sessions {
		db, err := ddblocal.Open(dir, ddblocal.WithSnapshotEvery(0))
		require.NoError(t, err)
		if sess == 0 {
			persistTables(t, db)
		}
		for i := sess * each; i < (sess+1)*each; i++ {
			putAcked(t, db, i)
		}
		ddblocal.CrashForTest(db)
	}
	return dir
}

func putAcked(t *testing.T, db *ddblocal.DB, i int) {
	t.Helper()
	_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("plain"),
		Item: map[string]types.AttributeValue{"id": n(fmt.Sprint(i)), "v": n(fmt.Sprint(i))}})
	require.NoError(t, err)
}

// requireAcked fails unless items 0..count-1 are all in db with their value.
func requireAcked(t *testing.T, db *ddblocal.DB, count int) {
	t.Helper()
	for i := range count {
		out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("plain"),
			Key: map[string]types.AttributeValue{"id": n(fmt.Sprint(i))}})
		require.NoError(t, err)
		require.NotNil(t, out.Item, "acknowledged item %d is missing", i)
		require.Equal(t, n(fmt.Sprint(i)), out.Item["v"], "item %d", i)
	}
}

// segments returns the paths of dir's log segments, oldest first.
func segments(t *testing.T, dir string) []string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	require.NoError(t, err)
	sort.Strings(segs)
	return segs
}

// dirDigest is every file of dir with the SHA-256 of its content.
func dirDigest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		sum := sha256.Sum256(b)
		out[e.Name()] = hex.EncodeToString(sum[:])
	}
	return out
}

// requireRefused opens dir, which must fail with a CorruptionError naming
// file (its base name) at offset, and leave dir exactly as it was.
func requireRefused(t *testing.T, dir, file string, offset int64) *ddblocal.CorruptionError {
	t.Helper()
	before := dirDigest(t, dir)
	db, err := ddblocal.Open(dir)
	if err == nil {
		rec := db.Recovery()
		require.NoError(t, db.Close())
		t.Fatalf("start-up succeeded on a damaged log: %s", rec)
	}
	var ce *ddblocal.CorruptionError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, file, ce.File, "%v", err)
	if offset >= 0 {
		require.Equal(t, offset, ce.Offset, "%v", err)
	}
	require.Equal(t, before, dirDigest(t, dir), "a refused start-up changes nothing in the directory")
	return ce
}

func flipByte(t *testing.T, path string, off int64, mask byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[off] ^= mask
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func recordOffsets(t *testing.T, path string) []int64 {
	t.Helper()
	offs, err := ddblocal.RecordOffsetsForTest(path)
	require.NoError(t, err)
	return offs
}

// The first report: XOR 0x40 into the high byte of record 100's
// length field. Before the fix start-up dropped records 100 onwards as "a
// torn tail".
func TestRecoveryRefusesAFlippedLengthBit(t *testing.T) {
	t.Parallel()
	dir := ackedDir(t, 1, 300)
	seg := segments(t, dir)[0]
	offs := recordOffsets(t, seg)
	require.Greater(t, len(offs), 250)
	flipByte(t, seg, offs[100]+3, 0x40)
	requireRefused(t, dir, filepath.Base(seg), offs[100])
}

// Zeroing the log from a middle record to its end (as a lost range of
// pages would) is refused: those writes were acknowledged.
func TestRecoveryRefusesZeroesFromAMiddleRecordToTheEnd(t *testing.T) {
	t.Parallel()
	dir := ackedDir(t, 1, 300)
	seg := segments(t, dir)[0]
	offs := recordOffsets(t, seg)
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	clear(b[offs[150]:])
	require.NoError(t, os.WriteFile(seg, b, 0o644))
	requireRefused(t, dir, filepath.Base(seg), offs[150])
}

// One bit flipped in the payload of the last record, which was
// acknowledged: it is not a torn write.
func TestRecoveryRefusesADamagedLastAcknowledgedRecord(t *testing.T) {
	t.Parallel()
	dir := ackedDir(t, 1, 50)
	seg := segments(t, dir)[0]
	offs := recordOffsets(t, seg)
	st, err := os.Stat(seg)
	require.NoError(t, err)
	flipByte(t, seg, st.Size()-2, 0x01)
	requireRefused(t, dir, filepath.Base(seg), offs[len(offs)-1])
}

// A log cut at a record boundary inside acknowledged writes reads as a
// whole log unless something says how far the acknowledged writes went.
func TestRecoveryRefusesALogCutAtARecordBoundary(t *testing.T) {
	t.Parallel()
	dir := ackedDir(t, 1, 60)
	seg := segments(t, dir)[0]
	offs := recordOffsets(t, seg)
	require.NoError(t, os.Truncate(seg, offs[40]))
	requireRefused(t, dir, filepath.Base(seg), offs[40])
}

// A deleted newest segment: its writes were acknowledged.
func TestRecoveryRefusesAMissingNewestSegment(t *testing.T) {
	t.Parallel()
	dir := ackedDir(t, 3, 20)
	segs := segments(t, dir)
	require.Len(t, segs, 3)
	require.NoError(t, os.Remove(segs[2]))
	ce := requireRefused(t, dir, filepath.Base(segs[2]), -1)
	require.True(t, ce.Missing, "%v", ce)
}

// A deleted middle segment: replaying the next one on top of the one before
// would make a state no client ever saw.
func TestRecoveryRefusesAMissingMiddleSegment(t *testing.T) {
	t.Parallel()
	dir := ackedDir(t, 3, 20)
	segs := segments(t, dir)
	require.NoError(t, os.Remove(segs[1]))
	ce := requireRefused(t, dir, filepath.Base(segs[1]), -1)
	require.True(t, ce.Missing, "%v", ce)
}

// A genuinely torn tail (a record cut short after the last acknowledged
// write) is dropped, every acknowledged write comes back, and the dropped
// bytes are kept beside the log rather than deleted.
func TestRecoveryKeepsATornTailAsEvidence(t *testing.T) {
	t.Parallel()
	dir := ackedDir(t, 2, 20)
	seg := segments(t, dir)[1]
	f, err := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte{200, 0, 0, 0, 1, 2, 3, 4, 5, 6})
	require.NoError(t, err)
	require.NoError(t, f.Close())

	db, err := ddblocal.Open(dir)
	require.NoError(t, err)
	tt := db.Recovery().TornTail
	require.NotNil(t, tt)
	require.Equal(t, int64(10), tt.Bytes)
	requireAcked(t, db, 40)
	require.NoError(t, db.Close())
	keptFiles, err := filepath.Glob(filepath.Join(dir, "*.torn-*"))
	require.NoError(t, err)
	require.Len(t, keptFiles, 1, "the dropped bytes are kept")
	kept, err := os.ReadFile(keptFiles[0])
	require.NoError(t, err)
	require.Equal(t, []byte{200, 0, 0, 0, 1, 2, 3, 4, 5, 6}, kept)
	db, err = ddblocal.Open(dir)
	require.NoError(t, err)
	requireAcked(t, db, 40)
	require.NoError(t, db.Close())
}

// Salvage (the operator's way past a refusal): every write before the
// damage is kept, the rest is moved aside byte for byte, the report says
// which acknowledged records were lost, and the directory is sound again.
func TestRecoverySalvageKeepsWritesBeforeTheDamage(t *testing.T) {
	t.Parallel()
	dir := ackedDir(t, 1, 300)
	seg := segments(t, dir)[0]
	offs := recordOffsets(t, seg)
	flipByte(t, seg, offs[100]+3, 0x40)
	orig, err := os.ReadFile(seg)
	require.NoError(t, err)

	db, err := ddblocal.Open(dir, ddblocal.WithSalvage())
	require.NoError(t, err)
	sv := db.Recovery().Salvage
	require.NotNil(t, sv)
	require.Len(t, sv.Damage, 1)
	require.Equal(t, offs[100], sv.Damage[0].Offset)
	// Records 1-3 made the tables; record 101 (offset offs[100]) was item 97.
	require.Equal(t, uint64(100), sv.Replayed)
	require.Equal(t, uint64(303), sv.Acknowledged)
	require.Contains(t, db.Recovery().String(), "LOST acknowledged records 101 to 303")
	requireAcked(t, db, 97)
	require.Equal(t, 97, countPlain(t, db))
	aside, err := os.ReadFile(filepath.Join(dir, sv.Dir, sv.Files[0]))
	require.NoError(t, err)
	require.Equal(t, orig[offs[100]:], aside, "what was set aside is the log from the damage on")
	putAcked(t, db, 5000)
	ddblocal.CrashForTest(db)

	db, err = ddblocal.Open(dir)
	require.NoError(t, err, "after salvage the directory opens without it")
	require.Nil(t, db.Recovery().Salvage)
	requireAcked(t, db, 97)
	require.Equal(t, 98, countPlain(t, db))
	require.NoError(t, db.Close())
}

// A MANIFEST or snapshot that is missing is refused: without them a log
// cut short or a state started from nothing would go unnoticed.
func TestRecoveryRefusesAMissingManifestOrSnapshot(t *testing.T) {
	t.Parallel()
	dir := ackedDir(t, 2, 10)
	require.NoError(t, os.Remove(filepath.Join(dir, "MANIFEST")))
	ce := requireRefused(t, dir, "MANIFEST", 0)
	require.True(t, ce.Missing, "%v", ce)

	dir = ackedDir(t, 1, 10)
	db, err := ddblocal.Open(dir)
	require.NoError(t, err)
	require.NoError(t, db.Close()) // writes snap-N and removes the segments before it
	snaps, err := filepath.Glob(filepath.Join(dir, "snap-*"))
	require.NoError(t, err)
	require.Len(t, snaps, 1)
	require.NoError(t, os.Remove(snaps[0]))
	ce = requireRefused(t, dir, filepath.Base(snaps[0]), 0)
	require.True(t, ce.Missing, "%v", ce)
	require.False(t, ce.Salvageable)
}

// A newest segment whose header was cut short while it was created (before
// the MANIFEST listed it) held no record: it is kept aside and its number
// used again.
func TestRecoveryASegmentCutWhileCreatedIsATornTail(t *testing.T) {
	t.Parallel()
	dir := ackedDir(t, 1, 10)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "wal-0000000000000002.log"), []byte("FDDBW"), 0o644))
	db, err := ddblocal.Open(dir)
	require.NoError(t, err)
	tt := db.Recovery().TornTail
	require.NotNil(t, tt)
	require.Equal(t, "wal-0000000000000002.log", tt.File)
	require.Equal(t, "wal-0000000000000002.log.torn-0", tt.Kept)
	requireAcked(t, db, 10)
	putAcked(t, db, 10)
	ddblocal.CrashForTest(db)
	db, err = ddblocal.Open(dir)
	require.NoError(t, err)
	requireAcked(t, db, 11)
	require.NoError(t, db.Close())
}

// requireFormatRefused opens dir (with opts), which must fail with a
// FormatError naming file as written before 0.1.0, and leave dir exactly as
// it was.
func requireFormatRefused(t *testing.T, dir, file string, opts ...ddblocal.Option) {
	t.Helper()
	before := dirDigest(t, dir)
	db, err := ddblocal.Open(dir, opts...)
	if err == nil {
		rec := db.Recovery()
		require.NoError(t, db.Close())
		t.Fatalf("start-up succeeded on a directory of the first format: %s", rec)
	}
	var fe *ddblocal.FormatError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, file, fe.File, "%v", err)
	require.Equal(t, dir, fe.Dir)
	require.Contains(t, err.Error(), file+" was written by a build of ferry before 0.1.0")
	require.Contains(t, err.Error(), "changed nothing in the directory. Start with an empty directory")
	require.Equal(t, before, dirDigest(t, dir), "a refused start-up changes nothing in the directory")
}

// rewriteSnapshotHeader rewrites the header frame of snapshot path (its
// first frame) with fn applied to its fields (version, changeSeq, segment,
// nextSeq), checksummed again.
func rewriteSnapshotHeader(t *testing.T, path string, fn func([]uint64) []uint64) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	length := binary.LittleEndian.Uint32(b[8:])
	payload := b[16 : 16+length]
	require.Equal(t, byte(1), payload[0], "the first frame is the header")
	var fields []uint64
	for rest := payload[1:]; len(rest) > 0; {
		v, k := binary.Uvarint(rest)
		require.Positive(t, k)
		fields, rest = append(fields, v), rest[k:]
	}
	require.Len(t, fields, 4)
	np := []byte{1}
	for _, v := range fn(fields) {
		np = binary.AppendUvarint(np, v)
	}
	out := append([]byte(nil), b[:8]...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(np)))
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(np, crc32.MakeTable(crc32.Castagnoli)))
	out = append(append(out, np...), b[16+length:]...)
	require.NoError(t, os.WriteFile(path, out, 0o644))
}

// A data directory of the first on-disk format, written by a build before
// 0.1.0 (log segments "FDDBWAL1" without record numbers, no MANIFEST,
// snapshots without the number of the record after them), is refused at
// start-up naming the file, with or without salvage, changing nothing: the
// format is not read and has no migration (issue 26). Before, it was
// replayed and moved to the current format.
func TestRecoveryRefusesTheFirstFormat(t *testing.T) {
	t.Parallel()
	dir := ackedDir(t, 1, 20)
	seg := segments(t, dir)[0]
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	v1 := []byte("FDDBWAL1")
	for _, off := range recordOffsets(t, seg) {
		length := binary.LittleEndian.Uint32(b[off:])
		payload := b[off+ddblocal.RecordHeaderForTest : off+ddblocal.RecordHeaderForTest+int64(length)]
		v1 = binary.LittleEndian.AppendUint32(v1, length)
		v1 = binary.LittleEndian.AppendUint32(v1, crc32.Checksum(payload, crc32.MakeTable(crc32.Castagnoli)))
		v1 = append(v1, payload...)
	}
	require.NoError(t, os.WriteFile(seg, v1, 0o644))
	// With the MANIFEST a build between the formats wrote beside it, then
	// as the first format left it: without one.
	requireFormatRefused(t, dir, filepath.Base(seg))
	require.NoError(t, os.Remove(filepath.Join(dir, "MANIFEST")))
	requireFormatRefused(t, dir, filepath.Base(seg))
	requireFormatRefused(t, dir, filepath.Base(seg), ddblocal.WithSalvage())

	// A snapshot whose header does not number the record after it; and
	// one numbering it 0, which is damage.
	for _, tc := range []struct {
		name   string
		header func([]uint64) []uint64
	}{
		{"first format", func(f []uint64) []uint64 { return f[:3] }},
		{"record 0", func(f []uint64) []uint64 { return append(f[:3], 0) }},
	} {
		dir := ackedDir(t, 1, 10)
		db, err := ddblocal.Open(dir)
		require.NoError(t, err)
		require.NoError(t, db.Close()) // writes snap-N
		snaps, err := filepath.Glob(filepath.Join(dir, "snap-*"))
		require.NoError(t, err)
		require.Len(t, snaps, 1)
		rewriteSnapshotHeader(t, snaps[0], tc.header)
		if tc.name == "first format" {
			requireFormatRefused(t, dir, filepath.Base(snaps[0]), ddblocal.WithSalvage())
			require.NoError(t, os.Remove(filepath.Join(dir, "MANIFEST")))
			for _, s := range segments(t, dir) {
				require.NoError(t, os.Remove(s))
			}
			requireFormatRefused(t, dir, filepath.Base(snaps[0]))
			continue
		}
		ce := requireRefused(t, dir, filepath.Base(snaps[0]), 8)
		require.Contains(t, ce.Reason, "numbers the log record after it 0")
	}
}
