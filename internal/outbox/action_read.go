package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ActionGet reads one action with a consistent read. It returns ErrNotFound
// for an unknown or malformed id, an erased action, or one whose TTL passed.
func (e *Engine) ActionGet(ctx context.Context, id string) (*Action, error) {
	it, err := e.getActionItem(ctx, id)
	if err != nil {
		return nil, err
	}
	a, _ := decodeAction(it)
	return &a, nil
}

// getActionItem reads the row an id names (one consistent GetItem: the id
// holds the row's key, design.md §3.10). The row must hold that very id: an
// id made up from another's key (another time or table id) names nothing.
func (e *Engine) getActionItem(ctx context.Context, id string) (map[string]types.AttributeValue, error) {
	p, seq, err := ParseActionID(id)
	if err != nil || p >= MaxPartitions {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	it, err := e.getRow(ctx, p, seq)
	if err != nil {
		return nil, err
	}
	if getS(it, attrID) != id {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return it, nil
}

// getRow reads an action's row by its key with a consistent read. An
// erasure tombstone (no kind: it holds nothing of the action) and a row
// whose TTL passed are ErrNotFound.
func (e *Engine) getRow(ctx context.Context, p int, seq int64) (map[string]types.AttributeValue, error) {
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: e.table(), Key: actionKey(p, seq), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("error reading action %s: %w", keyLabel(p, seq), err)
	}
	if out.Item == nil || expiredByTTL(out.Item, e.clk.Now()) || !has(out.Item, attrKind) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, keyLabel(p, seq))
	}
	return out.Item, nil
}

// Admit moves a PROPOSED action to ADMITTED (due now). Any other state is
// refused by the write's condition with a *TransitionError.
func (e *Engine) Admit(ctx context.Context, id string) (*Action, error) {
	p, seq, err := ParseActionID(id)
	if err != nil || p >= MaxPartitions {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	now := e.clk.Now().UTC()
	out, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           e.table(),
		Key:                 actionKey(p, seq),
		UpdateExpression:    aws.String("SET #st = :adm, #nat = :now, #dpk = :dpk, #dsk = :dsk"),
		ConditionExpression: aws.String("#id = :id AND #st = :prop AND (attribute_not_exists(#ttl) OR #ttl >= :nows)"),
		ExpressionAttributeNames: map[string]string{
			"#st": attrState, "#nat": attrNext, "#dpk": attrDuePK, "#dsk": attrDueSK, "#ttl": attrTTL, "#id": attrID,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":id":  avS(id),
			":adm": avS(string(StateADMITTED)), ":prop": avS(string(StatePROPOSED)), ":now": avMs(now),
			":dpk": avS(duePK(p)), ":dsk": avS(timeSK(now, seq)), ":nows": avN(now.Unix()),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		return nil, e.transitionErr(id, StateADMITTED, err)
	}
	a, _ := decodeAction(out.Attributes)
	return &a, nil
}

// transitionErr turns a refused conditional write into ErrNotFound or a
// *TransitionError naming the state found.
func (e *Engine) transitionErr(id string, to State, err error) error {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if len(ccf.Item) == 0 || expiredByTTL(ccf.Item, e.clk.Now()) || getS(ccf.Item, attrID) != id {
			return fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		return &TransitionError{ID: id, From: State(getS(ccf.Item, attrState)), To: to}
	}
	return fmt.Errorf("error moving action %s to %s: %w", id, to, err)
}

// Cancel ends a PROPOSED or ADMITTED action as CANCELLED. An EXECUTING or
// ended action is refused with a *TransitionError.
func (e *Engine) Cancel(ctx context.Context, id string) (*Action, error) {
	for try := 0; try < 5; try++ {
		it, err := e.getActionItem(ctx, id)
		if err != nil {
			return nil, err
		}
		a, _ := decodeAction(it)
		if a.State != StatePROPOSED && a.State != StateADMITTED {
			return nil, &TransitionError{ID: id, From: a.State, To: StateCANCELLED}
		}
		// The condition names both cancellable states, so the write itself
		// refuses an action that started or ended meanwhile.
		ended, err := e.end(ctx, &a, endParams{To: StateCANCELLED, Reason: StopCancelled, Cond: condCancellable(a.Epoch),
			Result: Result{Outcome: OutcomeCancelled, StopReason: StopCancelled}})
		if err == nil {
			return ended, nil
		}
		if !isCondFailed(err) {
			return nil, err
		}
		// The action moved between the read and the write: look again.
	}
	return nil, fmt.Errorf("error cancelling action %s: it keeps changing", id)
}

// condCancellable guards a caller's cancel: PROPOSED or ADMITTED, at the
// epoch read, so the write itself refuses an action that started or ended.
func condCancellable(ep int64) cond {
	return cond{
		expr:  "#st IN (:cp, :ca) AND #ep = :cep",
		names: map[string]string{"#st": attrState, "#ep": attrEpoch},
		vals: map[string]types.AttributeValue{
			":cp": avS(string(StatePROPOSED)), ":ca": avS(string(StateADMITTED)), ":cep": avN(ep),
		},
	}
}
