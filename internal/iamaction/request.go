package iamaction

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

// requestWire holds the members of a request body that decide its
// permissions (the wire names of the DynamoDB JSON protocol).
type requestWire struct {
	TableName     *string
	IndexName     *string
	StreamArn     *string
	RequestItems  map[string]json.RawMessage
	TransactItems []struct {
		Put, Update, Delete, ConditionCheck, Get *struct{ TableName *string }
	}
}

// ForRequest is ForInput for a request as it travels: its operation, as
// named by the X-Amz-Target header after the dot ("PutItem",
// "TransactWriteItems", "GetRecords"), and its JSON body.
func ForRequest(operation string, body []byte) ([]Permission, error) {
	var w requestWire
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &w); err != nil {
			return nil, fmt.Errorf("iamaction: %s: decoding the body: %w", operation, err)
		}
	}
	in, err := inputOf(operation, &w)
	if err != nil {
		return nil, err
	}
	return ForInput(in)
}

// inputOf builds the SDK input of operation from the decoded members.
func inputOf(operation string, w *requestWire) (any, error) {
	t := w.TableName
	switch operation {
	case "GetItem":
		return &dynamodb.GetItemInput{TableName: t}, nil
	case "PutItem":
		return &dynamodb.PutItemInput{TableName: t}, nil
	case "UpdateItem":
		return &dynamodb.UpdateItemInput{TableName: t}, nil
	case "DeleteItem":
		return &dynamodb.DeleteItemInput{TableName: t}, nil
	case "Query":
		return &dynamodb.QueryInput{TableName: t, IndexName: w.IndexName}, nil
	case "Scan":
		return &dynamodb.ScanInput{TableName: t, IndexName: w.IndexName}, nil
	case "BatchGetItem":
		in := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{}}
		for name := range w.RequestItems {
			in.RequestItems[name] = types.KeysAndAttributes{}
		}
		return in, nil
	case "BatchWriteItem":
		in := &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{}}
		for name := range w.RequestItems {
			in.RequestItems[name] = nil
		}
		return in, nil
	case "TransactWriteItems":
		in := &dynamodb.TransactWriteItemsInput{}
		for _, it := range w.TransactItems {
			var item types.TransactWriteItem
			if it.Put != nil {
				item.Put = &types.Put{TableName: it.Put.TableName}
			}
			if it.Update != nil {
				item.Update = &types.Update{TableName: it.Update.TableName}
			}
			if it.Delete != nil {
				item.Delete = &types.Delete{TableName: it.Delete.TableName}
			}
			if it.ConditionCheck != nil {
				item.ConditionCheck = &types.ConditionCheck{TableName: it.ConditionCheck.TableName}
			}
			in.TransactItems = append(in.TransactItems, item)
		}
		return in, nil
	case "TransactGetItems":
		in := &dynamodb.TransactGetItemsInput{}
		for _, it := range w.TransactItems {
			var item types.TransactGetItem
			if it.Get != nil {
				item.Get = &types.Get{TableName: it.Get.TableName}
			}
			in.TransactItems = append(in.TransactItems, item)
		}
		return in, nil
	case "CreateTable":
		return &dynamodb.CreateTableInput{TableName: t}, nil
	case "DeleteTable":
		return &dynamodb.DeleteTableInput{TableName: t}, nil
	case "DescribeTable":
		return &dynamodb.DescribeTableInput{TableName: t}, nil
	case "UpdateTable":
		return &dynamodb.UpdateTableInput{TableName: t}, nil
	case "UpdateTimeToLive":
		return &dynamodb.UpdateTimeToLiveInput{TableName: t}, nil
	case "DescribeTimeToLive":
		return &dynamodb.DescribeTimeToLiveInput{TableName: t}, nil
	case "ListTables":
		return &dynamodb.ListTablesInput{}, nil
	case "DescribeStream":
		return &dynamodbstreams.DescribeStreamInput{StreamArn: w.StreamArn}, nil
	case "GetShardIterator":
		return &dynamodbstreams.GetShardIteratorInput{StreamArn: w.StreamArn}, nil
	case "GetRecords":
		return &dynamodbstreams.GetRecordsInput{}, nil
	case "ListStreams":
		return &dynamodbstreams.ListStreamsInput{TableName: t}, nil
	}
	return nil, fmt.Errorf("iamaction: no mapping for operation %q", operation)
}
