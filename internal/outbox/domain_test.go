package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCanTransitionTable(t *testing.T) {
	t.Parallel()
	allowed := map[[2]State]bool{
		{StatePROPOSED, StateADMITTED}:   true,
		{StatePROPOSED, StateCANCELLED}:  true,
		{StateADMITTED, StateEXECUTING}:  true,
		{StateADMITTED, StateCANCELLED}:  true,
		{StateEXECUTING, StateEXECUTING}: true,
		{StateEXECUTING, StateADMITTED}:  true,
		{StateEXECUTING, StateDONE}:      true,
		{StateEXECUTING, StateUNCERTAIN}: true,
		{StateEXECUTING, StateFAILED}:    true,
		{StateEXECUTING, StateCANCELLED}: true,
	}
	for _, from := range States() {
		for _, to := range States() {
			require.Equal(t, allowed[[2]State{from, to}], CanTransition(from, to), "%s -> %s", from, to)
		}
		require.True(t, from.Valid())
		if from.Ended() {
			require.Empty(t, transitions[from], "an ended action never changes")
		}
	}
	require.False(t, State("BOGUS").Valid())
}

func TestErrorResultByClassAndFence(t *testing.T) {
	t.Parallel()
	cause := errors.New("boom")
	for _, tc := range []struct {
		name   string
		class  DeliveryClass
		fenced bool
		want   Outcome
	}{
		{"ReadBackBeforeFence", ReadBack, false, OutcomeRetry},
		{"IdempotentBeforeFence", IdempotentReceiver, false, OutcomeRetry},
		{"AtMostOnceBeforeFence", AtMostOnce, false, OutcomeRetry},
		{"ReadBackAfterFence", ReadBack, true, OutcomeReread},
		{"IdempotentAfterFence", IdempotentReceiver, true, OutcomeRetry},
		{"AtMostOnceAfterFence", AtMostOnce, true, OutcomeUncertain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := errorResult(tc.class, tc.fenced, cause)
			require.Equal(t, tc.want, r.Outcome)
			require.ErrorIs(t, r.Err, cause)
			// A panic maps the same way.
			got := safeCall(tc.class, tc.fenced, func() Result { panic("x") })
			require.Equal(t, tc.want, got.Outcome)
			var pe *PanicError
			require.ErrorAs(t, got.Err, &pe)
			// So does "no verdict" from Execute.
			n := normalizeResult(tc.class, tc.fenced, Result{Err: cause})
			if tc.fenced {
				require.Equal(t, tc.want, n.Outcome)
			}
		})
	}
}

func TestNormalizeReread(t *testing.T) {
	t.Parallel()
	require.Equal(t, OutcomeReread, normalizeResult(ReadBack, true, Reread(time.Second, nil)).Outcome)
	require.Equal(t, OutcomeUncertain, normalizeResult(AtMostOnce, true, Reread(time.Second, nil)).Outcome)
	require.Equal(t, OutcomeRetry, normalizeResult(IdempotentReceiver, true, Reread(time.Second, nil)).Outcome)
	require.Equal(t, OutcomeRetry, normalizeResult(IdempotentReceiver, true, Result{}).Outcome, "no verdict is an error")
	require.Equal(t, OutcomeUncertain, normalizeResult(AtMostOnce, true, Result{Outcome: Outcome(99)}).Outcome)
}

func TestDecide(t *testing.T) {
	t.Parallel()
	const b = 4 * time.Second
	for _, tc := range []struct {
		name          string
		r             Result
		attempt, max_ int
		want          decision
	}{
		{"Done", Done("r"), 1, 3, decision{To: StateDONE, Reason: StopDone, Write: true}},
		{"Retry", Retry(nil), 1, 3, decision{To: StateADMITTED, Wait: b, Write: true}},
		{"RetryWaitsAtLeast", Result{Outcome: OutcomeRetry, Wait: time.Minute}, 1, 3, decision{To: StateADMITTED, Wait: time.Minute, Write: true}},
		{"RetryLast", Retry(nil), 3, 3, decision{To: StateFAILED, Reason: StopAttemptsExhausted, Write: true}},
		{"Defer", Defer(time.Minute, nil), 3, 3, decision{To: StateADMITTED, Wait: time.Minute, Uncount: true, Write: true}},
		{"DeferNoWait", Defer(0, nil), 1, 3, decision{To: StateADMITTED, Wait: b, Uncount: true, Write: true}},
		{"Reread", Reread(time.Minute, nil), 1, 3, decision{To: StateEXECUTING, Wait: time.Minute, KeepFence: true, Write: true}},
		{"RereadLast", Reread(time.Minute, nil), 3, 3, decision{To: StateUNCERTAIN, Reason: StopAttemptsExhausted, Write: true}},
		{"Uncertain", Uncertain(nil), 1, 3, decision{To: StateUNCERTAIN, Reason: StopUncertain, Write: true}},
		{"Failed", Failed(StopGone, nil), 1, 3, decision{To: StateFAILED, Reason: StopGone, Write: true}},
		{"FailedDefault", Result{Outcome: OutcomeFailed}, 1, 3, decision{To: StateFAILED, Reason: StopFailed, Write: true}},
		{"Cancelled", Cancelled("", nil), 1, 3, decision{To: StateCANCELLED, Reason: StopCancelled, Write: true}},
		{"Absent", Cancelled(StopAbsent, nil), 1, 3, decision{To: StateCANCELLED, Reason: StopAbsent, Write: true}},
		{"Abandoned", Result{Outcome: OutcomeAbandoned}, 1, 3, decision{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, decide(tc.r, tc.attempt, tc.max_, b))
		})
	}
}

