package paritytest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
)

// StreamsClient is the DynamoDB Streams API the streams cases drive.
type StreamsClient = ddblocal.StreamsAPI

// Clients is one DynamoDB client and the Streams client of the same
// endpoint.
type Clients struct {
	DB      Client
	Streams StreamsClient
}

const (
	docStreams       = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Streams.html"
	docGetRecords    = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_GetRecords.html"
	docShardIterator = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_GetShardIterator.html"
	docStreamRecord  = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_StreamRecord.html"
)

// ExerciseStreams runs the DynamoDB Streams cases against the clients made
// by newClients (once per case).
func ExerciseStreams(ctx context.Context, t *testing.T, newClients func(t *testing.T) Clients) {
	for _, c := range streamCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			t.Logf("follows %s", c.doc)
			c.run(ctx, t, newClients)
		})
	}
}

type streamCase struct {
	name string
	doc  string
	run  func(ctx context.Context, t *testing.T, nc func(*testing.T) Clients)
}

// streamBundle is a case's table with a stream.
type streamBundle struct {
	*bundle
	streams StreamsClient
	arn     string
}

// setupStream makes a hash-and-range table (pk S, sk S) with a stream of the
// given view type.
func setupStream(ctx context.Context, t *testing.T, nc func(*testing.T) Clients, view types.StreamViewType) *streamBundle {
	t.Helper()
	cs := nc(t)
	name := fmt.Sprintf("parity_%s_%d", runID, tableCount.Add(1))
	_, err := cs.DB.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{def("pk", "S"), def("sk", "S")},
		KeySchema:            []types.KeySchemaElement{hash("pk"), rng("sk")},
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: view},
	})
	require.NoError(t, err)
	w := dynamodb.NewTableExistsWaiter(cs.DB, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 500 * time.Millisecond })
	require.NoError(t, w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Minute))
	t.Cleanup(func() {
		_, _ = cs.DB.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	d, err := cs.DB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	require.NoError(t, err)
	require.NotNil(t, d.Table.LatestStreamArn, "DescribeTable names the stream")
	require.NotNil(t, d.Table.LatestStreamLabel)
	require.Equal(t, aws.ToString(d.Table.TableArn)+"/stream/"+aws.ToString(d.Table.LatestStreamLabel), aws.ToString(d.Table.LatestStreamArn))
	return &streamBundle{bundle: &bundle{ctx: ctx, client: cs.DB, table: name}, streams: cs.Streams, arn: aws.ToString(d.Table.LatestStreamArn)}
}

// shard returns the stream's description and its (first) shard's id.
func (b *streamBundle) shard(t *testing.T) (*stypes.StreamDescription, string) {
	t.Helper()
	out, err := b.streams.DescribeStream(b.ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(b.arn)})
	require.NoError(t, err)
	require.NotEmpty(t, out.StreamDescription.Shards)
	return out.StreamDescription, aws.ToString(out.StreamDescription.Shards[0].ShardId)
}

func (b *streamBundle) iterator(t *testing.T, typ stypes.ShardIteratorType, seq string) string {
	t.Helper()
	_, shard := b.shard(t)
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(b.arn), ShardId: aws.String(shard), ShardIteratorType: typ}
	if seq != "" {
		in.SequenceNumber = aws.String(seq)
	}
	out, err := b.streams.GetShardIterator(b.ctx, in)
	require.NoError(t, err)
	require.NotNil(t, out.ShardIterator)
	return aws.ToString(out.ShardIterator)
}

