package outbox

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Writes to action rows (design.md §3.1): the conditions every transition
// composes, settled updates and transactions.

// updateSettled sends a conditional UpdateItem of one action. Throttles and
// ambiguous failures (the write may have landed, its answer was lost) are
// retried; when a retry's condition fails after an ambiguous try, the row is
// read back and settled decides whether the earlier try landed, which then
// counts as success.
func (e *Engine) updateSettled(ctx context.Context, in *dynamodb.UpdateItemInput, settled func(map[string]types.AttributeValue) bool) error {
	ambiguous := false
	for try := 0; ; try++ {
		_, err := e.db.UpdateItem(ctx, in)
		if err == nil {
			return nil
		}
		if isCondFailed(err) {
			if ambiguous && settled != nil {
				out, gerr := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: in.TableName, Key: in.Key, ConsistentRead: aws.Bool(true)})
				if gerr == nil && out.Item != nil && settled(out.Item) {
					return nil
				}
			}
			return err
		}
		if try >= 3 || ctx.Err() != nil || !(isAmbiguous(err) || isRetryable(err)) {
			return err
		}
		ambiguous = ambiguous || isAmbiguous(err)
	}
}

// rowIs builds a settled check: the row's state and epoch, and a time
// attribute equal to the one the write set.
func rowIs(st State, ep int64, attr string, t time.Time) func(map[string]types.AttributeValue) bool {
	return func(it map[string]types.AttributeValue) bool {
		return State(getS(it, attrState)) == st && getN(it, attrEpoch) == ep && has(it, attr) && getN(it, attr) == t.UnixMilli()
	}
}

// cond is a condition expression with its names and values, so that the
// write protocols can compose the guard every transition needs.
type cond struct {
	expr  string
	names map[string]string
	vals  map[string]types.AttributeValue
}

func (c cond) and(o cond) cond {
	out := cond{names: map[string]string{}, vals: map[string]types.AttributeValue{}}
	switch {
	case c.expr == "":
		out.expr = o.expr
	case o.expr == "":
		out.expr = c.expr
	default:
		out.expr = "(" + c.expr + ") AND (" + o.expr + ")"
	}
	maps.Copy(out.names, c.names)
	maps.Copy(out.names, o.names)
	maps.Copy(out.vals, c.vals)
	maps.Copy(out.vals, o.vals)
	return out
}

// condState guards a write on the state and epoch it was decided on.
func condState(st State, ep int64) cond {
	return cond{
		expr:  "#st = :cst AND #ep = :cep",
		names: map[string]string{"#st": attrState, "#ep": attrEpoch},
		vals:  map[string]types.AttributeValue{":cst": avS(string(st)), ":cep": avN(ep)},
	}
}

// condHeld guards a write of the holder of a claim: EXECUTING, this epoch,
// this owner. A holder with the right epoch but another owner is refused.
func condHeld(ep int64, owner string) cond {
	return cond{
		expr:  "#st = :cst AND #ep = :cep AND #own = :cown",
		names: map[string]string{"#st": attrState, "#ep": attrEpoch, "#own": attrOwner},
		vals: map[string]types.AttributeValue{
			":cst": avS(string(StateEXECUTING)), ":cep": avN(ep), ":cown": avS(owner),
		},
	}
}

// transact sends a TransactWriteItems, retrying throttles and conflicts,
// and retrying ambiguous failures with the same token (DynamoDB answers a
// repeat of a committed request with success for 10 minutes).
//
// A refusal that follows an ambiguous try does not say the transaction did
// not land: once the token's 10 minutes are over, a repeat of a committed
// transaction is a new one, refused by the conditions the first one
// changed. Such a refusal is reported as an unknown outcome
// (a transactUnknownError, which isAmbiguous reports), so that the caller reads
// back instead of taking the transaction for refused (design.md §5 step 6).
func (e *Engine) transact(ctx context.Context, items []types.TransactWriteItem, tok string) error {
	var err error
	unsure := false // an earlier try may have landed
	for try := 0; try < 5; try++ {
		_, err = e.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems: items, ClientRequestToken: aws.String(tok),
		})
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		if _, refused := cancelReasons(err); unsure && (refused || isCondFailed(err)) {
			return &transactUnknownError{refusal: err}
		}
		if isCondFailed(err) {
			return err
		}
		if !isRetryable(err) && !isAmbiguous(err) {
			return err
		}
		unsure = unsure || isAmbiguous(err)
	}
	return err
}

// transactUnknownError is a transaction refused after an earlier try of it
// had no answer: it may have landed (see transact). It does not wrap the
// refusal, so that neither cancelReasons nor isCondFailed takes it for one.
type transactUnknownError struct{ refusal error }

func (e *transactUnknownError) Error() string {
	return fmt.Sprintf("transaction outcome unknown: an earlier try had no answer, a later one was refused (%v)", e.refusal)
}