// TestDecideDeferral holds the deferral bounds of design.md §6 (issue 13,
// finding 1): a Defer without a usable wait backs off like a retry, no
// wait reaches past the streak's time bound, and a streak at either bound
// ends FAILED with DEFERRALS_EXHAUSTED.
func TestDecideDeferral(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	const backoff = 4 * time.Second
	b := deferBounds{Max: 5, For: time.Hour}
	cut := now.Add(-time.Hour)
	defer1 := func(wait time.Duration, since time.Time) decision {
		return decision{To: StateADMITTED, Wait: wait, Uncount: true, Write: true,
			Deferral: &deferralWrite{Max: 5, Cutoff: cut, Since: since}}
	}
	exhausted := decision{To: StateFAILED, Reason: StopDeferralsExhausted, Write: true,
		Deferral: &deferralWrite{Exhausted: true, Max: 5, Cutoff: cut}}
	for _, tc := range []struct {
		name string
		r    Result
		s    deferStreak
		want decision
	}{
		{"ProviderWaitHonoured", Defer(time.Minute, nil), deferStreak{}, defer1(time.Minute, now)},
		{"RetryAfterZeroBacksOff", Defer(0, nil), deferStreak{}, defer1(backoff, now)},
		{"NegativeWaitBacksOff", Defer(-time.Second, nil), deferStreak{}, defer1(backoff, now)},
		{"StreakKeepsItsStart", Defer(time.Minute, nil), deferStreak{Count: 2, Since: now.Add(-10 * time.Minute)}, defer1(time.Minute, now.Add(-10*time.Minute))},
		{"AbsurdWaitClampedToTheBound", Defer(48*time.Hour, nil), deferStreak{}, defer1(time.Hour, now)},
		{"WaitClampedToWhatIsLeft", Defer(time.Hour, nil), deferStreak{Count: 1, Since: now.Add(-50 * time.Minute)}, defer1(10*time.Minute, now.Add(-50*time.Minute))},
		{"LastDeferralWithinCount", Defer(time.Second, nil), deferStreak{Count: 4, Since: now.Add(-time.Minute)}, defer1(time.Second, now.Add(-time.Minute))},
		{"CountExhausted", Defer(time.Second, nil), deferStreak{Count: 5, Since: now.Add(-time.Minute)}, exhausted},
		{"TimeExhausted", Defer(time.Second, nil), deferStreak{Count: 1, Since: cut}, exhausted},
		{"TimeExhaustedWithoutWait", Defer(0, nil), deferStreak{Count: 3, Since: cut.Add(-time.Second)}, exhausted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, decideDeferral(tc.r, tc.s, b, now, backoff))
		})
	}
}

func TestBackoffWithInjectedJitter(t *testing.T) {
	t.Parallel()
	bo := Backoff{Base: time.Second, Cap: 10 * time.Second}
	require.Equal(t, time.Second, bo.Delay(1, nil))
	require.Equal(t, 2*time.Second, bo.Delay(2, nil))
	require.Equal(t, 8*time.Second, bo.Delay(4, nil))
	require.Equal(t, 10*time.Second, bo.Delay(5, nil))
	require.Equal(t, 10*time.Second, bo.Delay(500, nil), "no overflow")
	r1 := rand.New(rand.NewPCG(1, 2))
	r2 := rand.New(rand.NewPCG(1, 2))
	for n := 1; n < 10; n++ {
		d := bo.Delay(n, r1)
		require.Equal(t, d, bo.Delay(n, r2), "the same seed replays")
		upper := bo.Delay(n, nil)
		require.GreaterOrEqual(t, d, upper/2)
		require.LessOrEqual(t, d, upper)
	}
}

