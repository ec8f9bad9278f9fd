package expr_test

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/ddblocal/expr"
)

// An UpdateItem request: parse the condition and the update with one Usage,
// refuse unused names or values, check the condition against the stored
// item, then apply the update to get the new item.
func Example() {
	stored := map[string]types.AttributeValue{
		"pk":    &types.AttributeValueMemberS{Value: "action#1"},
		"state": &types.AttributeValueMemberS{Value: "ready"},
		"fence": &types.AttributeValueMemberN{Value: "41"},
	}
	u := expr.NewUsage(
		map[string]string{"#s": "state"},
		map[string]types.AttributeValue{
			":ready":   &types.AttributeValueMemberS{Value: "ready"},
			":claimed": &types.AttributeValueMemberS{Value: "claimed"},
			":one":     &types.AttributeValueMemberN{Value: "1"},
		},
	)
	cond, err := expr.ParseCondition("#s = :ready", u)
	if err != nil {
		panic(err)
	}
	upd, err := expr.ParseUpdate("SET #s = :claimed, fence = fence + :one", u)
	if err != nil {
		panic(err)
	}
	if err := u.CheckAllUsed(); err != nil {
		panic(err)
	}
	ok, _ := cond.Eval(stored)
	fmt.Println("condition holds:", ok)
	next, err := upd.Apply(stored)
	if err != nil {
		panic(err)
	}
	fmt.Println(next["state"].(*types.AttributeValueMemberS).Value, next["fence"].(*types.AttributeValueMemberN).Value)
	fmt.Println("stored item unchanged:", stored["fence"].(*types.AttributeValueMemberN).Value)
	// Output:
	// condition holds: true
	// claimed 42
	// stored item unchanged: 41
}

// Reserved words must go through ExpressionAttributeNames.
func ExampleParseCondition_reservedWord() {
	_, err := expr.ParseCondition("status = :v", expr.NewUsage(nil, map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: "x"}}))
	fmt.Println(err)
	// Output: Invalid ConditionExpression: Attribute name is a reserved keyword; reserved keyword: status
}
