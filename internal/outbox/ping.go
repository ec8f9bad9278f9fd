package outbox

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// pingKey is a key no row of the table uses (design.md §3: every row's pk
// is P#… or K#…): reading it finds nothing.
var pingKey = key("PING", "PING")

// Ping tells whether the table can be read: one eventually consistent
// GetItem of a key no row has (half a read unit, the same action the
// functions already hold). A missing table answers DynamoDB's
// ResourceNotFoundException, wrapped.
func (e *Engine) Ping(ctx context.Context) error {
	_, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:            e.table(),
		Key:                  pingKey,
		ProjectionExpression: aws.String("pk"),
	})
	if err != nil {
		return fmt.Errorf("error reading table %s: %w", e.cfg.Table, err)
	}
	return nil
}
