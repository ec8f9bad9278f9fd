package ddbhttp_test

import (
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// TestAWSCLIRequestShapes sends bodies as the AWS CLI (botocore) writes them
// and checks what the backend receives. Unknown members are ignored, as
// DynamoDB ignores them, so newer clients keep working.
func TestAWSCLIRequestShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		op     string
		body   string
		wantIn any
	}{
		{
			"ScanSegmentSelectCapacity", "Scan",
			`{"TableName":"ferry","Select":"COUNT","Segment":1,"TotalSegments":4,"ReturnConsumedCapacity":"INDEXES","ConsistentRead":true,"Limit":25,"ExclusiveStartKey":{"pk":{"S":"P#1"},"sk":{"S":"A#1"}}}`,
			&dynamodb.ScanInput{
				TableName: aws.String("ferry"), Select: types.SelectCount, Segment: aws.Int32(1), TotalSegments: aws.Int32(4),
				ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes, ConsistentRead: aws.Bool(true), Limit: aws.Int32(25),
				ExclusiveStartKey: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "P#1"}, "sk": &types.AttributeValueMemberS{Value: "A#1"}},
			},
		},
		{
			"QueryIndexBackwards", "Query",
			`{"TableName":"ferry","IndexName":"gsi1","KeyConditionExpression":"#p = :p AND begins_with(#s, :s)","FilterExpression":"attribute_exists(lease)","ProjectionExpression":"pk, sk","ExpressionAttributeNames":{"#p":"gsi1pk","#s":"gsi1sk"},"ExpressionAttributeValues":{":p":{"S":"due"},":s":{"N":"17"}},"ScanIndexForward":false,"Limit":10,"ReturnConsumedCapacity":"TOTAL"}`,
			&dynamodb.QueryInput{
				TableName: aws.String("ferry"), IndexName: aws.String("gsi1"),
				KeyConditionExpression: aws.String("#p = :p AND begins_with(#s, :s)"), FilterExpression: aws.String("attribute_exists(lease)"),
				ProjectionExpression:     aws.String("pk, sk"),
				ExpressionAttributeNames: map[string]string{"#p": "gsi1pk", "#s": "gsi1sk"},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":p": &types.AttributeValueMemberS{Value: "due"}, ":s": &types.AttributeValueMemberN{Value: "17"},
				},
				ScanIndexForward: aws.Bool(false), Limit: aws.Int32(10), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
			},
		},
		{
			"CreateTablePayPerRequestWithIndexes", "CreateTable",
			`{"TableName":"ferry","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"S"},{"AttributeName":"due","AttributeType":"N"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}],"BillingMode":"PAY_PER_REQUEST","GlobalSecondaryIndexes":[{"IndexName":"due","KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"due","KeyType":"RANGE"}],"Projection":{"ProjectionType":"INCLUDE","NonKeyAttributes":["lane"]}}],"StreamSpecification":{"StreamEnabled":true,"StreamViewType":"NEW_AND_OLD_IMAGES"},"Tags":[{"Key":"app","Value":"ferry"}]}`,
			&dynamodb.CreateTableInput{
				TableName: aws.String("ferry"),
				AttributeDefinitions: []types.AttributeDefinition{
					{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
					{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
					{AttributeName: aws.String("due"), AttributeType: types.ScalarAttributeTypeN},
				},
				KeySchema: []types.KeySchemaElement{
					{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
					{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
				},
				BillingMode: types.BillingModePayPerRequest,
				GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
					IndexName: aws.String("due"),
					KeySchema: []types.KeySchemaElement{
						{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
						{AttributeName: aws.String("due"), KeyType: types.KeyTypeRange},
					},
					Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: []string{"lane"}},
				}},
				StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
				Tags:                []types.Tag{{Key: aws.String("app"), Value: aws.String("ferry")}},
			},
		},
		{
			"TransactWriteWithTokenAndUnknownMembers", "TransactWriteItems",
			`{"TransactItems":[{"Update":{"TableName":"ferry","Key":{"pk":{"S":"a"}},"UpdateExpression":"SET #v = #v + :one REMOVE lease","ConditionExpression":"attribute_exists(pk)","ExpressionAttributeNames":{"#v":"v"},"ExpressionAttributeValues":{":one":{"N":"1"}},"ReturnValuesOnConditionCheckFailure":"ALL_OLD","FutureMember":{"x":1}}},{"Delete":{"TableName":"ferry","Key":{"pk":{"B":"AAE="}}}}],"ClientRequestToken":"tok-1","ReturnConsumedCapacity":"TOTAL","ReturnItemCollectionMetrics":"SIZE","SomethingNew":[1,2]}`,
			&dynamodb.TransactWriteItemsInput{
				TransactItems: []types.TransactWriteItem{
					{Update: &types.Update{
						TableName: aws.String("ferry"), Key: key("a"),
						UpdateExpression: aws.String("SET #v = #v + :one REMOVE lease"), ConditionExpression: aws.String("attribute_exists(pk)"),
						ExpressionAttributeNames:            map[string]string{"#v": "v"},
						ExpressionAttributeValues:           map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
						ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
					}},
					{Delete: &types.Delete{TableName: aws.String("ferry"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberB{Value: []byte{0, 1}}}}},
				},
				ClientRequestToken: aws.String("tok-1"), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
				ReturnItemCollectionMetrics: types.ReturnItemCollectionMetricsSize,
			},
		},
		{
			"UpdateTimeToLive", "UpdateTimeToLive",
			`{"TableName":"ferry","TimeToLiveSpecification":{"Enabled":true,"AttributeName":"ttl"}}`,
			&dynamodb.UpdateTimeToLiveInput{TableName: aws.String("ferry"), TimeToLiveSpecification: &types.TimeToLiveSpecification{Enabled: aws.Bool(true), AttributeName: aws.String("ttl")}},
		},
		{
			"NullMembersAreAbsent", "GetItem",
			`{"TableName":"ferry","Key":{"pk":{"S":"a"}},"ProjectionExpression":null,"ConsistentRead":null}`,
			&dynamodb.GetItemInput{TableName: aws.String("ferry"), Key: key("a")},
		},
		{
			"EmptyBodyIsEmptyInput", "ListTables", ``, &dynamodb.ListTablesInput{},
		},
		{
			"BatchWrite", "BatchWriteItem",
			`{"RequestItems":{"ferry":[{"PutRequest":{"Item":{"pk":{"S":"a"},"n":{"NS":["1","2"]}}}},{"DeleteRequest":{"Key":{"pk":{"S":"b"}}}}]}}`,
			&dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"ferry": {
				{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}, "n": &types.AttributeValueMemberNS{Value: []string{"1", "2"}}}}},
				{DeleteRequest: &types.DeleteRequest{Key: key("b")}},
			}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, nil)
			r := post(t, tb.url, "DynamoDB_20120810."+tc.op, tc.body, nil)
			require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
			requireDynamoDBHeaders(t, r)
			calls := tb.backend.Calls()
			require.Len(t, calls, 1)
			require.Equal(t, tc.op, calls[0].op)
			require.Equal(t, tc.wantIn, calls[0].in)
		})
	}
}
