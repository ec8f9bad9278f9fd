package lambdastack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// StreamsAPI is the part of the DynamoDB Streams API the poller reads
// (the SDK's *dynamodbstreams.Client).
type StreamsAPI interface {
	ListStreams(ctx context.Context, in *dynamodbstreams.ListStreamsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.ListStreamsOutput, error)
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// Poller does for one stream event-source mapping what Lambda's poller
// does: it reads each shard of the table's stream in order (4 reads a
// second while idle), drops records older than MaximumRecordAge and those
// no filter matches, gathers a batch up to BatchSize or until the batching
// window has passed since its first record, and invokes the function with
// it. A batch is retried until it succeeds, its retries are spent
// (MaximumRetryAttempts; -1: until its records expire) or its records are
// too old; a failed batch is split in two first with BisectBatchOnFunctionError.
// With ReportBatchItemFailures, a response naming failed records
// checkpoints before the lowest of them and retries from there; an invalid
// one fails the whole batch. A batch given up is logged and skipped (no
// on-failure destination is run locally).
type Poller struct {
	Mapping  StreamMapping
	Table    string
	Streams  StreamsAPI
	Function Invoker
	Logs     *Logs
	Local    Local
	// Now and Sleep are the poller's clock; nil: the system's.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// PollEvery is the idle read interval (Lambda: 4 a second).
	PollEvery time.Duration

	filters []*Pattern
	mu      sync.Mutex
	stats   PollerStats
}

// PollerStats counts what the poller did.
type PollerStats struct {
	Read, Filtered, Expired int // records read, dropped by the filters, dropped as too old
	Batches, Records        int // invocations and the records they carried (retries included)
	Retries, Dropped        int // batches retried, batches given up
	Bisected, Partial       int // batches split after an error, partial batch responses honoured
}

// Stats returns the counts so far.
func (p *Poller) Stats() PollerStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

func (p *Poller) count(f func(*PollerStats)) {
	p.mu.Lock()
	f(&p.stats)
	p.mu.Unlock()
}

func (p *Poller) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Poller) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run polls until ctx ends. It finds the table's latest stream, then
// follows its shards: those open now from the mapping's starting
// position, shards that appear later from their start once their parent
// is done.
func (p *Poller) Run(ctx context.Context) error {
	if p.PollEvery == 0 {
		p.PollEvery = 250 * time.Millisecond
	}
	for _, f := range p.Mapping.Filters {
		pat, err := ParsePattern(f)
		if err != nil {
			return err
		}
		p.filters = append(p.filters, pat)
	}
	ls, err := p.Streams.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String(p.Table)})
	if err != nil {
		return fmt.Errorf("stream poller: ListStreams: %w", err)
	}
	if len(ls.Streams) == 0 {
		return fmt.Errorf("stream poller: table %q has no stream", p.Table)
	}
	arn := aws.ToString(ls.Streams[len(ls.Streams)-1].StreamArn)
	started := map[string]bool{}
	done := map[string]chan struct{}{}
	first := true
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		shards, err := p.shards(ctx, arn)
		if err != nil && ctx.Err() == nil {
			p.Logs.Event(p.Mapping.Function, "esm", "DescribeStream failed: "+err.Error())
		}
		for _, sh := range shards {
			id := aws.ToString(sh.ShardId)
			if started[id] {
				continue
			}
			started[id] = true
			done[id] = make(chan struct{})
			from := types.ShardIteratorTypeTrimHorizon
			if first && p.Mapping.StartingPosition == "LATEST" {
				from = types.ShardIteratorTypeLatest
			}
			parent := done[aws.ToString(sh.ParentShardId)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer close(done[id])
				if parent != nil {
					select {
					case <-parent:
					case <-ctx.Done():
						return
					}
				}
				if err := p.shard(ctx, arn, id, from); err != nil && ctx.Err() == nil {
					p.Logs.Event(p.Mapping.Function, "esm", "shard "+id+": "+err.Error())
				}
			}()
		}
		first = false
		if err := p.sleep(ctx, 5*time.Second); err != nil {
			return nil
		}
	}
}

func (p *Poller) shards(ctx context.Context, arn string) ([]types.Shard, error) {
	var out []types.Shard
	var start *string
	for {
		d, err := p.Streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn), ExclusiveStartShardId: start})
		if err != nil {
			return out, err
		}
		out = append(out, d.StreamDescription.Shards...)
		start = d.StreamDescription.LastEvaluatedShardId
		if start == nil {
			return out, nil
		}
	}
}

