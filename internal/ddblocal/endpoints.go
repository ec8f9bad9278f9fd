package ddblocal

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DescribeEndpoints answers DynamoDB's one regional endpoint, cached for a
// day as AWS answers (the HTTP face replaces the address with the one the
// client reached).
func (db *DB) DescribeEndpoints(ctx context.Context, _ *dynamodb.DescribeEndpointsInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeEndpointsOutput, error) {
	c, err := db.begin(ctx, "DescribeEndpoints", "")
	if err != nil {
		return nil, err
	}
	return finish(c, &dynamodb.DescribeEndpointsOutput{Endpoints: []types.Endpoint{{
		Address:              aws.String("dynamodb." + db.region + ".amazonaws.com"),
		CachePeriodInMinutes: 1440,
	}}}, nil)
}
