package bench

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

// The DynamoDB side of the scale model.
const (
	// KeyWRU is DynamoDB's write ceiling of one partition key (of a
	// physical partition, and so of the hottest key), per second.
	KeyWRU = 1000.0
	// TableWRU is the default on-demand table quota (Service Quotas:
	// "Table-level write throughput", 40,000 write request units a
	// second), applied to the base table and to each index.
	TableWRU = 40000.0
	// sdkMaxAttempts and the backoff are the AWS SDK for Go v2's standard
	// retryer, which the functions' DynamoDB client uses: 3 attempts, the
	// n-th retry after a uniform draw in [0, 2^n) seconds.
	sdkMaxAttempts = 3
)

var errStopped = errors.New("scale model stopped")

// modelDB is the DynamoDB every engine of the model talks to: the embedded
// DynamoDB behind a virtual-time gate. Each call first yields, so that it
// reaches the table in time order; it then spends CallLatency on its
// caller's time. Writes are throttled per partition key once the key
// consumed KeyWRU in the last second (base table keys P#n, index keys D#n),
// and per table past TableWRU; a throttled call is retried as the AWS SDK
// does (3 attempts, exponential jittered backoff) before the engine sees
// the error.
type modelDB struct {
	mu   sync.Mutex // kids call side by side (vsched.kids)
	s    *vsched
	db   *ddblocal.DB
	rnd  *rand.Rand
	lim  *limiter
	st   *dbStats
	thr  bool // the next call is throttled (read by the fault plan)
	keyW float64
	tabW float64
}

// dbStats counts what the model's DynamoDB refused.
type dbStats struct {
	throttled     int            // attempts refused for throughput
	throttledKeys map[string]int // by the hottest key named ("table" for the table quota)
	failed        int            // calls the engine saw fail after the SDK's retries
	calls         int
	// units: request units by the calling process's role, all run long;
	// inWindow: those of calls made in [from, to).
	units, inWindow map[string]*units
	from, to        time.Time
}

type units struct{ w, r float64 }

func (st *dbStats) book(role string, t time.Time, w, r float64) {
	add := func(m map[string]*units) {
		u := m[role]
		if u == nil {
			u = &units{}
			m[role] = u
		}
		u.w += w
		u.r += r
	}
	add(st.units)
	if !t.Before(st.from) && t.Before(st.to) {
		add(st.inWindow)
	}
}

func (m *modelDB) decide(ddblocal.Call) ddblocal.Fault {
	if m.thr {
		return ddblocal.Fault{Kind: ddblocal.FaultThrottle}
	}
	return ddblocal.Fault{}
}

// gate runs one call: yield, throttle check and SDK retries, the call, its
// accounting, and its latency.
func (m *modelDB) gate(writes []string, do func(throttle bool) ([]types.ConsumedCapacity, error)) error {
	a := m.s.self()
	if a == nil || a.stopped() {
		return errStopped
	}
	if p, ok := a.(*vproc); ok {
		p.yield()
		if p.stopped() {
			return errStopped
		}
	}
	for attempt := 1; ; attempt++ {
		m.mu.Lock()
		if attempt == 1 {
			m.st.calls++
		}
		t := a.now()
		if hot := m.lim.refuse(writes, t, m.keyW, m.tabW); hot != "" {
			m.st.throttled++
			m.st.throttledKeys[hot]++
			m.thr = true
			_, err := do(true)
			m.thr = false
			a.advance(CallLatency)
			if attempt >= sdkMaxAttempts {
				m.st.failed++
				m.mu.Unlock()
				return err
			}
			backoff := time.Duration(m.rnd.Float64() * float64(int64(1)<<attempt) * float64(time.Second))
			m.mu.Unlock()
			a.wait(backoff)
			if a.stopped() {
				return errStopped
			}
			continue
		}
		before := m.db.Capacity(table)
		cc, err := do(false)
		after := m.db.Capacity(table)
		m.st.book(a.roleOf(), t, after.TotalWriteUnits()-before.TotalWriteUnits(), after.TotalReadUnits()-before.TotalReadUnits())
		m.lim.account(writes, cc, t)
		a.advance(CallLatency)
		m.mu.Unlock()
		return err
	}
}

