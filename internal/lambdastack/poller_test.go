package lambdastack

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/require"
)

// fakeStream is one shard holding records; an iterator is the index of the
// next record. The shard stays open, as a table's current shard does.
type fakeStream struct {
	mu        sync.Mutex
	records   []types.Record
	iterators int
}

func (f *fakeStream) add(n int, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		seq := strconv.Itoa(100 + len(f.records))
		img := map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "P#1"},
			"st": &types.AttributeValueMemberS{Value: state},
		}
		if state == "ADMITTED" {
			img["due_pk"] = &types.AttributeValueMemberS{Value: "D#1"}
		}
		f.records = append(f.records, types.Record{
			EventName: types.OperationTypeInsert, EventID: aws.String("e" + seq), EventSource: aws.String("aws:dynamodb"),
			Dynamodb: &types.StreamRecord{
				ApproximateCreationDateTime: aws.Time(time.Now()),
				Keys:                        map[string]types.AttributeValue{"pk": img["pk"]},
				NewImage:                    img, SequenceNumber: aws.String(seq), StreamViewType: types.StreamViewTypeNewAndOldImages,
			},
		})
	}
}

func (f *fakeStream) ListStreams(context.Context, *dynamodbstreams.ListStreamsInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.ListStreamsOutput, error) {
	return &dynamodbstreams.ListStreamsOutput{Streams: []types.Stream{{StreamArn: aws.String("arn:stream")}}}, nil
}

func (f *fakeStream) DescribeStream(context.Context, *dynamodbstreams.DescribeStreamInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	return &dynamodbstreams.DescribeStreamOutput{StreamDescription: &types.StreamDescription{Shards: []types.Shard{{ShardId: aws.String("shard-1")}}}}, nil
}

func (f *fakeStream) GetShardIterator(_ context.Context, in *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.iterators++
	at := 0
	if in.ShardIteratorType == types.ShardIteratorTypeLatest {
		at = len(f.records)
	}
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: aws.String(strconv.Itoa(at))}, nil
}

func (f *fakeStream) GetRecords(_ context.Context, in *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	at, _ := strconv.Atoi(aws.ToString(in.ShardIterator))
	end := min(at+int(aws.ToInt32(in.Limit)), len(f.records))
	return &dynamodbstreams.GetRecordsOutput{Records: append([]types.Record(nil), f.records[at:end]...), NextShardIterator: aws.String(strconv.Itoa(end))}, nil
}

// recordingFunction answers each batch with respond and records the
// sequence numbers it received.
type recordingFunction struct {
	mu      sync.Mutex
	batches [][]string
	respond func(call int, seqs []string) (string, string) // payload, function error
}

func (r *recordingFunction) Invoke(_ context.Context, payload []byte) (Result, error) {
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return Result{}, err
	}
	var seqs []string
	for _, rec := range ev.Records {
		seqs = append(seqs, rec.Change.SequenceNumber)
	}
	r.mu.Lock()
	r.batches = append(r.batches, seqs)
	call := len(r.batches)
	r.mu.Unlock()
	out, ferr := `{"batchItemFailures":[]}`, ""
	if r.respond != nil {
		out, ferr = r.respond(call, seqs)
	}
	return Result{Payload: []byte(out), FunctionError: ferr}, nil
}

func (r *recordingFunction) calls() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]string(nil), r.batches...)
}

type pollerBundle struct {
	stream *fakeStream
	fn     *recordingFunction
	poller *Poller
	cancel func()
	done   chan struct{}
}

const drainerFilter = `{"dynamodb":{"NewImage":{"due_pk":{"S":[{"exists":true}]},"st":{"S":["ADMITTED"]}}}}`

func startPoller(t *testing.T, m StreamMapping, before int, respond func(int, []string) (string, string)) *pollerBundle {
	t.Helper()
	b := &pollerBundle{stream: &fakeStream{}, fn: &recordingFunction{respond: respond}, done: make(chan struct{})}
	b.stream.add(before, "ADMITTED")
	b.poller = &Poller{Mapping: m, Table: "ferry", Streams: b.stream, Function: b.fn, Logs: &Logs{}, Local: DefaultLocal,
		PollEvery: time.Millisecond,
		Sleep:     func(ctx context.Context, d time.Duration) error { return sleepCtx(ctx, min(d, 5*time.Millisecond)) }}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go func() { defer close(b.done); _ = b.poller.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-b.done })
	// Records written from here on come after the LATEST iterator.
	require.Eventually(t, func() bool {
		b.stream.mu.Lock()
		defer b.stream.mu.Unlock()
		return b.stream.iterators > 0
	}, 5*time.Second, time.Millisecond)
	return b
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func baseMapping() StreamMapping {
	return StreamMapping{Function: "drainer", BatchSize: 3, StartingPosition: "LATEST", ReportItemErrors: true,
		MaxRetries: 2, Filters: []string{drainerFilter}, Parallelism: 1, Enabled: true}
}

func (b *pollerBundle) waitRead(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return b.poller.Stats().Read >= n }, 5*time.Second, time.Millisecond)
}

