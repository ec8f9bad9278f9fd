package functionroles

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ferryhq/ferry/internal/iamaction"
	"github.com/ferryhq/ferry/internal/outbox"
)

// functionKey labels a context with the function whose handler runs.
type functionKey struct{}

func withFunction(ctx context.Context, fn string) context.Context {
	return context.WithValue(ctx, functionKey{}, fn)
}

// call is one recorded request.
type call struct {
	function    string   // the label of its context; "" outside a handler run
	engineEntry string   // the outermost engine function on its stack
	engine      []string // every engine function on its stack
	perms       []iamaction.Permission
}

// recorder is an outbox.DynamoDB that records, for every request, the
// permissions it needs and where it came from, then passes it on.
type recorder struct {
	next outbox.DynamoDB
	t    testing.TB

	mu    sync.Mutex
	calls []call
}

var _ outbox.DynamoDB = (*recorder)(nil)

const enginePrefix = "github.com/ferryhq/ferry/internal/outbox."

// engineFrames names the engine functions on the calling goroutine's
// stack, innermost first: "Enqueue" for (*Engine).Enqueue and its
// closures, "runGroups" for the goroutines runGroups starts,
// "PreparedEnqueue.Resolve" for a method of another type. It stops at the
// first frame of another package of this module: code the engine calls
// out to (an adapter) that calls the engine again is a caller of its own,
// not part of the engine function that called it (the conformance suite's
// adapters erase and enqueue from inside an attempt).
func engineFrames() []string {
	pcs := make([]uintptr, 256)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var out []string
	for {
		f, more := frames.Next()
		rest, inEngine := strings.CutPrefix(f.Function, enginePrefix)
		switch {
		case inEngine:
			rest = strings.TrimPrefix(rest, "(*Engine).")
			name, rest, _ := strings.Cut(rest, ".")
			if recv, ok := strings.CutPrefix(name, "(*"); ok {
				method, _, _ := strings.Cut(rest, ".")
				name = strings.TrimSuffix(recv, ")") + "." + method
			}
			if len(out) == 0 || out[len(out)-1] != name {
				out = append(out, name)
			}
		case len(out) > 0 && strings.HasPrefix(f.Function, modulePrefix):
			return out
		}
		if !more {
			return out
		}
	}
}

const modulePrefix = "github.com/ferryhq/ferry/"

func (r *recorder) record(ctx context.Context, in any) {
	perms, err := iamaction.ForInput(in)
	if err != nil {
		r.t.Errorf("recording a request: %v", err)
		return
	}
	c := call{perms: perms, engine: engineFrames()}
	if len(c.engine) > 0 {
		c.engineEntry = c.engine[len(c.engine)-1]
	}
	c.function, _ = ctx.Value(functionKey{}).(string)
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

func (r *recorder) recorded() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

func (r *recorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.record(ctx, in)
	return r.next.GetItem(ctx, in, o...)
}

func (r *recorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.record(ctx, in)
	return r.next.PutItem(ctx, in, o...)
}

func (r *recorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.record(ctx, in)
	return r.next.UpdateItem(ctx, in, o...)
}

func (r *recorder) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	r.record(ctx, in)
	return r.next.DeleteItem(ctx, in, o...)
}

func (r *recorder) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	r.record(ctx, in)
	return r.next.Query(ctx, in, o...)
}

func (r *recorder) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	r.record(ctx, in)
	return r.next.Scan(ctx, in, o...)
}

func (r *recorder) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	r.record(ctx, in)
	return r.next.BatchGetItem(ctx, in, o...)
}

func (r *recorder) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	r.record(ctx, in)
	return r.next.BatchWriteItem(ctx, in, o...)
}

func (r *recorder) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	r.record(ctx, in)
	return r.next.TransactWriteItems(ctx, in, o...)
}

func (r *recorder) TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error) {
	r.record(ctx, in)
	return r.next.TransactGetItems(ctx, in, o...)
}

func (r *recorder) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	r.record(ctx, in)
	return r.next.CreateTable(ctx, in, o...)
}

func (r *recorder) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	r.record(ctx, in)
	return r.next.DescribeTable(ctx, in, o...)
}

func (r *recorder) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	r.record(ctx, in)
	return r.next.UpdateTimeToLive(ctx, in, o...)
}
