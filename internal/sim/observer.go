package sim

import (
	"errors"
	"strings"

	"github.com/ferryhq/ferry/internal/outbox"
)

// observer hears each engine's events (outbox.WithObserver, and
// outbox.AttemptObserver as the functions' telemetry does): it counts
// them and holds each report to the state machine. An attempt's report
// comes after its write landed: the state it names is one an executing
// action may move to; an end names an ended outcome.
type observer struct{ w *world }

var _ outbox.AttemptObserver = observer{}

// AttemptStarted counts an attempt's start.
func (o observer) AttemptStarted(*outbox.Action) { o.w.res.Ops["observed attempt started"]++ }

// ActionEnded counts an end; an end must name an outcome.
func (o observer) ActionEnded(a *outbox.Action, out outbox.Outcome, _ outbox.StopReason) {
	o.w.res.Ops["observed action ended"]++
	if out == outbox.OutcomeNone {
		o.w.violate("state-machine", []string{keyID(a)}, "the engine reported %s ended with no outcome", keyID(a))
	}
}

// ClaimFinished counts a claim.
func (o observer) ClaimFinished(int, int, int, bool) { o.w.res.Ops["observed claim"]++ }

// FenceRefused counts a refused write fence.
func (o observer) FenceRefused(*outbox.Action) { o.w.res.Ops["observed fence refused"]++ }

// AttemptFinished holds an attempt's report to the state machine.
func (o observer) AttemptFinished(a *outbox.Action, res outbox.Result, to outbox.State) {
	o.w.res.Ops["observed attempt finished"]++
	var pe *outbox.PanicError
	if errors.As(res.Err, &pe) && !strings.Contains(pe.Error(), "panicked") {
		o.w.violate("state-machine", []string{keyID(a)}, "the engine reported the panic of %s's adapter as %q", keyID(a), pe.Error())
	}
	if !outbox.CanTransition(outbox.StateEXECUTING, to) {
		o.w.violate("state-machine", []string{keyID(a)}, "the engine reported an attempt of %s (%s) that left it %s", keyID(a), res.Outcome, to)
	}
}
