package ddblocal

import (
	"context"
	"math/rand/v2"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Batch operations follow the BatchGetItem and BatchWriteItem API
// references: at most 100 keys / 25 requests, no duplicate keys, each item
// billed as its own GetItem, PutItem or DeleteItem. A BatchGetItem answer
// stops at 16 MB of items and returns the rest as UnprocessedKeys, as
// DynamoDB's does; WithUnprocessed leaves a random share of keys and
// writes unprocessed, to exercise a client's retry loop.

const (
	maxBatchGet      = 100
	maxBatchWrite    = 25
	maxBatchGetBytes = 16 << 20
)

func firstKey[V any](m map[string]V) string {
	ks := sortedKeys(m)
	if len(ks) == 0 {
		return ""
	}
	return ks[0]
}

// BatchGetItem reads up to 100 items from one or more tables.
func (db *DB) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c, err := db.begin(ctx, "BatchGetItem", firstKey(in.RequestItems))
	if err != nil {
		return nil, err
	}
	out, err := db.batchGet(in)
	return finish(c, out, err)
}

func (db *DB) batchGet(in *dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error) {
	if len(in.RequestItems) == 0 {
		return nil, validationError("1 validation error detected: Value null at 'requestItems' failed to satisfy constraint: Member must have length greater than or equal to 1")
	}
	n := 0
	names := sortedKeys(in.RequestItems)
	projs := map[string]*projector{}
	for _, name := range names {
		ka, err := legacyKeysAndAttributes(in.RequestItems[name])
		if err != nil {
			return nil, err
		}
		if len(ka.Keys) == 0 {
			return nil, validationError("1 validation error detected: Value '[]' at 'requestItems.%s.member.keys' failed to satisfy constraint: Member must have length greater than or equal to 1", name)
		}
		n += len(ka.Keys)
		x, err := newExprs(ka.ExpressionAttributeNames, nil)
		if err != nil {
			return nil, err
		}
		if projs[name], err = x.projection(ka.ProjectionExpression); err != nil {
			return nil, err
		}
		if err := x.done(); err != nil {
			return nil, err
		}
	}
	if n > maxBatchGet {
		return nil, validationError("Too many items requested for the BatchGetItem call")
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	var u usage
	defer db.record(&u)
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]Item{}, UnprocessedKeys: map[string]types.KeysAndAttributes{}}
	total, full := 0, false
	for _, name := range names {
		t, err := db.table(name)
		if err != nil {
			return nil, err
		}
		ka := in.RequestItems[name]
		seen := map[string]bool{}
		keys := make([][]byte, len(ka.Keys))
		for i, k := range ka.Keys {
			key, err := t.schema.keyOf(k)
			if err != nil {
				return nil, err
			}
			if seen[string(key)] {
				return nil, validationError("Provided list of item keys contains duplicates")
			}
			seen[string(key)] = true
			keys[i] = key
		}
		items := []Item{}
		var unprocessed []Item
		for i, key := range keys {
			if full || db.unprocessed.draw() {
				unprocessed = append(unprocessed, ka.Keys[i])
				continue
			}
			size := 0
			if e, ok := t.get(key); ok {
				if total+int(e.size) > maxBatchGetBytes {
					full = true
					unprocessed = append(unprocessed, ka.Keys[i])
					continue
				}
				item := e.item()
				size = int(e.size)
				total += size
				items = append(items, projs[name].apply(item))
			}
			u.of(t).read += readUnits(size, aws.ToBool(ka.ConsistentRead))
		}
		out.Responses[name] = items
		if len(unprocessed) > 0 {
			// The table's request as it was, with the keys left to read.
			rest := ka
			rest.Keys = unprocessed
			out.UnprocessedKeys[name] = rest
		}
	}
	out.ConsumedCapacity = u.report(in.ReturnConsumedCapacity)
	return out, nil
}

// BatchWriteItem puts or deletes up to 25 items in one or more tables,
// without conditions.
func (db *DB) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	c, err := db.begin(ctx, "BatchWriteItem", firstKey(in.RequestItems))
	if err != nil {
		return nil, err
	}
	out, err := db.batchWrite(in)
	return finish(c, out, err)
}