func pkOf(it map[string]types.AttributeValue) string {
	if v, ok := it["pk"].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func (m *modelDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.GetItemOutput, err error) {
	err = m.gate(nil, func(bool) ([]types.ConsumedCapacity, error) {
		out, err = m.db.GetItem(ctx, in, o...)
		return nil, err
	})
	return out, err
}

func (m *modelDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.PutItemOutput, err error) {
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	err = m.gate([]string{pkOf(in.Item)}, func(bool) ([]types.ConsumedCapacity, error) {
		out, err = m.db.PutItem(ctx, &c, o...)
		if out == nil || out.ConsumedCapacity == nil {
			return nil, err
		}
		return []types.ConsumedCapacity{*out.ConsumedCapacity}, err
	})
	return out, err
}

func (m *modelDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.UpdateItemOutput, err error) {
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	err = m.gate([]string{pkOf(in.Key)}, func(bool) ([]types.ConsumedCapacity, error) {
		out, err = m.db.UpdateItem(ctx, &c, o...)
		if out == nil || out.ConsumedCapacity == nil {
			return nil, err
		}
		return []types.ConsumedCapacity{*out.ConsumedCapacity}, err
	})
	return out, err
}

func (m *modelDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.DeleteItemOutput, err error) {
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	err = m.gate([]string{pkOf(in.Key)}, func(bool) ([]types.ConsumedCapacity, error) {
		out, err = m.db.DeleteItem(ctx, &c, o...)
		if out == nil || out.ConsumedCapacity == nil {
			return nil, err
		}
		return []types.ConsumedCapacity{*out.ConsumedCapacity}, err
	})
	return out, err
}

func (m *modelDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (out *dynamodb.QueryOutput, err error) {
	err = m.gate(nil, func(bool) ([]types.ConsumedCapacity, error) {
		out, err = m.db.Query(ctx, in, o...)
		return nil, err
	})
	return out, err
}

func (m *modelDB) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (out *dynamodb.ScanOutput, err error) {
	err = m.gate(nil, func(bool) ([]types.ConsumedCapacity, error) {
		out, err = m.db.Scan(ctx, in, o...)
		return nil, err
	})
	return out, err
}

func (m *modelDB) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.BatchGetItemOutput, err error) {
	err = m.gate(nil, func(bool) ([]types.ConsumedCapacity, error) {
		out, err = m.db.BatchGetItem(ctx, in, o...)
		return nil, err
	})
	return out, err
}

func (m *modelDB) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.BatchWriteItemOutput, err error) {
	var keys []string
	for _, reqs := range in.RequestItems {
		for _, r := range reqs {
			switch {
			case r.PutRequest != nil:
				keys = append(keys, pkOf(r.PutRequest.Item))
			case r.DeleteRequest != nil:
				keys = append(keys, pkOf(r.DeleteRequest.Key))
			}
		}
	}
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	err = m.gate(keys, func(bool) ([]types.ConsumedCapacity, error) {
		out, err = m.db.BatchWriteItem(ctx, &c, o...)
		if out == nil {
			return nil, err
		}
		return out.ConsumedCapacity, err
	})
	return out, err
}

func (m *modelDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (out *dynamodb.TransactWriteItemsOutput, err error) {
	keys := make([]string, 0, len(in.TransactItems))
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			keys = append(keys, pkOf(it.Put.Item))
		case it.Update != nil:
			keys = append(keys, pkOf(it.Update.Key))
		case it.Delete != nil:
			keys = append(keys, pkOf(it.Delete.Key))
		case it.ConditionCheck != nil:
			keys = append(keys, pkOf(it.ConditionCheck.Key))
		}
	}
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	err = m.gate(keys, func(bool) ([]types.ConsumedCapacity, error) {
		out, err = m.db.TransactWriteItems(ctx, &c, o...)
		if out == nil {
			return nil, err
		}
		return out.ConsumedCapacity, err
	})
	return out, err
}

