package ddbhttp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
)

// An unmodified SDK client talks to the embedded DynamoDB through the
// handler exactly as it talks to AWS.
func ExampleNewHandler() {
	srv := httptest.NewServer(ddbhttp.NewHandler(ddblocal.New()))
	defer srv.Close()

	client := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "any", SecretAccessKey: "any"}, nil
		}),
	})
	ctx := context.Background()
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("orders"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	item := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "order-42"}}
	_, err = client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String("orders"), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	fmt.Println("first put:", err == nil)

	_, err = client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String("orders"), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	var ccf *types.ConditionalCheckFailedException
	fmt.Println("second put:", errors.As(err, &ccf))
	// Output:
	// first put: true
	// second put: true
}