func (db *DB) batchWrite(in *dynamodb.BatchWriteItemInput) (*dynamodb.BatchWriteItemOutput, error) {
	if len(in.RequestItems) == 0 {
		return nil, validationError("1 validation error detected: Value null at 'requestItems' failed to satisfy constraint: Member must have length greater than or equal to 1")
	}
	n := 0
	for _, reqs := range in.RequestItems {
		n += len(reqs)
		if len(reqs) == 0 {
			return nil, validationError("1 validation error detected: Value '[]' at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: [Member must have length less than or equal to 25, Member must have length greater than or equal to 1]")
		}
	}
	if n > maxBatchWrite {
		return nil, validationError("1 validation error detected: Value at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: [Member must have length less than or equal to 25, Member must have length greater than or equal to 1]")
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	type op struct {
		t    *table
		key  []byte
		item Item // nil for a delete
		size int
		name string
		req  types.WriteRequest
	}
	var ops []op
	for _, name := range sortedKeys(in.RequestItems) {
		t, err := db.table(name)
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for _, wr := range in.RequestItems[name] {
			o := op{t: t, name: name, req: wr}
			switch {
			case wr.PutRequest != nil && wr.DeleteRequest == nil:
				if wr.PutRequest.Item == nil {
					return nil, validationError("1 validation error detected: Value null at 'requestItems.%s.member.putRequest.item' failed to satisfy constraint: Member must not be null", name)
				}
				if o.key, o.size, err = t.schema.checkItem(wr.PutRequest.Item); err != nil {
					return nil, err
				}
				o.item = wr.PutRequest.Item
			case wr.DeleteRequest != nil && wr.PutRequest == nil:
				if o.key, err = t.schema.keyOf(wr.DeleteRequest.Key); err != nil {
					return nil, err
				}
			default:
				return nil, validationError("Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes")
			}
			if seen[string(o.key)] {
				return nil, validationError("Provided list of item keys contains duplicates")
			}
			seen[string(o.key)] = true
			ops = append(ops, o)
		}
	}
	var u usage
	defer db.record(&u)
	now := db.clock.Now()
	unprocessed := map[string][]types.WriteRequest{}
	for _, o := range ops {
		if db.unprocessed.draw() {
			unprocessed[o.name] = append(unprocessed[o.name], o.req)
			continue
		}
		oldE, exists := o.t.get(o.key)
		var oldPtr *entry
		if exists {
			oldPtr = &oldE
		}
		if o.item == nil && !exists {
			u.of(o.t).write += writeUnits(0)
			continue
		}
		w := o.t.commit(db, o.key, oldPtr, o.item, o.size, now, false)
		u.of(o.t).addWrite(writeUnits(max(sizeOf(oldPtr), o.size)), w, 1)
	}
	return &dynamodb.BatchWriteItemOutput{
		UnprocessedItems: unprocessed,
		ConsumedCapacity: u.report(in.ReturnConsumedCapacity),
	}, nil
}

// unprocessedPlan leaves batch keys and writes unprocessed at a rate
// (WithUnprocessed), deterministically from a seed.
type unprocessedPlan struct {
	mu   sync.Mutex
	rng  *rand.Rand
	rate float64
}

// WithUnprocessed makes BatchGetItem and BatchWriteItem leave each key or
// write unprocessed with probability rate (0 <= rate < 1), returned in
// UnprocessedKeys / UnprocessedItems for the client to retry, as DynamoDB
// does under load: an opt-in mode to prove a client's retry loop. The draws
// come from seed, so a run repeats.
func WithUnprocessed(rate float64, seed uint64) Option {
	return func(db *DB) {
		if rate <= 0 {
			db.unprocessed = nil
			return
		}
		db.unprocessed = &unprocessedPlan{rng: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d)), rate: min(rate, 0.99)}
	}
}

func (p *unprocessedPlan) draw() bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rng.Float64() < p.rate
}
