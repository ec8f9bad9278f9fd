package ddbhttp

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// targetPrefix is the service part of X-Amz-Target for DynamoDB's current
// API version.
const targetPrefix = "DynamoDB_20120810."

// operation decodes one request body, calls the backend and encodes the
// output. A decode error is returned before the backend is called.
type operation struct {
	newInput func() any
	call     func(ctx context.Context, in any) (any, error)
}

// sdkMethod is the shape of every *dynamodb.Client operation method.
type sdkMethod[In, Out any] func(context.Context, *In, ...func(*dynamodb.Options)) (*Out, error)

func bind[In, Out any](m sdkMethod[In, Out]) operation {
	return operation{
		newInput: func() any { return new(In) },
		call: func(ctx context.Context, in any) (any, error) {
			out, err := m(ctx, in.(*In))
			if err != nil {
				return nil, err
			}
			return out, nil
		},
	}
}

// operations maps each X-Amz-Target operation name to the backend method
// serving it. Operations the backend does not have answer
// UnknownOperationException, as DynamoDB answers an operation it does not
// know.
func operations(b Backend) map[string]operation {
	ops := map[string]operation{
		"CreateTable":        bind(b.CreateTable),
		"DescribeTable":      bind(b.DescribeTable),
		"DeleteTable":        bind(b.DeleteTable),
		"ListTables":         bind(b.ListTables),
		"UpdateTimeToLive":   bind(b.UpdateTimeToLive),
		"DescribeTimeToLive": bind(b.DescribeTimeToLive),
		"PutItem":            bind(b.PutItem),
		"GetItem":            bind(b.GetItem),
		"UpdateItem":         bind(b.UpdateItem),
		"DeleteItem":         bind(b.DeleteItem),
		"Query":              bind(b.Query),
		"Scan":               bind(b.Scan),
		"BatchGetItem":       bind(b.BatchGetItem),
		"BatchWriteItem":     bind(b.BatchWriteItem),
		"TransactWriteItems": bind(b.TransactWriteItems),
		"TransactGetItems":   bind(b.TransactGetItems),
	}
	// Optional operations: served when the backend has them, so an engine
	// can grow (UpdateTable for SAM, tags for the CDK) without a change here.
	if x, ok := b.(interface {
		UpdateTable(context.Context, *dynamodb.UpdateTableInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
	}); ok {
		ops["UpdateTable"] = bind(x.UpdateTable)
	}
	if x, ok := b.(interface {
		DescribeLimits(context.Context, *dynamodb.DescribeLimitsInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeLimitsOutput, error)
	}); ok {
		ops["DescribeLimits"] = bind(x.DescribeLimits)
	}
	if x, ok := b.(interface {
		DescribeEndpoints(context.Context, *dynamodb.DescribeEndpointsInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeEndpointsOutput, error)
	}); ok {
		ops["DescribeEndpoints"] = bind(x.DescribeEndpoints)
	}
	if x, ok := b.(interface {
		TagResource(context.Context, *dynamodb.TagResourceInput, ...func(*dynamodb.Options)) (*dynamodb.TagResourceOutput, error)
	}); ok {
		ops["TagResource"] = bind(x.TagResource)
	}
	if x, ok := b.(interface {
		UntagResource(context.Context, *dynamodb.UntagResourceInput, ...func(*dynamodb.Options)) (*dynamodb.UntagResourceOutput, error)
	}); ok {
		ops["UntagResource"] = bind(x.UntagResource)
	}
	if x, ok := b.(interface {
		ListTagsOfResource(context.Context, *dynamodb.ListTagsOfResourceInput, ...func(*dynamodb.Options)) (*dynamodb.ListTagsOfResourceOutput, error)
	}); ok {
		ops["ListTagsOfResource"] = bind(x.ListTagsOfResource)
	}
	if x, ok := b.(interface {
		DescribeContinuousBackups(context.Context, *dynamodb.DescribeContinuousBackupsInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeContinuousBackupsOutput, error)
	}); ok {
		ops["DescribeContinuousBackups"] = bind(x.DescribeContinuousBackups)
	}
	return ops
}

// normalizeOutput returns out with the members DynamoDB always sends filled
// even when empty, so that tools reading the JSON (the AWS CLI, jq) see
// "Items": [] and "UnprocessedItems": {} rather than nothing. (A Query or
// Scan with Select COUNT has no Items at all.) It copies rather than changes
// the backend's struct, which the backend may share.
func normalizeOutput(in, out any) any {
	switch o := out.(type) {
	case *dynamodb.QueryOutput:
		if o != nil && o.Items == nil && in.(*dynamodb.QueryInput).Select != types.SelectCount {
			cp := *o
			cp.Items = []map[string]types.AttributeValue{}
			return &cp
		}
	case *dynamodb.ScanOutput:
		if o != nil && o.Items == nil && in.(*dynamodb.ScanInput).Select != types.SelectCount {
			cp := *o
			cp.Items = []map[string]types.AttributeValue{}
			return &cp
		}
	case *dynamodb.ListTablesOutput:
		if o != nil && o.TableNames == nil {
			cp := *o
			cp.TableNames = []string{}
			return &cp
		}
	case *dynamodb.BatchGetItemOutput:
		if o != nil && (o.Responses == nil || o.UnprocessedKeys == nil) {
			cp := *o
			if cp.Responses == nil {
				cp.Responses = map[string][]map[string]types.AttributeValue{}
			}
			if cp.UnprocessedKeys == nil {
				cp.UnprocessedKeys = map[string]types.KeysAndAttributes{}
			}
			return &cp
		}
	case *dynamodb.BatchWriteItemOutput:
		if o != nil && o.UnprocessedItems == nil {
			cp := *o
			cp.UnprocessedItems = map[string][]types.WriteRequest{}
			return &cp
		}
	}
	return out
}
