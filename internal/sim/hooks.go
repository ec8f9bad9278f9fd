package sim

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

// The optional adapter interfaces (issue 27): the idempotent-receiver kind
// writes a row of the caller's table in the transaction that ends each of
// its actions (outbox.EndedHook), and the email-like kind checks its
// recipient before each attempt (outbox.Preparer). Checker `ended-hook`:
// an action of the hook kind is ended (by an attempt, a cancel or the
// reaper) exactly when its row of the caller's table says so.

// hookAdapter is the idempotent receiver with an EndedHook.
type hookAdapter struct{ adapter }

// Ended puts HOOK#<id> in the caller's table, naming the state.
func (a *hookAdapter) Ended(_ context.Context, ended outbox.EndedAction) ([]types.TransactWriteItem, error) {
	if ended.Action.ID == "" {
		return nil, errors.New("an ended action without its id")
	}
	return []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(appTable), Item: map[string]types.AttributeValue{
		"pk": avStr(hookKey(ended.Action.ID)), "st": avStr(string(ended.State)),
	}}}}, nil
}

func hookKey(id string) string { return "HOOK#" + id }

// prepAdapter is the at-most-once kind with a Preparer: now and then the
// recipient is gone (Cancelled), the check fails (an error: a Retry), the
// recipient's server asks to wait (Defer) or the check panics.
type prepAdapter struct{ adapter }

func (a *prepAdapter) Prepare(ctx context.Context, att *outbox.Attempt) outbox.Result {
	w := a.w
	if procOf(ctx) == nil || w.quiet {
		return outbox.Result{}
	}
	switch x := w.rng.IntN(50); {
	case x == 0:
		w.res.Faults["prepare.cancelled"]++
		return outbox.Cancelled("", errors.New("the recipient unsubscribed"))
	case x == 1:
		w.res.Faults["prepare.error"]++
		return outbox.Result{Err: errors.New("suppression list unavailable")}
	case x == 2:
		w.res.Faults["prepare.defer"]++
		// A deferral the provider's side answered (the deferral-bound
		// checker counts the holder's deferral writes).
		procOf(ctx).deferred[keyID(&att.Action)] = att.Action.Epoch
		return outbox.Defer(randDur(w.rng, 0, 10e9), errors.New("slow down"))
	case x == 3:
		w.res.Faults["prepare.panic"]++
		panic(fmt.Sprintf("prepare of %s", keyID(&att.Action)))
	}
	return outbox.Result{}
}

// checkEndedHook holds an end of the hook kind to its row of the caller's
// table: the end's transaction carried it.
func (w *world) checkEndedHook(p *proc, id string, nw ddblocal.Item) {
	if w.opt.Classic || str(nw, "kind") != kindIdem {
		return
	}
	out, err := w.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(appTable),
		Key: map[string]types.AttributeValue{"pk": avStr(hookKey(str(nw, "id")))}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		panic(fmt.Sprintf("sim: hook row: %v", err))
	}
	w.res.Ops["ended hook checked"]++
	if got := str(out.Item, "st"); got != string(state(nw)) {
		w.violate("ended-hook", []string{id}, "%s ended %s %s; its hook row says %q", p.name, id, state(nw), got)
	}
}
