package outbox

import (
	"encoding/json"
	"time"
)

// State is where an action is in its lifecycle (design.md §3.1). The string
// values are part of the public contract.
type State string

// The states of an action.
const (
	StatePROPOSED  State = "PROPOSED"
	StateADMITTED  State = "ADMITTED"
	StateEXECUTING State = "EXECUTING"
	StateDONE      State = "DONE"
	StateUNCERTAIN State = "UNCERTAIN"
	StateFAILED    State = "FAILED"
	StateCANCELLED State = "CANCELLED"
)

// Ended reports whether s is a terminal state.
func (s State) Ended() bool {
	switch s {
	case StateDONE, StateUNCERTAIN, StateFAILED, StateCANCELLED:
		return true
	}
	return false
}

// Valid reports whether s is one of the seven states.
func (s State) Valid() bool {
	switch s {
	case StatePROPOSED, StateADMITTED, StateEXECUTING, StateDONE, StateUNCERTAIN, StateFAILED, StateCANCELLED:
		return true
	}
	return false
}

// StopReason says why an action ended. The string values are part of the
// public contract.
type StopReason string

// Stop reasons. Adapters may add their own (upper snake case).
const (
	StopDone                 StopReason = "DONE"
	StopFailed               StopReason = "FAILED"
	StopUncertain            StopReason = "UNCERTAIN"
	StopCancelled            StopReason = "CANCELLED"
	StopExpired              StopReason = "EXPIRED"
	StopAttemptsExhausted    StopReason = "ATTEMPTS_EXHAUSTED"
	StopLeaseLostAfterWrite  StopReason = "LEASE_LOST_AFTER_WRITE"
	StopAbsent               StopReason = "ABSENT"
	StopDestinationForbidden StopReason = "DESTINATION_FORBIDDEN"
	StopRejected             StopReason = "REJECTED"
	StopGone                 StopReason = "GONE"
	StopErased               StopReason = "ERASED" // a lane tombstone left by erasure
	// StopDeferralsExhausted: the provider deferred the action more times
	// in a row, or for longer, than Config.MaxDeferrals and
	// Config.MaxDeferTime allow (design.md §6).
	StopDeferralsExhausted StopReason = "DEFERRALS_EXHAUSTED"
)

// Action is one effect on the outside world: the unit of delivery.
type Action struct {
	ID             string          // "<partition>-<seq>" style id, unique in the table
	Kind           string          // selects the adapter
	Variant        string          // the payload variant the adapter decoded ("" for single-shape kinds)
	WorkspaceID    string          // tenant; empty only for instance-level kinds
	LaneKey        string          // actions of one lane run one at a time, in enqueue order
	IdempotencyKey string          // a second enqueue with the same (workspace, key) returns this action
	SubjectID      string          // whose data this is, for erasure
	State          State           //
	Attempt        int             // attempts started so far
	MaxAttempts    int             //
	Epoch          int64           // rises by one on every claim
	StopReason     StopReason      // set once ended
	ReadbackRef    string          // provider reference of the effect, once known
	Payload        json.RawMessage // absent once ended
	Partition      int             //
	Seq            int64           //
	PrevSeq        int64           // the lane predecessor's seq, 0 when none
	CreatedAt      time.Time       //
	NextAttemptAt  time.Time       // when it is next due (ADMITTED)
	LeaseExpiresAt time.Time       // end of the current claim (EXECUTING)
	WriteStartedAt time.Time       // the write fence; zero when not set
	ExpiresAt      time.Time       // zero when it never expires
	EndedAt        time.Time       // zero until ended
	Owner          string          // the drainer holding the current claim (EXECUTING)
	Deferrals      int             // deferrals in a row since the provider last answered otherwise
	DeferredSince  time.Time       // when the first of those deferrals was written; zero when none

	// claim is what the claim that took the action, and the drainer that
	// runs it, know beyond its row; zero outside a claim.
	claim claimMarks
}

// claimMarks are a claimed action's marks (design.md §5, §6): set by Claim
// and by the drainer, read by the attempt and the end.
type claimMarks struct {
	// fenced: the claim itself set the write fence (WriteStartedAt is the
	// claim's time): an idempotent-receiver action.
	fenced bool
	// head: for a claim-fenced member behind its group's head, the head's
	// seq, which the claim wrote as `wsh` (ADR 0015); 0 for a head.
	head int64
	// reclaimed: the claim took the action from EXECUTING (an earlier
	// claim's lease ran out), so an earlier attempt may have written.
	reclaimed bool
	// followed: a later member of the action's lane was claimed behind it
	// in the same group, so the action is not its lane's tail and its end
	// need not read the tail (design.md §7.1). Set by the drainer.
	followed bool
	// fenceUntil: when the claimer's lease on the partition's claim fence
	// ends (zero when unknown). Set by the drainer.
	fenceUntil time.Time
	// hold and deadline: the drainer's hold of the claim fence and its
	// deadline, with which a claim-fenced member's attempt takes the
	// fence's lease longer before its call (fenceCovers). Set by the
	// drainer; nil outside a drain.
	hold     *fenceHold
	deadline time.Time
}
