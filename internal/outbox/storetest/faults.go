package storetest

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/ferryhq/ferry/internal/outbox"
)

// fault is what faultyDB does to one call a rule picks.
type fault int

// The faults.
const (
	// noFault lets the call through.
	noFault fault = iota
	// failBefore fails the call before it reaches the backend, as when the
	// engine's process dies.
	failBefore
	// failAfter sends the call, then loses its answer (an ambiguous write).
	failAfter
)

// faultyDB injects faults into single-item calls picked by a rule (it sees the key, or a PutItem's whole item), on any backend (the embedded DynamoDB, over HTTP,
// a real endpoint): failBefore fails the call before it reaches the
// backend, as when the engine's process dies (the error is neither
// retryable nor ambiguous: the engine gives up); failAfter sends the
// call and then loses its answer (an InternalServerError: an ambiguous
// write). before, when set, runs ahead of a call the rule lets through, so
// that a case can put another client's calls between two of the engine's
// at a chosen point.
type faultyDB struct {
	outbox.DynamoDB
	mu     sync.Mutex
	rule   func(op string, key map[string]types.AttributeValue) fault
	before func(op string, key map[string]types.AttributeValue)
	// down: the process died (crashFrom); every call fails, transactions
	// too.
	down atomic.Bool
}

// crashFrom makes the engine's process die at the first call the rule
// picks: that call and every later one, transactions included, fail.
func (f *faultyDB) crashFrom(at func(op string, key map[string]types.AttributeValue) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rule = func(op string, k map[string]types.AttributeValue) fault {
		if f.down.Load() || at(op, k) {
			f.down.Store(true)
			return failBefore
		}
		return noFault
	}
}

func (f *faultyDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if f.down.Load() {
		return nil, errCrashed
	}
	return f.DynamoDB.TransactWriteItems(ctx, in, o...)
}

// errCrashed is what a call of a crashed engine returns.
var errCrashed = context.Canceled

func (f *faultyDB) decide(op string, key map[string]types.AttributeValue) fault {
	f.mu.Lock()
	rule, before := f.rule, f.before
	f.mu.Unlock()
	k := noFault
	if rule != nil {
		k = rule(op, key)
	}
	if k == noFault && before != nil {
		before(op, key)
	}
	return k
}

func lost() error {
	return &smithy.GenericAPIError{Code: "InternalServerError", Message: "storetest: answer lost after commit"}
}

func (f *faultyDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	switch f.decide("PutItem", in.Item) {
	case failBefore:
		return nil, errCrashed
	case failAfter:
		if _, err := f.DynamoDB.PutItem(ctx, in, o...); err != nil {
			return nil, err
		}
		return nil, lost()
	}
	return f.DynamoDB.PutItem(ctx, in, o...)
}

func (f *faultyDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if f.decide("GetItem", in.Key) != noFault {
		return nil, errCrashed
	}
	return f.DynamoDB.GetItem(ctx, in, o...)
}

func (f *faultyDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	switch f.decide("UpdateItem", in.Key) {
	case failBefore:
		return nil, errCrashed
	case failAfter:
		if _, err := f.DynamoDB.UpdateItem(ctx, in, o...); err != nil {
			return nil, err
		}
		return nil, lost()
	}
	return f.DynamoDB.UpdateItem(ctx, in, o...)
}

func (f *faultyDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if f.decide("DeleteItem", in.Key) != noFault {
		return nil, errCrashed
	}
	return f.DynamoDB.DeleteItem(ctx, in, o...)
}

// isRecord and isAction tell the rows of a keyed enqueue apart (for a
// PutItem the rule sees the whole item: isAction is a put of an action, not
// of a tombstone sealing its slot).
func isRecord(key map[string]types.AttributeValue) bool { return str(key, "sk") == "K" }
func isAction(key map[string]types.AttributeValue) bool {
	_, kind := key["kind"]
	return strings.HasPrefix(str(key, "sk"), "A#") && kind
}

func str(it map[string]types.AttributeValue, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// rawRecord reads an idempotency record as stored (table layout: design.md §3,
// 0002, 0007), nil when there is none.
func rawRecord(ctx context.Context, db outbox.DynamoDB, table, ws, ikey string) (map[string]types.AttributeValue, error) {
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "K#" + ws + "#" + ikey},
		"sk": &types.AttributeValueMemberS{Value: "K"},
	}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}
