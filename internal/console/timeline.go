package console

import (
	"fmt"
	"slices"
	"time"

	"github.com/ferryhq/ferry/internal/outbox"
)

// event is one line of an action's timeline, from what its row and its
// delivery evidence record.
type event struct {
	At   time.Time
	What string
}

// timeline is what the table records of an action's life, in time order:
// the table keeps the latest attempt only (its count, epoch, claim lease,
// write fence and the current run of deferrals), so earlier attempts are
// not in it (AttemptEvent has what this process saw).
func timeline(a *outbox.Action, d *outbox.Delivery, lease time.Duration) []event {
	ev := []event{{a.CreatedAt, createdWhat(a)}}
	if !a.DeferredSince.IsZero() {
		ev = append(ev, event{a.DeferredSince, fmt.Sprintf("first of %d deferrals in a row (the provider's \"not now\": the attempts were given back)", a.Deferrals)})
	}
	if !a.LeaseExpiresAt.IsZero() && a.State == outbox.StateEXECUTING {
		ev = append(ev, event{a.LeaseExpiresAt.Add(-lease), fmt.Sprintf("attempt %d of %d claimed (epoch %d) by %s, about then (its lease runs %s from the claim or its last renewal)",
			a.Attempt, a.MaxAttempts, a.Epoch, dash(a.Owner), lease)})
	}
	if !a.WriteStartedAt.IsZero() {
		ev = append(ev, event{a.WriteStartedAt, "write fence set: the provider may be called from now on"})
	}
	if !a.State.Ended() && !a.NextAttemptAt.IsZero() && a.State == outbox.StateADMITTED {
		ev = append(ev, event{a.NextAttemptAt, fmt.Sprintf("next attempt due (attempt %d of %d)", a.Attempt+1, a.MaxAttempts)})
	}
	if a.State == outbox.StateEXECUTING && !a.LeaseExpiresAt.IsZero() {
		ev = append(ev, event{a.LeaseExpiresAt, "lease ends: a reclaim or the reaper takes it from then on"})
	}
	if d != nil {
		for _, e := range d.Events {
			ev = append(ev, event{e.At, fmt.Sprintf("delivery evidence: %s (%s)", e.Status, dash(e.Detail))})
		}
	}
	if a.State.Ended() {
		ev = append(ev, event{a.EndedAt, fmt.Sprintf("ended %s, stop reason %s, after %d of %d attempts (epoch %d)", a.State, a.StopReason, a.Attempt, a.MaxAttempts, a.Epoch)})
	}
	if !a.ExpiresAt.IsZero() && !a.State.Ended() {
		ev = append(ev, event{a.ExpiresAt, "expires: cancelled EXPIRED if it has not started by then"})
	}
	slices.SortStableFunc(ev, func(x, y event) int { return x.At.Compare(y.At) })
	return ev
}

func createdWhat(a *outbox.Action) string {
	s := "enqueued"
	if a.State == outbox.StatePROPOSED {
		s = "proposed: waits for an approver"
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// waitReason says in words why the action is where it is and what comes
// next; prev is its lane predecessor as found (nil: none).
func waitReason(a *outbox.Action, prev *outbox.Action, now time.Time) string {
	switch a.State {
	case outbox.StatePROPOSED:
		if a.ExpiresAt.IsZero() {
			return "A proposal: it waits for an approver to admit or cancel it."
		}
		return "A proposal: it waits for an approver to admit or cancel it before " + a.ExpiresAt.UTC().Format(time.RFC3339) + ", when it expires."
	case outbox.StateADMITTED:
		return admittedReason(a, prev, now)
	case outbox.StateEXECUTING:
		if a.LeaseExpiresAt.After(now) {
			return fmt.Sprintf("In flight: attempt %d, claimed by %s until %s.", a.Attempt, dash(a.Owner), a.LeaseExpiresAt.UTC().Format(time.RFC3339))
		}
		return "Its claim's lease ran out at " + a.LeaseExpiresAt.UTC().Format(time.RFC3339) + ": the next claim takes it again (reading back first when it may have been sent), or the reaper ends it."
	}
	return fmt.Sprintf("Ended %s (%s): an ended action never changes.", a.State, a.StopReason)
}

func admittedReason(a *outbox.Action, prev *outbox.Action, now time.Time) string {
	if prev != nil && !prev.State.Ended() {
		return fmt.Sprintf("Waits behind %s (%s), the member before it in lane %s: a lane runs one action at a time, in enqueue order.", prev.ID, prev.State, a.LaneKey)
	}
	if a.NextAttemptAt.After(now) {
		why := "its next attempt time"
		switch {
		case a.Deferrals > 0:
			why = fmt.Sprintf("a deferral (%d in a row): the provider asked it to wait", a.Deferrals)
		case a.Attempt > 0:
			why = "the retry backoff after attempt " + fmt.Sprint(a.Attempt)
		}
		return "Waits until " + a.NextAttemptAt.UTC().Format(time.RFC3339) + ": " + why + "."
	}
	if a.LaneKey != "" {
		return "Due now, at the head of lane " + a.LaneKey + ": the next claim of its partition takes it."
	}
	return "Due now: the next claim of its partition takes it."
}
