package outbox

import (
	"context"
	"encoding/base64"
	"encoding/json"
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
	if err != nil || p >= e.cfg.Partitions {
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
		return nil, fmt.Errorf("error reading action %s: %w", LegacyActionID(p, seq), err)
	}
	if out.Item == nil || expiredByTTL(out.Item, e.clk.Now()) || !has(out.Item, attrKind) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, LegacyActionID(p, seq))
	}
	return out.Item, nil
}

// ActionListParams filters a listing. WorkspaceID is required unless the
// caller lists instance-level actions (then it is empty on purpose).
type ActionListParams struct {
	WorkspaceID string
	State       State  // optional
	LaneKey     string // optional
	Limit       int    // default 50, max 500
	Cursor      string // from a previous result
}

// ActionListResult is one page of a listing.
type ActionListResult struct {
	Actions    []Action
	NextCursor string // empty on the last page
}

// ActionList lists a workspace's actions. With a lane key it reads only that
// lane's partition; without one it scans the table (an operator listing:
// there is no workspace index, which would cost every action an index
// write).
func (e *Engine) ActionList(ctx context.Context, p ActionListParams) (*ActionListResult, error) {
	if p.Limit == 0 {
		p.Limit = 50
	}
	if p.Limit < 0 || p.Limit > 500 {
		return nil, &ValidationError{Field: "limit", Message: "must be between 1 and 500"}
	}
	if p.State != "" && !p.State.Valid() {
		return nil, &ValidationError{Field: "state", Message: fmt.Sprintf("unknown state %q", p.State)}
	}
	var start map[string]types.AttributeValue
	if p.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(p.Cursor)
		var keys map[string]string
		if err == nil {
			err = json.Unmarshal(raw, &keys)
		}
		if err != nil || keys[attrPK] == "" {
			return nil, &ValidationError{Field: "cursor", Message: "malformed cursor"}
		}
		start = key(keys[attrPK], keys[attrSK])
	}
	// The sort key condition goes in the key condition of a Query (a filter
	// may not name key attributes) and in the filter of a Scan.
	filter := "#ws = :ws"
	names := map[string]string{"#ws": attrWorkspace}
	vals := map[string]types.AttributeValue{":a": avS("A#"), ":ws": avS(p.WorkspaceID)}
	if p.WorkspaceID == "" {
		filter = "attribute_not_exists(#ws) AND attribute_exists(#kind)"
		names["#kind"] = attrKind
		delete(vals, ":ws")
	}
	if p.State != "" {
		filter += " AND #st = :st"
		names["#st"] = attrState
		vals[":st"] = avS(string(p.State))
	}
	if p.LaneKey != "" {
		filter += " AND #lane = :lane"
		names["#lane"] = attrLane
		vals[":lane"] = avS(p.LaneKey)
	}
	now := e.clk.Now()
	res := &ActionListResult{}
	for len(res.Actions) < p.Limit {
		var items []map[string]types.AttributeValue
		var last map[string]types.AttributeValue
		lim := aws.Int32(int32(min(4*p.Limit, 1000)))
		if p.LaneKey != "" {
			part := LanePartition(p.WorkspaceID, p.LaneKey, e.cfg.Partitions)
			vals[":pk"] = avS(partitionPK(part))
			out, err := e.db.Query(ctx, &dynamodb.QueryInput{
				TableName: e.table(), KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :a)"),
				FilterExpression: aws.String(filter), ExpressionAttributeNames: names,
				ExpressionAttributeValues: vals, ExclusiveStartKey: start, Limit: lim, ConsistentRead: aws.Bool(true),
			})
			if err != nil {
				return nil, fmt.Errorf("error listing actions: %w", err)
			}
			items, last = out.Items, out.LastEvaluatedKey
		} else {
			out, err := e.db.Scan(ctx, &dynamodb.ScanInput{
				TableName: e.table(), FilterExpression: aws.String("begins_with(sk, :a) AND " + filter), ExpressionAttributeNames: names,
				ExpressionAttributeValues: vals, ExclusiveStartKey: start, Limit: lim,
			})
			if err != nil {
				return nil, fmt.Errorf("error listing actions: %w", err)
			}
			items, last = out.Items, out.LastEvaluatedKey
		}
		for i, it := range items {
			if expiredByTTL(it, now) {
				continue
			}
			a, ok := decodeAction(it)
			if !ok {
				continue
			}
			res.Actions = append(res.Actions, a)
			if len(res.Actions) == p.Limit {
				if i < len(items)-1 || last != nil {
					last = key(getS(it, attrPK), getS(it, attrSK))
				}
				break
			}
		}
		if last == nil {
			return res, nil
		}
		start = last
		if len(res.Actions) == p.Limit {
			b, _ := json.Marshal(map[string]string{attrPK: getS(last, attrPK), attrSK: getS(last, attrSK)})
			res.NextCursor = base64.RawURLEncoding.EncodeToString(b)
		}
	}
	return res, nil
}

// Admit moves a PROPOSED action to ADMITTED (due now). Any other state is
// refused by the write's condition with a *TransitionError.
func (e *Engine) Admit(ctx context.Context, id string) (*Action, error) {
	p, seq, err := ParseActionID(id)
	if err != nil || p >= e.cfg.Partitions {
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