// readAll reads from it until want records came (AWS delivers records
// within a second or so; the engine at once).
func (b *streamBundle) readAll(t *testing.T, it string, want int, limit int32) []stypes.Record {
	t.Helper()
	var got []stypes.Record
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < want && it != "" {
		in := &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)}
		if limit > 0 {
			in.Limit = aws.Int32(limit)
		}
		out, err := b.streams.GetRecords(b.ctx, in)
		require.NoError(t, err)
		if limit > 0 {
			require.LessOrEqual(t, len(out.Records), int(limit), "Limit bounds the records")
		}
		got = append(got, out.Records...)
		it = aws.ToString(out.NextShardIterator)
		if len(out.Records) == 0 {
			require.True(t, time.Now().Before(deadline), "records never came: %d of %d", len(got), want)
			time.Sleep(200 * time.Millisecond)
		}
	}
	return got
}

func sitem(m map[string]stypes.AttributeValue) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		switch v := v.(type) {
		case *stypes.AttributeValueMemberS:
			out[k] = "S:" + v.Value
		case *stypes.AttributeValueMemberN:
			out[k] = "N:" + v.Value
		default:
			out[k] = fmt.Sprintf("%T", v)
		}
	}
	return out
}

func streamCases() []streamCase {
	return []streamCase{
		// INSERT, MODIFY and REMOVE records in order, with both images,
		// increasing sequence numbers, SizeBytes, the creation time, and
		// the stream record's fixed members.
		{"StreamRecordsFromTrimHorizon", docStreams, func(ctx context.Context, t *testing.T, nc func(*testing.T) Clients) {
			b := setupStream(ctx, t, nc, types.StreamViewTypeNewAndOldImages)
			before := time.Now().Add(-time.Minute)
			b.put(t, item{"pk": s("a"), "sk": s("1"), "v": n("1")})
			_, err := b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.table), Key: key("a", "1"),
				UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: item{":v": n("2")}})
			require.NoError(t, err)
			_, err = b.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(b.table), Key: key("a", "1")})
			require.NoError(t, err)

			desc, _ := b.shard(t)
			require.Equal(t, stypes.StreamStatusEnabled, desc.StreamStatus)
			require.Equal(t, stypes.StreamViewTypeNewAndOldImages, desc.StreamViewType)
			require.Equal(t, b.table, aws.ToString(desc.TableName))
			require.Len(t, desc.KeySchema, 2)
			require.NotNil(t, desc.Shards[0].SequenceNumberRange.StartingSequenceNumber)

			recs := b.readAll(t, b.iterator(t, stypes.ShardIteratorTypeTrimHorizon, ""), 3, 0)
			require.Len(t, recs, 3)
			events := []stypes.OperationType{stypes.OperationTypeInsert, stypes.OperationTypeModify, stypes.OperationTypeRemove}
			prev := ""
			for i, r := range recs {
				require.Equal(t, events[i], r.EventName)
				require.Equal(t, "aws:dynamodb", aws.ToString(r.EventSource))
				require.Equal(t, "1.1", aws.ToString(r.EventVersion))
				require.NotEmpty(t, aws.ToString(r.EventID))
				require.NotEmpty(t, aws.ToString(r.AwsRegion))
				require.Nil(t, r.UserIdentity, "a user's write has no userIdentity")
				sr := r.Dynamodb
				require.Equal(t, map[string]string{"pk": "S:a", "sk": "S:1"}, sitem(sr.Keys))
				require.Equal(t, stypes.StreamViewTypeNewAndOldImages, sr.StreamViewType)
				require.Positive(t, aws.ToInt64(sr.SizeBytes))
				require.NotNil(t, sr.ApproximateCreationDateTime)
				require.True(t, sr.ApproximateCreationDateTime.After(before), "ApproximateCreationDateTime is the write's time")
				seq := aws.ToString(sr.SequenceNumber)
				require.GreaterOrEqual(t, len(seq), 21)
				require.True(t, len(seq) > len(prev) || (len(seq) == len(prev) && seq > prev), "sequence numbers increase: %s after %s", seq, prev)
				prev = seq
			}
			require.Nil(t, recs[0].Dynamodb.OldImage)
			require.Equal(t, map[string]string{"pk": "S:a", "sk": "S:1", "v": "N:1"}, sitem(recs[0].Dynamodb.NewImage))
			require.Equal(t, map[string]string{"pk": "S:a", "sk": "S:1", "v": "N:1"}, sitem(recs[1].Dynamodb.OldImage))
			require.Equal(t, map[string]string{"pk": "S:a", "sk": "S:1", "v": "N:2"}, sitem(recs[1].Dynamodb.NewImage))
			require.Equal(t, map[string]string{"pk": "S:a", "sk": "S:1", "v": "N:2"}, sitem(recs[2].Dynamodb.OldImage))
			require.Nil(t, recs[2].Dynamodb.NewImage)
			// SizeBytes counts the keys and the images the record carries.
			require.Greater(t, aws.ToInt64(recs[1].Dynamodb.SizeBytes), aws.ToInt64(recs[0].Dynamodb.SizeBytes))
		}},
		// StreamViewType decides which images a record carries.
		{"StreamViewTypes", docStreamRecord, func(ctx context.Context, t *testing.T, nc func(*testing.T) Clients) {
			for _, view := range []types.StreamViewType{types.StreamViewTypeKeysOnly, types.StreamViewTypeNewImage, types.StreamViewTypeOldImage} {
				b := setupStream(ctx, t, nc, view)
				b.put(t, item{"pk": s("a"), "sk": s("1"), "v": n("1")})
				b.put(t, item{"pk": s("a"), "sk": s("1"), "v": n("2")})
				recs := b.readAll(t, b.iterator(t, stypes.ShardIteratorTypeTrimHorizon, ""), 2, 0)
				require.Len(t, recs, 2)
				mod := recs[1].Dynamodb
				require.Equal(t, stypes.StreamViewType(view), mod.StreamViewType)
				require.Equal(t, map[string]string{"pk": "S:a", "sk": "S:1"}, sitem(mod.Keys))
				switch view {
				case types.StreamViewTypeKeysOnly:
					require.Nil(t, mod.NewImage)
					require.Nil(t, mod.OldImage)
				case types.StreamViewTypeNewImage:
					require.Equal(t, "N:2", sitem(mod.NewImage)["v"])
					require.Nil(t, mod.OldImage)
				case types.StreamViewTypeOldImage:
					require.Equal(t, "N:1", sitem(mod.OldImage)["v"])
					require.Nil(t, mod.NewImage)
				}
			}
		}},
		// A write that changes nothing writes no record.
		{"StreamSkipsNoOpWrites", docStreams, func(ctx context.Context, t *testing.T, nc func(*testing.T) Clients) {
			b := setupStream(ctx, t, nc, types.StreamViewTypeKeysOnly)
			b.put(t, item{"pk": s("a"), "sk": s("1"), "v": n("1")})
			b.put(t, item{"pk": s("a"), "sk": s("1"), "v": n("1")})
			b.put(t, item{"pk": s("b"), "sk": s("1")})
			recs := b.readAll(t, b.iterator(t, stypes.ShardIteratorTypeTrimHorizon, ""), 2, 0)
			require.Len(t, recs, 2)
			require.Equal(t, "S:b", sitem(recs[1].Dynamodb.Keys)["pk"])
		}},
		// Limit, AT_SEQUENCE_NUMBER, AFTER_SEQUENCE_NUMBER and LATEST.
		{"ShardIteratorTypes", docShardIterator, func(ctx context.Context, t *testing.T, nc func(*testing.T) Clients) {
			b := setupStream(ctx, t, nc, types.StreamViewTypeKeysOnly)
			for i := range 5 {
				b.put(t, item{"pk": s(fmt.Sprint(i)), "sk": s("1")})
			}
			all := b.readAll(t, b.iterator(t, stypes.ShardIteratorTypeTrimHorizon, ""), 5, 2)
			require.Len(t, all, 5)
			for i, r := range all {
				require.Equal(t, "S:"+fmt.Sprint(i), sitem(r.Dynamodb.Keys)["pk"])
			}
			third := aws.ToString(all[2].Dynamodb.SequenceNumber)
			at := b.readAll(t, b.iterator(t, stypes.ShardIteratorTypeAtSequenceNumber, third), 3, 0)
			require.Equal(t, third, aws.ToString(at[0].Dynamodb.SequenceNumber))
			after := b.readAll(t, b.iterator(t, stypes.ShardIteratorTypeAfterSequenceNumber, third), 2, 0)
			require.Equal(t, aws.ToString(all[3].Dynamodb.SequenceNumber), aws.ToString(after[0].Dynamodb.SequenceNumber))

			latest := b.iterator(t, stypes.ShardIteratorTypeLatest, "")
			out, err := b.streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(latest)})
			require.NoError(t, err)
			require.Empty(t, out.Records, "LATEST starts after the newest record")
			require.NotNil(t, out.NextShardIterator, "an open shard always has a next iterator")
			b.put(t, item{"pk": s("new"), "sk": s("1")})
			recs := b.readAll(t, aws.ToString(out.NextShardIterator), 1, 0)
			require.Equal(t, "S:new", sitem(recs[0].Dynamodb.Keys)["pk"])
		}},
		// ListStreams finds the stream by table; disabling the stream closes
		// it (DISABLED, an ending sequence number, no iterator past its
		// end); enabling again makes a new stream.
		{"StreamDisableAndReenable", docStreams, func(ctx context.Context, t *testing.T, nc func(*testing.T) Clients) {
			b := setupStream(ctx, t, nc, types.StreamViewTypeKeysOnly)
			ls, err := b.streams.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String(b.table)})
			require.NoError(t, err)
			require.Len(t, ls.Streams, 1)
			require.Equal(t, b.arn, aws.ToString(ls.Streams[0].StreamArn))
			require.Equal(t, b.table, aws.ToString(ls.Streams[0].TableName))
			b.put(t, item{"pk": s("a"), "sk": s("1")})
			first := b.readAll(t, b.iterator(t, stypes.ShardIteratorTypeTrimHorizon, ""), 1, 0)
			require.Len(t, first, 1)

			_, err = b.client.(interface {
				UpdateTable(context.Context, *dynamodb.UpdateTableInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
			}).UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(b.table), StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(false)}})
			require.NoError(t, err)
			eventually(t, func() bool {
				desc, _ := b.shard(t)
				return desc.StreamStatus == stypes.StreamStatusDisabled && desc.Shards[0].SequenceNumberRange.EndingSequenceNumber != nil
			})
			it := b.iterator(t, stypes.ShardIteratorTypeTrimHorizon, "")
			for it != "" {
				out, err := b.streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)})
				require.NoError(t, err)
				it = aws.ToString(out.NextShardIterator)
			}

			w := dynamodb.NewTableExistsWaiter(b.client, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 500 * time.Millisecond })
			require.NoError(t, w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(b.table)}, 5*time.Minute))
			_, err = b.client.(interface {
				UpdateTable(context.Context, *dynamodb.UpdateTableInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
			}).UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(b.table), StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage}})
			require.NoError(t, err)
			d, err := b.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(b.table)})
			require.NoError(t, err)
			require.NotEqual(t, b.arn, aws.ToString(d.Table.LatestStreamArn), "a new stream")
			ls, err = b.streams.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String(b.table)})
			require.NoError(t, err)
			require.Len(t, ls.Streams, 2, "the disabled stream is still listed")
		}},
		// Unknown streams and mangled iterators are refused.
		{"StreamErrors", docGetRecords, func(ctx context.Context, t *testing.T, nc func(*testing.T) Clients) {
			b := setupStream(ctx, t, nc, types.StreamViewTypeKeysOnly)
			_, err := b.streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(b.arn[:len(b.arn)-3] + "999")})
			requireAPIError(t, err, "ResourceNotFoundException", "")
			_, err = b.streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(b.arn),
				ShardId: aws.String("shardId-00000000000000000000-00000000"), ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
			requireAPIError(t, err, "ResourceNotFoundException", "")
			_, err = b.streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(b.arn + "|1|AAAA")})
			require.Error(t, err)
			// A StreamArn that is not a stream ARN is a ValidationException,
			// a well-formed one of no stream ResourceNotFound (above); the
			// AWS SDK for JavaScript's integration test matches "Invalid
			// StreamArn"; Alternator's test_describe_nonexistent_stream,
			// test_get_shard_iterator and
			// test_list_streams_with_nonexistent_last_stream (recorded
			// against DynamoDB) check the type.
			const bogus = "sdfadfsdfnlfkajakfgjalksfgklasjklasdjfklasdfasdfgasf"
			_, err = b.streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(bogus)})
			requireAPIError(t, err, "ValidationException", "Invalid StreamArn")
			d, err := b.streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(b.arn)})
			require.NoError(t, err)
			shard := d.StreamDescription.Shards[0]
			_, err = b.streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(bogus), ShardId: shard.ShardId, ShardIteratorType: stypes.ShardIteratorTypeLatest})
			requireAPIError(t, err, "ValidationException", "Invalid StreamArn")
			_, err = b.streams.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String(b.table), ExclusiveStartStreamArn: aws.String(bogus)})
			requireAPIError(t, err, "ValidationException", "Invalid StreamArn")
			// A ShardFilter needs a known Type and a ShardId (Alternator's
			// test_stream_shard_filtering_*).
			for _, f := range []stypes.ShardFilter{{ShardId: shard.ShardId, Type: "foo"}, {ShardId: shard.ShardId}, {Type: stypes.ShardFilterTypeChildShards}, {ShardId: aws.String("qwerty"), Type: stypes.ShardFilterTypeChildShards}} {
				_, err = b.streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(b.arn), ShardFilter: &f})
				requireAPIError(t, err, "ValidationException", "shardFilter.")
			}
			c, err := b.streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(b.arn), ShardFilter: &stypes.ShardFilter{ShardId: shard.ShardId, Type: stypes.ShardFilterTypeChildShards}})
			require.NoError(t, err)
			require.Empty(t, c.StreamDescription.Shards, "the shard has no children")
			// TRIM_HORIZON and LATEST take no SequenceNumber (Alternator's
			// test_get_shard_iterator; AWS's text is not established).
			for _, typ := range []stypes.ShardIteratorType{stypes.ShardIteratorTypeTrimHorizon, stypes.ShardIteratorTypeLatest} {
				_, err = b.streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(b.arn), ShardId: shard.ShardId,
					ShardIteratorType: typ, SequenceNumber: shard.SequenceNumberRange.StartingSequenceNumber})
				requireAPIError(t, err, "ValidationException", "")
			}
			// Disabling a stream the table does not have (ACK controller's
			// probes, against DynamoDB), and an unknown StreamViewType
			// (Alternator's test_create_streams_wrong_type; the enum's order
			// in AWS's text is not established).
			upd := b.client.(interface {
				UpdateTable(context.Context, *dynamodb.UpdateTableInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
			})
			_, err = upd.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(b.table), StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(false)}})
			require.NoError(t, err)
			w := dynamodb.NewTableExistsWaiter(b.client, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 500 * time.Millisecond })
			require.NoError(t, w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(b.table)}, 5*time.Minute))
			_, err = upd.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(b.table), StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(false)}})
			requireAPIError(t, err, "ValidationException", "Table has no stream to disable: TableName: "+b.table)
			_, err = upd.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(b.table), StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: "Fisk"}})
			requireAPIError(t, err, "ValidationException", "1 validation error detected: Value 'Fisk' at 'streamSpecification.streamViewType' failed to satisfy constraint: Member must satisfy enum value set")
		}},
	}
}
