package ddblocal_test

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// The engine is used exactly like *dynamodb.Client; the Go API adds the
// change feed, capacity counters and the clock-driven TTL sweep.
func Example() {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	_, _ = db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("ferry"),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	})
	_, _ = db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("ferry"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)}})

	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String("ferry"),
		Item:                map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}, "ttl": &types.AttributeValueMemberN{Value: fmt.Sprint(clk.Now().Unix() + 60)}},
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	fmt.Println("put:", err)

	clk.Advance(2 * time.Minute)
	fmt.Println("expired:", db.SweepTTL())
	for _, c := range db.Changes("ferry", 0) {
		fmt.Println(c.EventName, c.Keys["pk"].(*types.AttributeValueMemberS).Value, "by TTL:", c.ByTTL)
	}
	fmt.Println("write units:", db.Capacity("ferry").WriteUnits)
	// Output:
	// put: <nil>
	// expired: 1
	// INSERT a by TTL: false
	// REMOVE a by TTL: true
	// write units: 1
}
