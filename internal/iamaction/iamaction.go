package iamaction

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

// Resource is what a permission applies to: a table, or one of its
// indexes or streams. Table is "*" for requests that name no table
// (ListTables).
type Resource struct {
	Table  string
	Index  string // set for a request that reads an index
	Stream string // set for a stream request: the stream label, or "*" when the request does not say which
}

// Key spells the resource relative to its table: "table",
// "index/<name>" or "stream/<label>".
func (r Resource) Key() string {
	switch {
	case r.Index != "":
		return "index/" + r.Index
	case r.Stream != "":
		return "stream/" + r.Stream
	}
	return "table"
}

// ARN returns the resource's ARN in the given partition, region and
// account ("arn:aws:dynamodb:eu-west-1:111122223333:table/ferry/index/due").
func (r Resource) ARN(partition, region, account string) string {
	if r.Table == "*" {
		return "*"
	}
	arn := fmt.Sprintf("arn:%s:dynamodb:%s:%s:table/%s", partition, region, account, r.Table)
	switch {
	case r.Index != "":
		arn += "/index/" + r.Index
	case r.Stream != "":
		arn += "/stream/" + r.Stream
	}
	return arn
}

// Permission is one IAM action on one resource.
type Permission struct {
	Action   string // "dynamodb:PutItem"
	Resource Resource
}

func (p Permission) String() string {
	return p.Action + " on " + p.Resource.Table + "/" + p.Resource.Key()
}

// ForInput returns the permissions a DynamoDB or DynamoDB Streams request
// needs, given its SDK input (*dynamodb.PutItemInput, …), without
// duplicates, in a stable order. A request type it does not know is an
// error, so a new call cannot go unaccounted.
func ForInput(in any) ([]Permission, error) {
	var out []Permission
	add := func(action, tableName string, index *string) {
		p := Permission{Action: "dynamodb:" + action, Resource: Resource{Table: tableOf(tableName), Index: aws.ToString(index)}}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	switch in := in.(type) {
	case *dynamodb.GetItemInput:
		add("GetItem", aws.ToString(in.TableName), nil)
	case *dynamodb.PutItemInput:
		add("PutItem", aws.ToString(in.TableName), nil)
	case *dynamodb.UpdateItemInput:
		add("UpdateItem", aws.ToString(in.TableName), nil)
	case *dynamodb.DeleteItemInput:
		add("DeleteItem", aws.ToString(in.TableName), nil)
	case *dynamodb.QueryInput:
		add("Query", aws.ToString(in.TableName), in.IndexName)
	case *dynamodb.ScanInput:
		add("Scan", aws.ToString(in.TableName), in.IndexName)
	case *dynamodb.BatchGetItemInput:
		for _, name := range sortedKeys(in.RequestItems) {
			add("BatchGetItem", name, nil)
		}
	case *dynamodb.BatchWriteItemInput:
		for _, name := range sortedKeys(in.RequestItems) {
			add("BatchWriteItem", name, nil)
		}
	case *dynamodb.TransactWriteItemsInput:
		for i, item := range in.TransactItems {
			action, table, err := transactWriteItem(item)
			if err != nil {
				return nil, fmt.Errorf("iamaction: TransactItems[%d]: %w", i, err)
			}
			add(action, table, nil)
		}
	case *dynamodb.TransactGetItemsInput:
		for i, item := range in.TransactItems {
			if item.Get == nil {
				return nil, fmt.Errorf("iamaction: TransactItems[%d]: no Get", i)
			}
			add("GetItem", aws.ToString(item.Get.TableName), nil)
		}
	case *dynamodb.CreateTableInput:
		add("CreateTable", aws.ToString(in.TableName), nil)
	case *dynamodb.DeleteTableInput:
		add("DeleteTable", aws.ToString(in.TableName), nil)
	case *dynamodb.DescribeTableInput:
		add("DescribeTable", aws.ToString(in.TableName), nil)
	case *dynamodb.UpdateTableInput:
		add("UpdateTable", aws.ToString(in.TableName), nil)
	case *dynamodb.UpdateTimeToLiveInput:
		add("UpdateTimeToLive", aws.ToString(in.TableName), nil)
	case *dynamodb.DescribeTimeToLiveInput:
		add("DescribeTimeToLive", aws.ToString(in.TableName), nil)
	case *dynamodb.ListTablesInput:
		add("ListTables", "*", nil)
	case *dynamodbstreams.DescribeStreamInput:
		out = append(out, streamPermission("DescribeStream", aws.ToString(in.StreamArn)))
	case *dynamodbstreams.GetShardIteratorInput:
		out = append(out, streamPermission("GetShardIterator", aws.ToString(in.StreamArn)))
	case *dynamodbstreams.GetRecordsInput:
		// The iterator names the stream only to the service: Table and
		// Stream are "*", and a caller that knows the iterator's stream
		// (a local event-source poller) puts it in.
		out = append(out, Permission{Action: "dynamodb:GetRecords", Resource: Resource{Table: "*", Stream: "*"}})
	case *dynamodbstreams.ListStreamsInput:
		table := "*"
		if in.TableName != nil {
			table = tableOf(*in.TableName)
		}
		out = append(out, Permission{Action: "dynamodb:ListStreams", Resource: Resource{Table: table, Stream: "*"}})
	default:
		return nil, fmt.Errorf("iamaction: no mapping for %T", in)
	}
	return out, nil
}

// transactWriteItem names the action and table of one transaction item.
func transactWriteItem(item types.TransactWriteItem) (string, string, error) {
	n := 0
	var action, table string
	if item.Put != nil {
		n, action, table = n+1, "PutItem", aws.ToString(item.Put.TableName)
	}
	if item.Update != nil {
		n, action, table = n+1, "UpdateItem", aws.ToString(item.Update.TableName)
	}
	if item.Delete != nil {
		n, action, table = n+1, "DeleteItem", aws.ToString(item.Delete.TableName)
	}
	if item.ConditionCheck != nil {
		n, action, table = n+1, "ConditionCheckItem", aws.ToString(item.ConditionCheck.TableName)
	}
	if n != 1 {
		return "", "", fmt.Errorf("an item must hold exactly one of Put, Update, Delete and ConditionCheck, holds %d", n)
	}
	return action, table, nil
}

// tableOf returns a table's name from its name or ARN.
func tableOf(nameOrARN string) string {
	if _, rest, ok := strings.Cut(nameOrARN, ":table/"); ok && strings.HasPrefix(nameOrARN, "arn:") {
		name, _, _ := strings.Cut(rest, "/")
		return name
	}
	return nameOrARN
}

// streamPermission is action on the stream an ARN names
// (arn:…:table/<table>/stream/<label>).
func streamPermission(action, arn string) Permission {
	r := Resource{Table: "*", Stream: "*"}
	if _, rest, ok := strings.Cut(arn, ":table/"); ok {
		if table, label, ok := strings.Cut(rest, "/stream/"); ok {
			r = Resource{Table: table, Stream: label}
		}
	}
	return Permission{Action: "dynamodb:" + action, Resource: r}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, tableOf(k))
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}
