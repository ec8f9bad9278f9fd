package bench

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/outbox"
)

// meetingDB answers a GetItem only once two GetItems are in flight at the
// same time (or fails after a long wait).
type meetingDB struct {
	outbox.DynamoDB
	both chan struct{}
	once sync.Once
	mu   sync.Mutex
	in   int
}

func (d *meetingDB) GetItem(ctx context.Context, _ *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	d.mu.Lock()
	d.in++
	if d.in == 2 {
		d.once.Do(func() { close(d.both) })
	}
	d.mu.Unlock()
	select {
	case <-d.both:
		return &dynamodb.GetItemOutput{}, nil
	case <-time.After(30 * time.Second):
		return nil, errors.New("the other call never came while this one was in flight")
	}
}

// TestUnbookedMeterLetsCallsOverlap: the drain-rate run (ThroughputRun)
// measures calls that overlap as they do against DynamoDB; a booking meter
// holds its lock across each call, which made every call of that run wait
// for the one before (the drain rate was then 1 / (calls x 5 ms)).
func TestUnbookedMeterLetsCallsOverlap(t *testing.T) {
	m := &meter{DynamoDB: &meetingDB{both: make(chan struct{})}, per: map[string]*Units{}, unbooked: true}
	in := &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "P#0"}, "sk": &types.AttributeValueMemberS{Value: "F"}}}
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := m.GetItem(context.Background(), in)
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