func TestActionIDRoundTrip(t *testing.T) {
	t.Parallel()
	// A key spelled `<partition>-<seq>` is no id (no build mints that form).
	for _, bad := range []string{"", "7", "7-42", "7-", "-1", "a-1", "1-b", "07-1", "1-0", "-1-2", "1-2-3"} {
		_, _, err := ParseActionID(bad)
		require.Error(t, err, bad)
	}
	// The form: time, table id, partition, seq.
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	id := NewActionID(t0, 0x123456789a, 4095, 1<<62)
	require.Len(t, id, idMaxChars)
	p, s, err := ParseActionID(id)
	require.NoError(t, err)
	require.Equal(t, 4095, p)
	require.EqualValues(t, int64(1)<<62, s)
	short := NewActionID(t0, 7, 0, 1)
	require.Len(t, short, idFixedChars+1)
	p, s, err = ParseActionID(short)
	require.NoError(t, err)
	require.Equal(t, 0, p)
	require.EqualValues(t, 1, s)
	for _, bad := range []string{short[:idFixedChars], short + "0" + "-", short[:idFixedChars] + "0", short[:idFixedChars] + "01",
		"I" + short[1:], strings.ToUpper(short), short[:5] + "u" + short[6:], id + "0"} {
		_, _, err := ParseActionID(bad)
		require.Error(t, err, bad)
	}
}

// TestActionIDsAreTimeOrderedAndGlobal is issue 13, finding 4: ids were
// per-table counters (0-1, 1-1, 2-754), so a fresh table, a second stack
// or a `ferry dev` restart handed the same webhook-id out again. The same
// key in two tables, or at two times, gives two ids; ids sort by time.
func TestActionIDsAreTimeOrderedAndGlobal(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	a := NewActionID(t0, 1, 0, 1)
	require.NotEqual(t, a, NewActionID(t0, 2, 0, 1), "another table")
	require.NotEqual(t, a, NewActionID(t0.Add(time.Millisecond), 1, 0, 1), "a restored table, later")
	var prev string
	for i, at := range []time.Time{t0, t0.Add(time.Millisecond), t0.Add(time.Hour), t0.AddDate(30, 0, 0)} {
		id := NewActionID(at, uint64(100-i), 9-i, int64(1000-i))
		require.Greater(t, id, prev, "ids sort by their time first")
		prev = id
	}
	require.Equal(t, "A#00000000000000000042", actionSK(42))
	require.Equal(t, "0000000001000#00000000000000000042", timeSK(time.UnixMilli(1000), 42))
}

func TestLanePartition(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 4, 16} {
		seen := map[int]bool{}
		for i := range 200 {
			p := LanePartition("ws", string(rune('a'+i%26))+string(rune('a'+i/26)), n)
			require.GreaterOrEqual(t, p, 0)
			require.Less(t, p, n)
			seen[p] = true
		}
		require.Len(t, seen, n, "lanes spread over every partition")
	}
	require.Equal(t, LanePartition("ws", "x", 16), LanePartition("ws", "x", 16))
	// The workspace is part of the lane's identity.
	diff := 0
	for i := range 50 {
		l := string(rune('a' + i))
		if LanePartition("a", l, 16) != LanePartition("b", l, 16) {
			diff++
		}
	}
	require.Positive(t, diff)
}

func TestConfigDefaultsAndValidation(t *testing.T) {
	t.Parallel()
	c := Config{Table: "t"}.WithDefaults()
	require.NoError(t, c.Validate())
	require.Equal(t, 16, c.Partitions)
	require.Equal(t, 5*time.Minute, c.Lease)
	require.Equal(t, 60*time.Second, c.WriteMargin)
	require.Equal(t, 25, c.BatchSize)
	require.Equal(t, 8, c.MaxAttempts)
	require.Equal(t, 30*24*time.Hour, c.Retention)
	require.Equal(t, 500000, c.RowCap)
	for _, tc := range []struct {
		name, field, mentions string
		mod                   func(*Config)
	}{
		{"NoTable", "Table", "", func(c *Config) { c.Table = "" }},
		{"MarginNotBelowLease", "WriteMargin", "Lease", func(c *Config) { c.WriteMargin = c.Lease }},
		{"SkewNotBelowMargin", "ClockSkew", "WriteMargin", func(c *Config) { c.ClockSkew = c.WriteMargin }},
		{"CapBelowBase", "RetryCap", "RetryBase", func(c *Config) { c.RetryCap = c.RetryBase / 2 }},
		{"BatchTooBig", "BatchSize", "", func(c *Config) { c.BatchSize = 100 }},
		{"NoPartitions", "Partitions", "", func(c *Config) { c.Partitions = -1 }},
		{"ShortRetention", "Retention", "", func(c *Config) { c.Retention = time.Minute }},
		{"HugePayload", "MaxPayload", "", func(c *Config) { c.MaxPayload = 1 << 20 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := Config{Table: "t"}.WithDefaults()
			tc.mod(&c)
			err := c.Validate()
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, tc.field, ve.Field)
			require.Contains(t, err.Error(), tc.mentions)
		})
	}
}

