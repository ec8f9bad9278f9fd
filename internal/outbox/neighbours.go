package outbox

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// neighbourRows bounds how many rows of its partition ActionNeighbours
// reads on each side of an action.
const neighbourRows = 200

// LaneNeighbours are the members of an action's lane just before and after
// it in enqueue order, as far as the table still holds them.
type LaneNeighbours struct {
	Prev, Next *Action // nil: none within the rows read
	// Examined counts the rows read to find them.
	Examined int
}

// ActionNeighbours finds the lane members next to a: the nearest rows of
// its lane before and after it in its partition, among the neighbourRows
// rows on each side (eventually consistent reads; ended and erased rows
// count, rows whose TTL passed do not). An action outside a lane has none.
func (e *Engine) ActionNeighbours(ctx context.Context, a *Action) (*LaneNeighbours, error) {
	out := &LaneNeighbours{}
	if a.LaneKey == "" {
		return out, nil
	}
	for _, forward := range []bool{false, true} {
		q, err := e.db.Query(ctx, &dynamodb.QueryInput{
			TableName: e.table(), KeyConditionExpression: aws.String("#pk = :pk AND begins_with(#sk, :a)"),
			FilterExpression:         aws.String("#lane = :lane AND #ws = :ws"),
			ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#sk": attrSK, "#lane": attrLane, "#ws": attrWorkspace},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": avS(partitionPK(a.Partition)), ":a": avS("A#"), ":lane": avS(a.LaneKey), ":ws": avS(a.WorkspaceID),
			},
			ExclusiveStartKey: actionKey(a.Partition, a.Seq), ScanIndexForward: aws.Bool(forward),
			Limit: aws.Int32(neighbourRows),
		})
		if err != nil {
			return nil, fmt.Errorf("error reading the lane of %s: %w", a.ID, err)
		}
		out.Examined += int(q.ScannedCount)
		now := e.clk.Now()
		for _, it := range q.Items {
			if n, ok := decodeAction(it); ok && !expiredByTTL(it, now) {
				n.Payload = nil
				if forward {
					out.Next = &n
				} else {
					out.Prev = &n
				}
				break
			}
		}
	}
	return out, nil
}
