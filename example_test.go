package ferry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry"
	"github.com/ferryhq/ferry/ferrytest"
)

// shipped is a custom kind: it tells a (pretend) warehouse that an order
// shipped. The warehouse deduplicates by the action id.
type shipped struct{}

func (shipped) Spec() ferry.KindSpec {
	return ferry.KindSpec{Name: "order-shipped", Class: ferry.IdempotentReceiver}
}

func (shipped) Validate(_ string, payload json.RawMessage) error {
	var p struct {
		Order string `json:"order"`
	}
	if err := json.Unmarshal(payload, &p); err != nil || p.Order == "" {
		return &ferry.PayloadError{Field: "order", Message: "required"}
	}
	return nil
}

func (shipped) Execute(_ context.Context, att *ferry.Attempt) ferry.Result {
	fmt.Printf("warehouse told: %s\n", att.Action.Payload)
	return ferry.Done("wh-1")
}

// Example enqueues an action in the same DynamoDB transaction as the
// service's own change, then drains it.
func Example() {
	ctx := context.Background()
	clk := ferrytest.NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	db := ferrytest.NewDynamoDB(clk) // in production: a *dynamodb.Client

	reg := ferry.NewRegistry()
	if err := reg.Register(shipped{}); err != nil {
		panic(err)
	}
	outbox, err := ferry.New(db, reg, ferry.Config{Table: "ferry", Partitions: 4}, ferry.WithClock(clk))
	if err != nil {
		panic(err)
	}
	if err := outbox.EnsureTable(ctx); err != nil {
		panic(err)
	}
	_, _ = db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String("orders"),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})

	// The service's change and the outbox's items commit together.
	prepared, err := outbox.EnqueueItems(ctx, ferry.EnqueueParams{
		Kind: "order-shipped", WorkspaceID: "shop", LaneKey: "order-42",
		IdempotencyKey: "order-42-shipped", Payload: json.RawMessage(`{"order":"42"}`),
	})
	if err != nil {
		panic(err)
	}
	items := append([]types.TransactWriteItem{{Put: &types.Put{
		TableName: aws.String("orders"),
		Item: map[string]types.AttributeValue{
			"id":     &types.AttributeValueMemberS{Value: "42"},
			"status": &types.AttributeValueMemberS{Value: "shipped"},
		},
	}}}, prepared.Items...)
	if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items}); err != nil {
		panic(err)
	}

	a, _ := outbox.ActionGet(ctx, prepared.Action.ID)
	fmt.Println("after commit:", a.State)

	// The drainer (a Lambda function in production, or the service's own
	// loop calling outbox.Sweep) carries it out.
	if err := ferrytest.DrainUntilIdle(ctx, outbox); err != nil {
		panic(err)
	}
	a, _ = outbox.ActionGet(ctx, prepared.Action.ID)
	fmt.Println("after drain:", a.State, a.ReadbackRef)
	// Output:
	// after commit: ADMITTED
	// warehouse told: {"order":"42"}
	// after drain: DONE wh-1
}