type stubAdapter struct{ spec KindSpec }

func (s stubAdapter) Spec() KindSpec                           { return s.spec }
func (s stubAdapter) Validate(string, json.RawMessage) error   { return nil }
func (s stubAdapter) Execute(context.Context, *Attempt) Result { return Done("") }

func TestRegistry(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	require.NoError(t, r.Register(stubAdapter{KindSpec{Name: "a", Class: IdempotentReceiver}}))
	require.Error(t, r.Register(stubAdapter{KindSpec{Name: "a", Class: AtMostOnce}}), "one adapter per kind")
	require.Error(t, r.Register(stubAdapter{KindSpec{Name: "rb", Class: ReadBack}}), "read-back needs ReadBacker")
	require.Error(t, r.Register(stubAdapter{KindSpec{Name: "x"}}), "class required")
	require.Error(t, r.Register(stubAdapter{KindSpec{Name: "t", Class: AtMostOnce, VariantMode: TaggedShape}}))
	require.NoError(t, r.Register(stubAdapter{KindSpec{Name: "t", Class: AtMostOnce, VariantMode: TaggedShape, TagProperty: "type", Variants: []string{"x", "y"}}}))
	require.NoError(t, r.Register(stubAdapter{KindSpec{Name: "k", Class: AtMostOnce, VariantMode: KeySuffix, Variants: []string{"welcome"}}}))
	require.Equal(t, []string{"a", "k", "t"}, r.Kinds())
	_, ok := r.Decodes("a", "")
	require.True(t, ok)
	_, ok = r.Decodes("a", "v")
	require.False(t, ok)
	_, ok = r.Decodes("t", "y")
	require.True(t, ok)
	_, ok = r.Decodes("t", "z")
	require.False(t, ok)
	_, ok = r.Decodes("zz", "")
	require.False(t, ok)

	ts, _ := r.Lookup("t")
	v, err := variantOf(ts.Spec(), []byte(`{"type":"y"}`), "")
	require.NoError(t, err)
	require.Equal(t, "y", v)
	_, err = variantOf(ts.Spec(), []byte(`{"type":"q"}`), "")
	var pe *PayloadError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "type", pe.Field)
	_, err = variantOf(ts.Spec(), []byte(`[1]`), "")
	require.ErrorAs(t, err, &pe)
	ks, _ := r.Lookup("k")
	v, err = variantOf(ks.Spec(), nil, "user-9:welcome")
	require.NoError(t, err)
	require.Equal(t, "welcome", v)
	_, err = variantOf(ks.Spec(), nil, "user-9:other")
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "idempotency_key", ve.Field)
}

func TestSelectGroups(t *testing.T) {
	t.Parallel()
	c := func(seq, prev int64) candidate { return candidate{a: Action{Seq: seq, PrevSeq: prev}} }
	seqs := func(gs [][]candidate) [][]int64 {
		var out [][]int64
		for _, g := range gs {
			var s []int64
			for _, x := range g {
				s = append(s, x.a.Seq)
			}
			out = append(out, s)
		}
		return out
	}
	// Due order: 5 (lane head, prev 2 outside), 1 (keyless), 9 (after 5), 3 (after 9).
	cands := []candidate{c(5, 2), c(1, 0), c(9, 5), c(3, 9)}
	require.Equal(t, [][]int64{{5, 9, 3}, {1}}, seqs(selectGroups(cands, 10)))
	require.Equal(t, [][]int64{{5, 9}}, seqs(selectGroups(cands, 2)))
	// A successor due before its head: the group still starts at the head.
	cands = []candidate{c(9, 5), c(5, 0), c(7, 0)}
	require.Equal(t, [][]int64{{5, 9}, {7}}, seqs(selectGroups(cands, 10)))
	// The transaction holds at most 100 items: the fence check, the actions
	// and one predecessor check per group head with an outside predecessor.
	var many []candidate
	for i := int64(1); i <= 80; i++ {
		many = append(many, c(i*10, i*10-1))
	}
	total, items := 0, 1
	for _, g := range selectGroups(many, 99) {
		total += len(g)
		items += len(g) + 1
	}
	require.LessOrEqual(t, items, MaxTransactItems)
	require.Equal(t, 49, total)
}
