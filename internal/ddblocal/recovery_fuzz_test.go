package ddblocal_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
)

// TestWALRecoveryFuzz is issue 28's recovery fuzzer. It builds a data
// directory (a snapshot, four log segments after it, writes of every kind,
// an unacknowledged tail left by a crash), then damages a copy of it in one
// way per case and starts on the copy. Every case must end in one of two
// ways:
//
//   - start-up succeeds and every acknowledged write reads back with its
//     value (unacknowledged ones are there whole or not at all), a dropped
//     torn tail is kept in the file it names, and a second start-up agrees;
//   - start-up fails with a CorruptionError naming a file of the directory
//     (or one missing from it) and an offset inside it, and the directory
//     is byte for byte what it was.
//
// Cases: every offset class of every record of every segment (length,
// number, payload checksum, header checksum, first, middle and last payload
// byte), segment headers, zeroed pages, zeroes from a point to the end,
// truncation at and inside records, appended garbage, zeroes and stale
// records, missing segments (first, middle, newest), the MANIFEST (missing,
// one or both copies damaged) and the snapshot (missing, damaged, cut);
// then random bit flips, zeroed ranges and truncations.
//
// `make test` runs a fixed sample (FERRY_WAL_FUZZ unset: every class, about
// 250 systematic and 50 random cases, seed 28); `make fuzz-wal` runs every systematic case, then random ones for
// FERRY_WAL_FUZZ_TIME (default 2m). FERRY_WAL_FUZZ_SEED replays the random
// cases of one seed.
func TestWALRecoveryFuzz(t *testing.T) {
	t.Parallel()
	base := buildFuzzBase(t)
	cases := systematicCases(t, base)
	full := os.Getenv("FERRY_WAL_FUZZ") == "full"
	if !full {
		cases = sampleCases(cases, 250)
	}
	seed := uint64(time.Now().UnixNano())
	if !full {
		seed = 28
	}
	if s := os.Getenv("FERRY_WAL_FUZZ_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		seed = v
	}
	budget := 100 * time.Hour // the sample: a fixed count of random cases
	randomCount := 50
	if full {
		budget = 2 * time.Minute
		if s := os.Getenv("FERRY_WAL_FUZZ_TIME"); s != "" {
			d, err := time.ParseDuration(s)
			require.NoError(t, err)
			budget = d
		}
		randomCount = 1 << 30
	}
	stats := map[string]*fuzzStat{}
	work := t.TempDir()
	start := time.Now()
	for i, c := range cases {
		runFuzzCase(t, base, work, i, c, stats)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	random := 0
	for ; random < randomCount && time.Since(start) < budget; random++ {
		c := randomCase(base, rng)
		runFuzzCase(t, base, work, len(cases)+random, c, stats)
		if t.Failed() {
			t.Logf("replay: FERRY_WAL_FUZZ_SEED=%d (random case %d)", seed, random)
			return
		}
	}
	var classes []string
	total, refused := 0, 0
	for k := range stats {
		classes = append(classes, k)
	}
	sort.Strings(classes)
	for _, k := range classes {
		st := stats[k]
		total += st.cases
		refused += st.refused
		t.Logf("%-22s %5d cases: %5d recovered every acknowledged write (%d dropping a torn tail), %5d refused naming file and offset", k, st.cases, st.cases-st.refused, st.torn, st.refused)
	}
	t.Logf("%d cases (%d systematic, %d random, seed %d) in %s: %d recovered, %d refused, 0 lost an acknowledged write",
		total, len(cases), random, seed, time.Since(start).Round(time.Millisecond), total-refused, refused)
}

type fuzzStat struct{ cases, refused, torn int }

// fuzzBase is the undamaged directory and what it must bring back.
type fuzzBase struct {
	files   map[string][]byte
	acked   map[int]int // id -> v
	gone    []int       // acknowledged deletes
	unacked map[int]int // written, never durable
	segs    []string    // log segments, oldest first
	records map[string][]int64
}

// fuzzCase is one way of damaging the directory.
type fuzzCase struct {
	class  string
	what   string
	damage func(dir string) error
	// mustRecover: the damage is what a crash leaves (only unacknowledged
	// bytes touched), so refusing would be wrong.
	mustRecover bool
}

func buildFuzzBase(t *testing.T) *fuzzBase {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	b := &fuzzBase{acked: map[int]int{}, unacked: map[int]int{}, records: map[string][]int64{}}
	put := func(db *ddblocal.DB, id, v, pad int) {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("plain"),
			Item: map[string]types.AttributeValue{"id": n(fmt.Sprint(id)), "v": n(fmt.Sprint(v)), "pad": s(strings.Repeat("p", pad))}})
		require.NoError(t, err)
	}
	open := func() *ddblocal.DB {
		db, err := ddblocal.Open(dir, ddblocal.WithSnapshotEvery(0))
		require.NoError(t, err)
		return db
	}
	// Session 1, closed cleanly: the snapshot.
	db := open()
	persistTables(t, db)
	for i := range 30 {
		put(db, i, i, 0)
		b.acked[i] = i
	}
	put(db, 1000, 1000, 6000)
	b.acked[1000] = 1000
	require.NoError(t, db.Close())
	// Session 2: items, a batch and one item bigger than a page.
	db = open()
	for i := 30; i < 60; i++ {
		put(db, i, i, 0)
		b.acked[i] = i
	}
	var reqs []types.WriteRequest
	for i := 200; i < 225; i++ {
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"id": n(fmt.Sprint(i)), "v": n(fmt.Sprint(i))}}})
		b.acked[i] = i
	}
	_, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"plain": reqs}})
	require.NoError(t, err)
	put(db, 1001, 1001, 9000)
	b.acked[1001] = 1001
	ddblocal.CrashForTest(db)
	// Session 3: updates of earlier items and a transaction.
	db = open()
	for i := range 10 {
		_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("plain"), Key: map[string]types.AttributeValue{"id": n(fmt.Sprint(i))},
			UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": n(fmt.Sprint(1000 + i))}})
		require.NoError(t, err)
		b.acked[i] = 1000 + i
	}
	var tx []types.TransactWriteItem
	for i := 300; i < 305; i++ {
		tx = append(tx, types.TransactWriteItem{Put: &types.Put{TableName: aws.String("plain"), Item: map[string]types.AttributeValue{"id": n(fmt.Sprint(i)), "v": n(fmt.Sprint(i))}}})
		b.acked[i] = i
	}
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx})
	require.NoError(t, err)
	ddblocal.CrashForTest(db)
	// Session 4: items, a delete, then writes that never became durable.
	db = open()
	for i := 60; i < 90; i++ {
		put(db, i, i, 0)
		b.acked[i] = i
	}
	_, err = db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("plain"), Key: map[string]types.AttributeValue{"id": n("20")}})
	require.NoError(t, err)
	delete(b.acked, 20)
	b.gone = []int{20}
	ddblocal.UnsyncedForTest(db, func() {
		for i := 120; i < 123; i++ {
			put(db, i, i, 0)
			b.unacked[i] = i
		}
	})
	ddblocal.CrashForTest(db)

	b.files = map[string][]byte{}
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		if e.Name() == "RESERVE" {
			continue // allocated room, no data
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		b.files[e.Name()] = data
		if strings.HasPrefix(e.Name(), "wal-") {
			b.segs = append(b.segs, e.Name())
			b.records[e.Name()] = recordOffsets(t, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(b.segs)
	require.Len(t, b.segs, 4, "a snapshot, the empty segment after it and three of the sessions: %v", ents)
	require.Contains(t, b.files, "MANIFEST")
	return b
}

// unackedFrom is the offset in the newest segment where the writes that
// never became durable start.
func (b *fuzzBase) unackedFrom() (string, int64) {
	seg := b.segs[len(b.segs)-1]
	offs := b.records[seg]
	return seg, offs[len(offs)-len(b.unacked)]
}

func (b *fuzzBase) snapshot() string {
	for name := range b.files {
		if strings.HasPrefix(name, "snap-") {
			return name
		}
	}
	return ""
}

func flipAt(name string, off int64, mask byte) func(string) error {
	return func(dir string) error {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		data[off] ^= mask
		return os.WriteFile(path, data, 0o644)
	}
}

func zeroRange(name string, from, to int64) func(string) error {
	return func(dir string) error {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		to = min(to, int64(len(data)))
		clear(data[from:to])
		return os.WriteFile(path, data, 0o644)
	}
}

func truncateAt(name string, off int64) func(string) error {
	return func(dir string) error { return os.Truncate(filepath.Join(dir, name), off) }
}

func appendBytes(name string, extra []byte) func(string) error {
	return func(dir string) error {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.Write(extra)
		return errors.Join(err, f.Close())
	}
}

func removeFile(name string) func(string) error {
	return func(dir string) error { return os.Remove(filepath.Join(dir, name)) }
}

// systematicCases enumerates every offset class of every file.
func systematicCases(t *testing.T, b *fuzzBase) []fuzzCase {
	t.Helper()
	var cs []fuzzCase
	add := func(class, what string, f func(string) error, mustRecover bool) {
		cs = append(cs, fuzzCase{class: class, what: what, damage: f, mustRecover: mustRecover})
	}
	tornSeg, tornFrom := b.unackedFrom()
	hdr := int64(ddblocal.RecordHeaderForTest)
	for si, seg := range b.segs {
		size := int64(len(b.files[seg]))
		offs := b.records[seg]
		newest := si == len(b.segs)-1
		for _, o := range []int64{0, 7, 8, 15, 16, 19} {
			add("segment-header", fmt.Sprintf("%s byte %d", seg, o), flipAt(seg, o, 0x10), false)
		}
		for ri, off := range offs {
			end := size
			if ri+1 < len(offs) {
				end = offs[ri+1]
			}
			// Damage that reaches the end of the newest segment and touches
			// only writes never acknowledged is what a crash leaves: it must
			// be recovered. A damaged unacknowledged record with whole ones
			// after it is not a crash's shape and may be refused.
			unacked := newest && off >= tornFrom
			last := unacked && ri == len(offs)-1
			where := fmt.Sprintf("%s record %d at %d", seg, ri, off)
			add("length", where, flipAt(seg, off+3, 0x40), last)
			add("length-low", where, flipAt(seg, off, 0x01), last)
			add("sequence", where, flipAt(seg, off+4, 0x01), last)
			add("payload-checksum", where, flipAt(seg, off+12, 0x80), last)
			add("header-checksum", where, flipAt(seg, off+17, 0x02), last)
			add("payload", where+" first byte", flipAt(seg, off+hdr, 0x04), last)
			add("payload", where+" middle byte", flipAt(seg, off+hdr+(end-off-hdr)/2, 0x20), last)
			add("payload", where+" last byte", flipAt(seg, end-1, 0x01), last)
			add("zero-to-end", where, zeroRange(seg, off, size), unacked)
			add("zero-to-end", where+" from inside", zeroRange(seg, off+hdr+1, size), unacked)
			add("truncate", where, truncateAt(seg, off), unacked)
			add("truncate", where+" inside its header", truncateAt(seg, off+5), unacked)
			add("truncate", where+" inside its payload", truncateAt(seg, end-1), unacked)
			add("stale-record", where+" appended again", appendBytes(seg, b.files[seg][off:end]), false)
		}
		for p := int64(0); p < size; p += 4096 {
			add("zero-page", fmt.Sprintf("%s page at %d", seg, p), zeroRange(seg, p, p+4096), newest && p >= tornFrom && p+4096 >= size)
		}
		add("truncate", seg+" to nothing", truncateAt(seg, 0), false)
		add("missing-segment", seg, removeFile(seg), false)
	}
	garbage := []byte{200, 0, 0, 0, 9, 9, 9, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	add("torn-append", tornSeg+" garbage appended", appendBytes(tornSeg, garbage), true)
	add("torn-append", tornSeg+" a header appended", appendBytes(tornSeg, garbage[:7]), true)
	add("torn-append", tornSeg+" zeroes appended", appendBytes(tornSeg, make([]byte, 8192)), true)
	for _, o := range []int64{0, 4, 8, 16, 40, 48, 51, 4096, 4100} {
		add("manifest", fmt.Sprintf("MANIFEST byte %d", o), flipAt("MANIFEST", o, 0x08), false)
	}
	add("manifest", "both copies", func(dir string) error {
		return errors.Join(flipAt("MANIFEST", 20, 1)(dir), flipAt("MANIFEST", 4096+20, 1)(dir))
	}, false)
	add("manifest", "missing", removeFile("MANIFEST"), false)
	add("manifest", "emptied", truncateAt("MANIFEST", 0), false)
	snap := b.snapshot()
	add("snapshot", "missing", removeFile(snap), false)
	add("snapshot", "cut short", truncateAt(snap, int64(len(b.files[snap]))-30), false)
	for _, frac := range []int64{0, 1, 2, 3} {
		off := int64(len(b.files[snap])) * frac / 4
		add("snapshot", fmt.Sprintf("byte %d", off), flipAt(snap, off, 0x01), false)
	}
	return cs
}

// sampleCases keeps every class's first and last case and an even spread
// of the rest, about n in all.
func sampleCases(cs []fuzzCase, n int) []fuzzCase {
	if len(cs) <= n {
		return cs
	}
	byClass := map[string][]int{}
	for i, c := range cs {
		byClass[c.class] = append(byClass[c.class], i)
	}
	keep := map[int]bool{}
	for _, idx := range byClass {
		keep[idx[0]] = true
		keep[idx[len(idx)-1]] = true
	}
	step := float64(len(cs)) / float64(n-len(keep))
	for f := 0.0; int(f) < len(cs); f += step {
		keep[int(f)] = true
	}
	var out []fuzzCase
	for i, c := range cs {
		if keep[i] {
			out = append(out, c)
		}
	}
	return out
}

// randomCase damages a random file at a random place.
func randomCase(b *fuzzBase, rng *rand.Rand) fuzzCase {
	names := make([]string, 0, len(b.files))
	for name := range b.files {
		if name != "LOCK" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	name := names[rng.IntN(len(names))]
	size := int64(len(b.files[name]))
	if size == 0 {
		return fuzzCase{class: "random-truncate", what: name, damage: truncateAt(name, 0)}
	}
	off := rng.Int64N(size)
	switch rng.IntN(4) {
	case 0:
		return fuzzCase{class: "random-zeroes", what: fmt.Sprintf("%s %d+", name, off), damage: zeroRange(name, off, off+1+rng.Int64N(5000))}
	case 1:
		return fuzzCase{class: "random-truncate", what: fmt.Sprintf("%s at %d", name, off), damage: truncateAt(name, off)}
	default:
		mask := byte(1 << rng.IntN(8))
		return fuzzCase{class: "random-bit", what: fmt.Sprintf("%s byte %d mask %#x", name, off, mask), damage: flipAt(name, off, mask)}
	}
}

func runFuzzCase(t *testing.T, b *fuzzBase, work string, i int, c fuzzCase, stats map[string]*fuzzStat) {
	t.Helper()
	dir := filepath.Join(work, fmt.Sprint(i))
	require.NoError(t, os.Mkdir(dir, 0o755))
	defer os.RemoveAll(dir)
	for name, data := range b.files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	require.NoError(t, c.damage(dir), "%s: %s", c.class, c.what)
	st := stats[c.class]
	if st == nil {
		st = &fuzzStat{}
		stats[c.class] = st
	}
	st.cases++
	before := dirDigest(t, dir)
	db, err := ddblocal.Open(dir)
	if err != nil {
		st.refused++
		var ce *ddblocal.CorruptionError
		require.ErrorAs(t, err, &ce, "%s: %s", c.class, c.what)
		require.False(t, c.mustRecover, "%s: %s: a crash's damage was refused: %v", c.class, c.what, err)
		require.Equal(t, before, dirDigest(t, dir), "%s: %s: a refused start-up changed the directory", c.class, c.what)
		fi, statErr := os.Stat(filepath.Join(dir, ce.File))
		if statErr == nil {
			require.True(t, ce.Offset >= 0 && ce.Offset <= fi.Size(), "%s: %s: offset %d outside %s (%d bytes)", c.class, c.what, ce.Offset, ce.File, fi.Size())
		} else {
			require.True(t, ce.Missing, "%s: %s: %v names no file of the directory", c.class, c.what, err)
		}
		return
	}
	rec := db.Recovery()
	checkFuzzState(t, db, b, c)
	require.NoError(t, db.Close())
	if tt := rec.TornTail; tt != nil {
		st.torn++
		kept, err := os.ReadFile(filepath.Join(dir, tt.Kept))
		require.NoError(t, err, "%s: %s: the torn tail's bytes are kept", c.class, c.what)
		require.Len(t, kept, int(tt.Bytes))
	}
	db, err = ddblocal.Open(dir)
	require.NoError(t, err, "%s: %s: the second start-up", c.class, c.what)
	checkFuzzState(t, db, b, c)
	require.NoError(t, db.Close())
}

// checkFuzzState: every acknowledged write is there with its value, every
// acknowledged delete took effect, an unacknowledged write is whole or
// absent.
func checkFuzzState(t *testing.T, db *ddblocal.DB, b *fuzzBase, c fuzzCase) {
	t.Helper()
	get := func(id int) map[string]types.AttributeValue {
		out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("plain"),
			Key: map[string]types.AttributeValue{"id": n(fmt.Sprint(id))}})
		require.NoError(t, err)
		return out.Item
	}
	for id, v := range b.acked {
		it := get(id)
		require.NotNil(t, it, "%s: %s: acknowledged item %d LOST", c.class, c.what, id)
		require.Equal(t, n(fmt.Sprint(v)), it["v"], "%s: %s: acknowledged item %d has the wrong value", c.class, c.what, id)
	}
	for _, id := range b.gone {
		require.Nil(t, get(id), "%s: %s: acknowledged delete of %d undone", c.class, c.what, id)
	}
	for id, v := range b.unacked {
		if it := get(id); it != nil {
			require.Equal(t, n(fmt.Sprint(v)), it["v"], "%s: %s: item %d", c.class, c.what, id)
		}
	}
}
