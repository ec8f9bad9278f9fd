package outbox

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// rowsRead is a consistent read of some action rows of the table (design.md
// §3.1): lane predecessors, reclaim candidates, in-flight rows.
type rowsRead struct {
	keys []map[string]types.AttributeValue
	// projection and names, when set, read only those attributes (the
	// projection must include sk).
	projection string
	names      map[string]string
	// maxRounds bounds the BatchGetItem calls; 0 sends unprocessed keys
	// again until every key is read.
	maxRounds int
	// eventual reads eventually consistently (half a unit per row): for
	// readers that read an eventually consistent index first anyway.
	eventual bool
}

// readRows reads rr's rows with (unless eventual) consistent BatchGetItem calls of up to 100
// keys, sending unprocessed keys again, and hands each row found to fn with
// its seq. It returns the keys still unprocessed when maxRounds ran out.
func (e *Engine) readRows(ctx context.Context, rr rowsRead, fn func(seq int64, it map[string]types.AttributeValue)) ([]map[string]types.AttributeValue, error) {
	keys := rr.keys
	for round := 0; len(keys) > 0 && (rr.maxRounds == 0 || round < rr.maxRounds); round++ {
		n := min(len(keys), 100)
		ka := types.KeysAndAttributes{Keys: keys[:n], ConsistentRead: aws.Bool(!rr.eventual)}
		if rr.projection != "" {
			ka.ProjectionExpression, ka.ExpressionAttributeNames = aws.String(rr.projection), rr.names
		}
		out, err := e.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{e.cfg.Table: ka},
		})
		if err != nil {
			return keys, err
		}
		for _, it := range out.Responses[e.cfg.Table] {
			if seq, ok := seqFromActionSK(getS(it, attrSK)); ok {
				fn(seq, it)
			}
		}
		keys = keys[n:]
		if un, ok := out.UnprocessedKeys[e.cfg.Table]; ok && len(un.Keys) > 0 {
			keys = append(keys, un.Keys...)
		}
	}
	return keys, nil
}
