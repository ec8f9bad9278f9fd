package outbox

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

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