func (m *modelDB) TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, o ...func(*dynamodb.Options)) (out *dynamodb.TransactGetItemsOutput, err error) {
	err = m.gate(nil, func(bool) ([]types.ConsumedCapacity, error) {
		out, err = m.db.TransactGetItems(ctx, in, o...)
		return nil, err
	})
	return out, err
}

func (m *modelDB) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	return m.db.CreateTable(ctx, in, o...)
}

func (m *modelDB) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (out *dynamodb.DescribeTableOutput, err error) {
	err = m.gate(nil, func(bool) ([]types.ConsumedCapacity, error) {
		out, err = m.db.DescribeTable(ctx, in, o...)
		return nil, err
	})
	return out, err
}

func (m *modelDB) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	return m.db.UpdateTimeToLive(ctx, in, o...)
}

var _ outbox.DynamoDB = (*modelDB)(nil)

// limiter keeps each partition key's write units over the last second (ten
// buckets of 100 ms), and the table's and the due index's totals.
type limiter struct {
	keys map[string]*window
	base window
	due  window
}

type window struct {
	units [10]float64
	slot  [10]int64
}

const bucket = 100 * time.Millisecond

func (w *window) add(t time.Time, u float64) {
	i := t.UnixNano() / int64(bucket)
	k := i % 10
	switch {
	case w.slot[k] > i:
		return // older than the last second (a kid's time lags)
	case w.slot[k] != i:
		w.slot[k], w.units[k] = i, 0
	}
	w.units[k] += u
}

func (w *window) sum(t time.Time) float64 {
	i := t.UnixNano() / int64(bucket)
	s := 0.0
	for k := range w.units {
		if w.slot[k] > i-10 && w.slot[k] <= i {
			s += w.units[k]
		}
	}
	return s
}

func newLimiter() *limiter { return &limiter{keys: map[string]*window{}} }

func (l *limiter) key(k string) *window {
	w := l.keys[k]
	if w == nil {
		w = &window{}
		l.keys[k] = w
	}
	return w
}

// indexKey is the due index key that writes to a partition's action rows
// touch: D#n for P#n.
func indexKey(pk string) string {
	if strings.HasPrefix(pk, "P#") {
		return "D#" + pk[2:]
	}
	return ""
}

// refuse returns the key (or "table") whose last second is at its ceiling,
// "" when the writes may go.
func (l *limiter) refuse(writes []string, t time.Time, keyW, tabW float64) string {
	if len(writes) == 0 {
		return ""
	}
	if l.base.sum(t) >= tabW || l.due.sum(t) >= tabW {
		return "table"
	}
	for _, k := range writes {
		if w := l.keys[k]; w != nil && w.sum(t) >= keyW {
			return k
		}
		if ik := indexKey(k); ik != "" {
			if w := l.keys[ik]; w != nil && w.sum(t) >= keyW {
				return ik
			}
		}
	}
	return ""
}

// account books a call's consumed write units on the keys it wrote, shared
// equally among its items (base units on their keys, index units on the
// matching D# keys).
func (l *limiter) account(writes []string, cc []types.ConsumedCapacity, t time.Time) {
	if len(writes) == 0 {
		return
	}
	var base, idx float64
	for _, c := range cc {
		if c.Table != nil && c.Table.WriteCapacityUnits != nil {
			base += *c.Table.WriteCapacityUnits
		}
		for _, g := range c.GlobalSecondaryIndexes {
			if g.WriteCapacityUnits != nil {
				idx += *g.WriteCapacityUnits
			}
		}
	}
	l.base.add(t, base)
	l.due.add(t, idx)
	n := float64(len(writes))
	var ix []string
	for _, k := range writes {
		l.key(k).add(t, base/n)
		if ik := indexKey(k); ik != "" {
			ix = append(ix, ik)
		}
	}
	for _, k := range ix {
		l.key(k).add(t, idx/float64(len(ix)))
	}
}
