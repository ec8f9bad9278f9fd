package outbox

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// errNoVerdict is the cause recorded when an adapter returns no outcome from
// Execute: the engine treats it as an error.
var errNoVerdict = errors.New("adapter returned no outcome")

// PanicError is the cause recorded when an adapter panicked.
type PanicError struct {
	Value any
}

func (e *PanicError) Error() string { return fmt.Sprintf("adapter panicked: %v", e.Value) }

// errorResult maps an adapter error or panic to the outcome design.md §6
// prescribes: Retry before the write fence; after it, Reread for a kind that
// reads back, Uncertain for an at-most-once kind, Retry for an idempotent
// receiver.
func errorResult(class DeliveryClass, fenced bool, err error) Result {
	if !fenced {
		return Result{Outcome: OutcomeRetry, Err: err}
	}
	switch class {
	case ReadBack:
		return Result{Outcome: OutcomeReread, Err: err}
	case AtMostOnce:
		return Result{Outcome: OutcomeUncertain, Err: err}
	}
	return Result{Outcome: OutcomeRetry, Err: err}
}

// normalizeResult turns what an adapter returned into an outcome this
// kind's class allows. fenced says whether the write fence had passed.
func normalizeResult(class DeliveryClass, fenced bool, r Result) Result {
	if r.Outcome == OutcomeNone || r.Outcome > OutcomeAbandoned || r.Outcome < OutcomeNone {
		err := r.Err
		if err == nil {
			err = errNoVerdict
		}
		return errorResult(class, fenced, err)
	}
	switch r.Outcome {
	case OutcomeReread:
		switch class {
		case AtMostOnce:
			// Nothing can read it back: the effect may exist, so it ends.
			r.Outcome = OutcomeUncertain
		case IdempotentReceiver:
			// The receiver deduplicates: sending again is the read-back.
			r.Outcome = OutcomeRetry
		}
	}
	return r
}

// decision is what the engine writes after an attempt.
type decision struct {
	To        State
	Reason    StopReason    // when To is terminal
	Wait      time.Duration // ADMITTED: until next attempt; EXECUTING (Reread): until the lease ends
	Uncount   bool          // the attempt does not count (Defer)
	KeepFence bool          // EXECUTING after Reread: the fence stays so the next attempt reads back
	Write     bool          // false for Abandoned: nothing is written
	// Deferral, for a Defer outcome: the bounds the write's condition
	// holds the row to (see decideDeferral).
	Deferral *deferralWrite
}

// deferralWrite is what a Defer outcome's write checks on the row itself:
// the streak is below its bounds (ADMITTED), or has reached one of them
// (FAILED with DEFERRALS_EXHAUSTED). The row, not Go code, decides.
type deferralWrite struct {
	Exhausted bool
	Max       int       // Config.MaxDeferrals
	Cutoff    time.Time // the decision's time less Config.MaxDeferTime: a streak begun at or before it is over
	Since     time.Time // ADMITTED: the streak's first deferral (the decision's time when it starts one)
}

// decide maps a normalized result to the write that follows, given the
// attempt number (1-based) and the action's maximum. backoff is the retry
// backoff for this attempt.
func decide(r Result, attempt, maxAttempts int, backoff time.Duration) decision {
	last := attempt >= maxAttempts
	reason := func(def StopReason) StopReason {
		if r.StopReason != "" {
			return r.StopReason
		}
		return def
	}
	switch r.Outcome {
	case OutcomeDone:
		return decision{To: StateDONE, Reason: reason(StopDone), Write: true}
	case OutcomeRetry:
		if last {
			return decision{To: StateFAILED, Reason: StopAttemptsExhausted, Write: true}
		}
		return decision{To: StateADMITTED, Wait: max(backoff, r.Wait), Write: true}
	case OutcomeDefer:
		w := r.Wait
		if w <= 0 {
			w = backoff
		}
		return decision{To: StateADMITTED, Wait: w, Uncount: true, Write: true}
	case OutcomeReread:
		if last {
			return decision{To: StateUNCERTAIN, Reason: StopAttemptsExhausted, Write: true}
		}
		w := r.Wait
		if w <= 0 {
			w = backoff
		}
		return decision{To: StateEXECUTING, Wait: w, KeepFence: true, Write: true}
	case OutcomeUncertain:
		return decision{To: StateUNCERTAIN, Reason: reason(StopUncertain), Write: true}
	case OutcomeFailed:
		return decision{To: StateFAILED, Reason: reason(StopFailed), Write: true}
	case OutcomeCancelled:
		return decision{To: StateCANCELLED, Reason: reason(StopCancelled), Write: true}
	}
	return decision{Write: false}
}

// deferStreak is an action's run of deferrals in a row: how many were
// written, and when the first of them was.
type deferStreak struct {
	Count int
	Since time.Time
}

// deferBounds are Config.MaxDeferrals and Config.MaxDeferTime.
type deferBounds struct {
	Max int
	For time.Duration
}

// decideDeferral maps a Defer outcome to its write (design.md §6): the
// action goes back to ADMITTED, uncounted, after the provider's wait, or
// after backoff when the provider gave none (a Retry-After of 0 or none at
// all: backoff is the retry backoff for the deferral's number in the
// streak, so waits grow as a retry's do). No wait reaches past the
// streak's time bound. A streak that already holds Max deferrals, or began
// For ago or earlier, ends instead: FAILED, DEFERRALS_EXHAUSTED, so the
// lane behind it moves on.
func decideDeferral(r Result, s deferStreak, b deferBounds, now time.Time, backoff time.Duration) decision {
	cutoff := now.Add(-b.For)
	if s.Count >= b.Max || (s.Count > 0 && !s.Since.After(cutoff)) {
		return decision{To: StateFAILED, Reason: StopDeferralsExhausted, Write: true,
			Deferral: &deferralWrite{Exhausted: true, Max: b.Max, Cutoff: cutoff}}
	}
	since := s.Since
	if s.Count == 0 {
		since = now
	}
	w := r.Wait
	if w <= 0 {
		w = backoff
	}
	w = max(min(w, since.Add(b.For).Sub(now)), 0)
	return decision{To: StateADMITTED, Wait: w, Uncount: true, Write: true,
		Deferral: &deferralWrite{Max: b.Max, Cutoff: cutoff, Since: since}}
}

// Backoff is the retry policy: exponential from Base, capped at Cap, with
// "equal jitter" (half fixed, half drawn) from an injected source so the
// simulator can replay it.
type Backoff struct {
	Base, Cap time.Duration
}

// Delay returns the wait before attempt+1 after attempt (1-based) failed.
// rnd may be nil for the deterministic upper bound.
func (b Backoff) Delay(attempt int, rnd *rand.Rand) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := b.Base
	for i := 1; i < attempt && d < b.Cap; i++ {
		d *= 2
	}
	d = min(d, b.Cap)
	if rnd == nil || d < 2 {
		return d
	}
	half := d / 2
	return half + time.Duration(rnd.Int64N(int64(d-half)+1))
}