// shard reads one shard to its end (or until ctx ends).
func (p *Poller) shard(ctx context.Context, arn, id string, from types.ShardIteratorType) error {
	it, err := p.Streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String(id), ShardIteratorType: from})
	if err != nil {
		return fmt.Errorf("GetShardIterator: %w", err)
	}
	iter := it.ShardIterator
	var pending []streamRecord
	var firstAt time.Time
	lastSeq := ""
	for iter != nil {
		limit := int32(min(max(p.Mapping.BatchSize-len(pending), 1), 1000))
		out, err := p.Streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(limit)})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var expired *types.ExpiredIteratorException
			if errors.As(err, &expired) {
				// An iterator lives 15 minutes: take a new one after the
				// last record read (a long retry can outlast it).
				in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String(id), ShardIteratorType: from}
				if lastSeq != "" {
					in.ShardIteratorType, in.SequenceNumber = types.ShardIteratorTypeAfterSequenceNumber, aws.String(lastSeq)
				}
				if it, err := p.Streams.GetShardIterator(ctx, in); err == nil {
					iter = it.ShardIterator
					continue
				}
			}
			p.Logs.Event(p.Mapping.Function, "esm", "GetRecords failed: "+err.Error())
			if p.sleep(ctx, time.Second) != nil {
				return nil
			}
			continue
		}
		iter = out.NextShardIterator
		for _, r := range out.Records {
			if r.Dynamodb != nil {
				lastSeq = aws.ToString(r.Dynamodb.SequenceNumber)
			}
			sr, keep := p.admit(r)
			if keep {
				if len(pending) == 0 {
					firstAt = p.now()
				}
				pending = append(pending, sr)
			}
		}
		ready := len(pending) >= p.Mapping.BatchSize || (len(pending) > 0 &&
			(iter == nil || !p.now().Before(firstAt.Add(p.Mapping.BatchingWindow))))
		if ready {
			n := min(len(pending), p.Mapping.BatchSize)
			if err := p.deliver(ctx, arn, pending[:n]); err != nil {
				return nil
			}
			pending = pending[n:]
			if len(pending) > 0 {
				firstAt = p.now()
			}
			continue
		}
		if len(out.Records) == 0 {
			if p.sleep(ctx, p.PollEvery) != nil {
				return nil
			}
		}
	}
	if len(pending) > 0 {
		_ = p.deliver(ctx, arn, pending)
	}
	return nil
}

// streamRecord is one record as the function receives it.
type streamRecord struct {
	seq string
	at  time.Time
	rec events.DynamoDBEventRecord
}

// admit converts a record and applies the record age and the filters.
func (p *Poller) admit(r types.Record) (streamRecord, bool) {
	p.count(func(s *PollerStats) { s.Read++ })
	sr := streamRecord{rec: lambdaRecord(r, p.Local.Region)}
	sr.seq = sr.rec.Change.SequenceNumber
	sr.at = sr.rec.Change.ApproximateCreationDateTime.Time
	if p.tooOld(sr) {
		p.count(func(s *PollerStats) { s.Expired++ })
		return sr, false
	}
	if len(p.filters) == 0 {
		return sr, true
	}
	doc, err := json.Marshal(sr.rec)
	if err != nil {
		return sr, false
	}
	for _, f := range p.filters {
		if f.Match(doc) {
			return sr, true
		}
	}
	p.count(func(s *PollerStats) { s.Filtered++ })
	return sr, false
}

func (p *Poller) tooOld(r streamRecord) bool {
	return p.Mapping.MaxRecordAge > 0 && !r.at.IsZero() && p.now().Sub(r.at) > p.Mapping.MaxRecordAge
}

// deliver invokes the function with batch until it succeeds or is given
// up; it returns an error only when ctx ends.
func (p *Poller) deliver(ctx context.Context, arn string, batch []streamRecord) error {
	type work struct {
		records []streamRecord
		retries int
	}
	queue := []work{{records: batch}}
	for len(queue) > 0 {
		w := queue[0]
		queue = queue[1:]
		var fresh []streamRecord
		for _, r := range w.records {
			if p.tooOld(r) {
				p.count(func(s *PollerStats) { s.Expired++ })
				continue
			}
			fresh = append(fresh, r)
		}
		if len(fresh) == 0 {
			continue
		}
		failedFrom, ok := p.invoke(ctx, arn, fresh)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if ok {
			continue
		}
		rest := fresh
		bisect := false
		switch {
		case failedFrom > 0:
			rest = fresh[failedFrom:]
			p.count(func(s *PollerStats) { s.Partial++ })
		case failedFrom < 0 && p.Mapping.Bisect && len(fresh) > 1:
			bisect = true
		}
		if p.Mapping.MaxRetries >= 0 && w.retries >= p.Mapping.MaxRetries {
			p.count(func(s *PollerStats) { s.Dropped++ })
			p.Logs.Event(p.Mapping.Function, "esm", fmt.Sprintf("gave up a batch of %d records (sequence %s to %s) after %d retries",
				len(rest), rest[0].seq, rest[len(rest)-1].seq, w.retries))
			continue
		}
		p.count(func(s *PollerStats) { s.Retries++ })
		if err := p.sleep(ctx, time.Duration(w.retries+1)*100*time.Millisecond); err != nil {
			return err
		}
		if bisect {
			p.count(func(s *PollerStats) { s.Bisected++ })
			half := len(rest) / 2
			queue = append([]work{{rest[:half], w.retries + 1}, {rest[half:], w.retries + 1}}, queue...)
			continue
		}
		queue = append([]work{{rest, w.retries + 1}}, queue...)
	}
	return nil
}

