package ddbhttp_test

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// fakeCall is one backend call the fake recorded.
type fakeCall struct {
	op string
	in any
}

// fakeBackend records every call and answers with whatever respond returns
// (an empty output when respond is nil or returns nil).
type fakeBackend struct {
	respond func(op string, in any) (any, error)

	mu    sync.Mutex
	calls []fakeCall
}

func (f *fakeBackend) Calls() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeCall(nil), f.calls...)
}

func answer[Out any](f *fakeBackend, op string, in any) (*Out, error) {
	f.mu.Lock()
	f.calls = append(f.calls, fakeCall{op: op, in: in})
	respond := f.respond
	f.mu.Unlock()
	if respond == nil {
		return new(Out), nil
	}
	out, err := respond(op, in)
	if err != nil {
		return nil, err
	}
	if out == nil {
		return new(Out), nil
	}
	return out.(*Out), nil
}

func (f *fakeBackend) CreateTable(_ context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	return answer[dynamodb.CreateTableOutput](f, "CreateTable", in)
}

func (f *fakeBackend) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return answer[dynamodb.DescribeTableOutput](f, "DescribeTable", in)
}

func (f *fakeBackend) DeleteTable(_ context.Context, in *dynamodb.DeleteTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error) {
	return answer[dynamodb.DeleteTableOutput](f, "DeleteTable", in)
}

func (f *fakeBackend) ListTables(_ context.Context, in *dynamodb.ListTablesInput, _ ...func(*dynamodb.Options)) (*dynamodb.ListTablesOutput, error) {
	return answer[dynamodb.ListTablesOutput](f, "ListTables", in)
}

func (f *fakeBackend) UpdateTimeToLive(_ context.Context, in *dynamodb.UpdateTimeToLiveInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	return answer[dynamodb.UpdateTimeToLiveOutput](f, "UpdateTimeToLive", in)
}

func (f *fakeBackend) DescribeTimeToLive(_ context.Context, in *dynamodb.DescribeTimeToLiveInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	return answer[dynamodb.DescribeTimeToLiveOutput](f, "DescribeTimeToLive", in)
}

func (f *fakeBackend) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return answer[dynamodb.PutItemOutput](f, "PutItem", in)
}

func (f *fakeBackend) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return answer[dynamodb.GetItemOutput](f, "GetItem", in)
}

func (f *fakeBackend) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return answer[dynamodb.UpdateItemOutput](f, "UpdateItem", in)
}

func (f *fakeBackend) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return answer[dynamodb.DeleteItemOutput](f, "DeleteItem", in)
}

func (f *fakeBackend) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return answer[dynamodb.QueryOutput](f, "Query", in)
}

func (f *fakeBackend) Scan(_ context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return answer[dynamodb.ScanOutput](f, "Scan", in)
}

func (f *fakeBackend) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return answer[dynamodb.BatchGetItemOutput](f, "BatchGetItem", in)
}

func (f *fakeBackend) BatchWriteItem(_ context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	return answer[dynamodb.BatchWriteItemOutput](f, "BatchWriteItem", in)
}

func (f *fakeBackend) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return answer[dynamodb.TransactWriteItemsOutput](f, "TransactWriteItems", in)
}

func (f *fakeBackend) TransactGetItems(_ context.Context, in *dynamodb.TransactGetItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error) {
	return answer[dynamodb.TransactGetItemsOutput](f, "TransactGetItems", in)
}