func TestPollerStartsAtLatestAndBatches(t *testing.T) {
	t.Parallel()
	b := startPoller(t, baseMapping(), 5, nil)
	b.stream.add(7, "ADMITTED")
	b.waitRead(t, 7)
	require.Eventually(t, func() bool { return len(flatten(b.fn.calls())) == 7 }, 5*time.Second, time.Millisecond)
	for _, batch := range b.fn.calls() {
		require.LessOrEqual(t, len(batch), 3, "BatchSize")
	}
	require.Equal(t, []string{"105", "106", "107", "108", "109", "110", "111"}, flatten(b.fn.calls()), "only records after the start, in order")
}

func TestPollerFilters(t *testing.T) {
	t.Parallel()
	b := startPoller(t, baseMapping(), 0, nil)
	b.stream.add(2, "DONE")
	b.stream.add(1, "ADMITTED")
	b.waitRead(t, 3)
	require.Eventually(t, func() bool { return len(b.fn.calls()) == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, [][]string{{"102"}}, b.fn.calls())
	require.Equal(t, 2, b.poller.Stats().Filtered)
}

func TestPollerPartialBatchRetriesFromTheFirstFailure(t *testing.T) {
	t.Parallel()
	b := startPoller(t, baseMapping(), 0, func(call int, seqs []string) (string, string) {
		if call == 1 {
			return fmt.Sprintf(`{"batchItemFailures":[{"itemIdentifier":%q},{"itemIdentifier":%q}]}`, seqs[2], seqs[1]), ""
		}
		return `{"batchItemFailures":[]}`, ""
	})
	b.stream.add(3, "ADMITTED")
	require.Eventually(t, func() bool { return len(b.fn.calls()) == 2 }, 5*time.Second, time.Millisecond)
	require.Equal(t, [][]string{{"100", "101", "102"}, {"101", "102"}}, b.fn.calls())
	require.Equal(t, 1, b.poller.Stats().Partial)
}

func TestPollerInvalidPartialResponseRetriesTheBatch(t *testing.T) {
	t.Parallel()
	b := startPoller(t, baseMapping(), 0, func(call int, _ []string) (string, string) {
		if call == 1 {
			return `{"batchItemFailures":[{"itemIdentifier":"999"}]}`, ""
		}
		return `{}`, ""
	})
	b.stream.add(2, "ADMITTED")
	require.Eventually(t, func() bool { return len(b.fn.calls()) == 2 }, 5*time.Second, time.Millisecond)
	require.Equal(t, [][]string{{"100", "101"}, {"100", "101"}}, b.fn.calls())
}

func TestPollerGivesUpAfterRetries(t *testing.T) {
	t.Parallel()
	b := startPoller(t, baseMapping(), 0, func(call int, _ []string) (string, string) {
		if call <= 3 {
			return `{"errorMessage":"boom","errorType":"Unhandled"}`, "Unhandled"
		}
		return `{}`, ""
	})
	b.stream.add(1, "ADMITTED")
	require.Eventually(t, func() bool { return b.poller.Stats().Dropped == 1 }, 5*time.Second, time.Millisecond)
	require.Len(t, b.fn.calls(), 3, "the first attempt and MaximumRetryAttempts (2) retries")
	b.stream.add(1, "ADMITTED")
	require.Eventually(t, func() bool { return len(b.fn.calls()) == 4 }, 5*time.Second, time.Millisecond)
	require.Equal(t, []string{"101"}, b.fn.calls()[3], "the next record goes on")
}

func TestPollerBisectsOnFunctionError(t *testing.T) {
	t.Parallel()
	m := baseMapping()
	m.BatchSize, m.Bisect, m.MaxRetries = 4, true, 5
	b := startPoller(t, m, 0, func(_ int, seqs []string) (string, string) {
		for _, s := range seqs {
			if s == "102" && len(seqs) > 1 {
				return `{"errorMessage":"boom"}`, "Unhandled"
			}
		}
		return `{}`, ""
	})
	b.stream.add(4, "ADMITTED")
	require.Eventually(t, func() bool { return len(b.fn.calls()) == 5 }, 5*time.Second, time.Millisecond)
	require.Equal(t, [][]string{{"100", "101", "102", "103"}, {"100", "101"}, {"102", "103"}, {"102"}, {"103"}}, b.fn.calls())
	require.Equal(t, 2, b.poller.Stats().Bisected)
}

func TestPollerBatchingWindow(t *testing.T) {
	t.Parallel()
	m := baseMapping()
	m.BatchSize, m.BatchingWindow = 10, 300*time.Millisecond
	b := startPoller(t, m, 0, nil)
	b.stream.add(1, "ADMITTED")
	time.Sleep(50 * time.Millisecond)
	b.stream.add(1, "ADMITTED")
	require.Eventually(t, func() bool { return len(b.fn.calls()) == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, [][]string{{"100", "101"}}, b.fn.calls(), "records within the window go in one batch")
}

func flatten(bs [][]string) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}
