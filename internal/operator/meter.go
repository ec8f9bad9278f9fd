package operator

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Usage is the DynamoDB capacity a command consumed, as DynamoDB reported
// it (ReturnConsumedCapacity TOTAL on every request).
type Usage struct {
	Calls      int     `json:"calls"`
	ReadUnits  float64 `json:"read_units"`
	WriteUnits float64 `json:"write_units"`
}

// Meter is an outbox.DynamoDB that asks DynamoDB for the capacity of every
// request and adds it up.
type Meter struct {
	next outbox.DynamoDB
	mu   sync.Mutex
	u    Usage
	// Record, when set, sees every request's input before it is sent (the
	// permissions test maps them to IAM actions).
	Record func(in any)
}

// NewMeter meters the requests sent to next.
func NewMeter(next outbox.DynamoDB) *Meter { return &Meter{next: next} }

// Usage returns what was consumed so far.
func (m *Meter) Usage() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.u
}

// UsageMeter adds up the capacity of the requests made with a context
// from WithUsage: a console page counts what it read, while the Meter
// counts what the whole process did.
type UsageMeter struct {
	mu sync.Mutex
	u  Usage
}

// Usage returns what the requests made with its context consumed so far.
func (um *UsageMeter) Usage() Usage {
	um.mu.Lock()
	defer um.mu.Unlock()
	return um.u
}

type usageKey struct{}

// WithUsage returns a context whose requests through a Meter are also
// booked to um.
func WithUsage(ctx context.Context, um *UsageMeter) context.Context {
	return context.WithValue(ctx, usageKey{}, um)
}

// add books one request's reported capacity, to the Meter and to the
// context's UsageMeter; read tells which side a bare CapacityUnits belongs
// to.
func (m *Meter) add(ctx context.Context, read bool, ccs ...types.ConsumedCapacity) {
	m.mu.Lock()
	m.u.book(read, ccs)
	m.mu.Unlock()
	if um, ok := ctx.Value(usageKey{}).(*UsageMeter); ok {
		um.mu.Lock()
		um.u.book(read, ccs)
		um.mu.Unlock()
	}
}

func (u *Usage) book(read bool, ccs []types.ConsumedCapacity) {
	u.Calls++
	for _, c := range ccs {
		switch {
		case c.ReadCapacityUnits != nil || c.WriteCapacityUnits != nil:
			if c.ReadCapacityUnits != nil {
				u.ReadUnits += *c.ReadCapacityUnits
			}
			if c.WriteCapacityUnits != nil {
				u.WriteUnits += *c.WriteCapacityUnits
			}
		case c.CapacityUnits != nil && read:
			u.ReadUnits += *c.CapacityUnits
		case c.CapacityUnits != nil:
			u.WriteUnits += *c.CapacityUnits
		}
	}
}

func (m *Meter) record(in any) {
	if m.Record != nil {
		m.Record(in)
	}
}

func one(c *types.ConsumedCapacity) []types.ConsumedCapacity {
	if c == nil {
		return nil
	}
	return []types.ConsumedCapacity{*c}
}

const total = types.ReturnConsumedCapacityTotal

// GetItem implements outbox.DynamoDB.
func (m *Meter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	cp := *in
	cp.ReturnConsumedCapacity = total
	m.record(&cp)
	out, err := m.next.GetItem(ctx, &cp, o...)
	if out != nil {
		m.add(ctx, true, one(out.ConsumedCapacity)...)
	} else {
		m.add(ctx, true)
	}
	return out, err
}

// PutItem implements outbox.DynamoDB.
func (m *Meter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	cp := *in
	cp.ReturnConsumedCapacity = total
	m.record(&cp)
	out, err := m.next.PutItem(ctx, &cp, o...)
	if out != nil {
		m.add(ctx, false, one(out.ConsumedCapacity)...)
	} else {
		m.add(ctx, false)
	}
	return out, err
}

// UpdateItem implements outbox.DynamoDB.
func (m *Meter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	cp := *in
	cp.ReturnConsumedCapacity = total
	m.record(&cp)
	out, err := m.next.UpdateItem(ctx, &cp, o...)
	if out != nil {
		m.add(ctx, false, one(out.ConsumedCapacity)...)
	} else {
		m.add(ctx, false)
	}
	return out, err
}

// DeleteItem implements outbox.DynamoDB.
func (m *Meter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	cp := *in
	cp.ReturnConsumedCapacity = total
	m.record(&cp)
	out, err := m.next.DeleteItem(ctx, &cp, o...)
	if out != nil {
		m.add(ctx, false, one(out.ConsumedCapacity)...)
	} else {
		m.add(ctx, false)
	}
	return out, err
}

// Query implements outbox.DynamoDB.
func (m *Meter) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	cp := *in
	cp.ReturnConsumedCapacity = total
	m.record(&cp)
	out, err := m.next.Query(ctx, &cp, o...)
	if out != nil {
		m.add(ctx, true, one(out.ConsumedCapacity)...)
	} else {
		m.add(ctx, true)
	}
	return out, err
}

// Scan implements outbox.DynamoDB.
func (m *Meter) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	cp := *in
	cp.ReturnConsumedCapacity = total
	m.record(&cp)
	out, err := m.next.Scan(ctx, &cp, o...)
	if out != nil {
		m.add(ctx, true, one(out.ConsumedCapacity)...)
	} else {
		m.add(ctx, true)
	}
	return out, err
}

// BatchGetItem implements outbox.DynamoDB.
func (m *Meter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	cp := *in
	cp.ReturnConsumedCapacity = total
	m.record(&cp)
	out, err := m.next.BatchGetItem(ctx, &cp, o...)
	if out != nil {
		m.add(ctx, true, out.ConsumedCapacity...)
	} else {
		m.add(ctx, true)
	}
	return out, err
}

// BatchWriteItem implements outbox.DynamoDB.
func (m *Meter) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	cp := *in
	cp.ReturnConsumedCapacity = total
	m.record(&cp)
	out, err := m.next.BatchWriteItem(ctx, &cp, o...)
	if out != nil {
		m.add(ctx, false, out.ConsumedCapacity...)
	} else {
		m.add(ctx, false)
	}
	return out, err
}

// TransactWriteItems implements outbox.DynamoDB.
func (m *Meter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	cp := *in
	cp.ReturnConsumedCapacity = total
	m.record(&cp)
	out, err := m.next.TransactWriteItems(ctx, &cp, o...)
	if out != nil {
		m.add(ctx, false, out.ConsumedCapacity...)
	} else {
		m.add(ctx, false)
	}
	return out, err
}

// TransactGetItems implements outbox.DynamoDB.
func (m *Meter) TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error) {
	cp := *in
	cp.ReturnConsumedCapacity = total
	m.record(&cp)
	out, err := m.next.TransactGetItems(ctx, &cp, o...)
	if out != nil {
		m.add(ctx, true, out.ConsumedCapacity...)
	} else {
		m.add(ctx, true)
	}
	return out, err
}

// CreateTable implements outbox.DynamoDB (the commands never create one).
func (m *Meter) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	m.add(ctx, false)
	m.record(in)
	return m.next.CreateTable(ctx, in, o...)
}

// DescribeTable implements outbox.DynamoDB (a control-plane call: no units).
func (m *Meter) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	m.add(ctx, true)
	m.record(in)
	return m.next.DescribeTable(ctx, in, o...)
}

// UpdateTimeToLive implements outbox.DynamoDB.
func (m *Meter) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	m.add(ctx, false)
	m.record(in)
	return m.next.UpdateTimeToLive(ctx, in, o...)
}

var _ outbox.DynamoDB = (*Meter)(nil)