// invoke sends one batch. ok: the batch succeeded. Otherwise failedFrom is
// the index of the first record to retry (a valid partial response), or -1
// (the whole batch failed: a function error or an invalid response).
func (p *Poller) invoke(ctx context.Context, arn string, batch []streamRecord) (failedFrom int, ok bool) {
	ev := events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, len(batch))}
	for i, r := range batch {
		ev.Records[i] = r.rec
		ev.Records[i].EventSourceArn = arn
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return -1, false
	}
	p.count(func(s *PollerStats) { s.Batches++; s.Records += len(batch) })
	res, err := p.Function.Invoke(ctx, payload)
	if err != nil || res.FunctionError != "" {
		why := res.FunctionError
		if err != nil {
			why = err.Error()
		}
		if ctx.Err() == nil {
			p.Logs.Event(p.Mapping.Function, "esm", fmt.Sprintf("batch of %d records failed: %s", len(batch), why))
		}
		return -1, false
	}
	if !p.Mapping.ReportItemErrors {
		return 0, true
	}
	return partialResponse(res.Payload, batch)
}

// partialResponse reads a batchItemFailures response: success when empty
// or absent, the lowest failed record's index when every identifier names
// a record of the batch, and a failure of the whole batch otherwise.
func partialResponse(payload []byte, batch []streamRecord) (int, bool) {
	var resp struct {
		Failures []struct {
			ItemIdentifier *string `json:"itemIdentifier"`
		} `json:"batchItemFailures"`
	}
	if len(payload) == 0 || string(payload) == "null" {
		return 0, true
	}
	if json.Unmarshal(payload, &resp) != nil {
		return -1, false
	}
	if len(resp.Failures) == 0 {
		return 0, true
	}
	index := map[string]int{}
	for i, r := range batch {
		index[r.seq] = i
	}
	lowest := len(batch)
	for _, f := range resp.Failures {
		if f.ItemIdentifier == nil || *f.ItemIdentifier == "" {
			return -1, false
		}
		i, found := index[*f.ItemIdentifier]
		if !found {
			return -1, false
		}
		lowest = min(lowest, i)
	}
	return lowest, false
}

// lambdaRecord converts a Streams API record to the record Lambda sends.
func lambdaRecord(r types.Record, region string) events.DynamoDBEventRecord {
	out := events.DynamoDBEventRecord{
		AWSRegion:    aws.ToString(r.AwsRegion),
		EventID:      aws.ToString(r.EventID),
		EventName:    string(r.EventName),
		EventSource:  aws.ToString(r.EventSource),
		EventVersion: aws.ToString(r.EventVersion),
	}
	if out.AWSRegion == "" {
		out.AWSRegion = region
	}
	if r.UserIdentity != nil {
		out.UserIdentity = &events.DynamoDBUserIdentity{PrincipalID: aws.ToString(r.UserIdentity.PrincipalId), Type: aws.ToString(r.UserIdentity.Type)}
	}
	if d := r.Dynamodb; d != nil {
		out.Change = events.DynamoDBStreamRecord{
			Keys: attributeMap(d.Keys), NewImage: attributeMap(d.NewImage), OldImage: attributeMap(d.OldImage),
			SequenceNumber: aws.ToString(d.SequenceNumber), SizeBytes: aws.ToInt64(d.SizeBytes),
			StreamViewType: string(d.StreamViewType),
		}
		if d.ApproximateCreationDateTime != nil {
			out.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *d.ApproximateCreationDateTime}
		}
	}
	return out
}

func attributeMap(m map[string]types.AttributeValue) map[string]events.DynamoDBAttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(m))
	for k, v := range m {
		out[k] = attribute(v)
	}
	return out
}

func attribute(v types.AttributeValue) events.DynamoDBAttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *types.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value)
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value)
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute()
	case *types.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value)
	case *types.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value)
	case *types.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value)
	case *types.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = attribute(e)
		}
		return events.NewListAttribute(l)
	case *types.AttributeValueMemberM:
		return events.NewMapAttribute(attributeMap(v.Value))
	}
	return events.NewNullAttribute()
}
