package ddblocal_test

import (
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

// trimHorizon returns a TRIM_HORIZON iterator of the table's stream.
func (b *testBundle) trimHorizon(t *testing.T) string {
	t.Helper()
	arn := b.db.LatestStreamArn(tbl)
	require.NotEmpty(t, arn)
	d, err := b.db.DescribeStream(b.ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	require.NoError(t, err)
	it, err := b.db.GetShardIterator(b.ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn),
		ShardId: d.StreamDescription.Shards[0].ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
	require.NoError(t, err)
	return aws.ToString(it.ShardIterator)
}

func TestStreamIteratorExpiresAfter15Minutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, key("a", "1"))
	it := b.trimHorizon(t)
	b.clock.Advance(ddblocal.IteratorLifetime)
	out, err := b.db.GetRecords(b.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)})
	require.NoError(t, err, "usable for 15 minutes")
	require.Len(t, out.Records, 1)
	b.clock.Advance(time.Millisecond)
	_, err = b.db.GetRecords(b.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)})
	var expired *stypes.ExpiredIteratorException
	require.ErrorAs(t, err, &expired)
	// The next iterator counts from the GetRecords that returned it.
	next := aws.ToString(out.NextShardIterator)
	_, err = b.db.GetRecords(b.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(next)})
	require.NoError(t, err)
}

func TestStreamRetentionTrims(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, key("old", "1"))
	first, err := b.db.GetRecords(b.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(b.trimHorizon(t))})
	require.NoError(t, err)
	oldSeq := first.Records[0].Dynamodb.SequenceNumber
	b.clock.Advance(24*time.Hour + time.Second)
	b.put(t, key("new", "1"))
	arn := b.db.LatestStreamArn(tbl)
	d, err := b.db.DescribeStream(b.ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	require.NoError(t, err)
	_, err = b.db.GetShardIterator(b.ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: d.StreamDescription.Shards[0].ShardId,
		ShardIteratorType: stypes.ShardIteratorTypeAtSequenceNumber, SequenceNumber: oldSeq})
	var trimmed *stypes.TrimmedDataAccessException
	require.ErrorAs(t, err, &trimmed, "a sequence number past the 24 hours")
	out, err := b.db.GetRecords(b.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(b.trimHorizon(t))})
	require.NoError(t, err)
	require.Len(t, out.Records, 1, "only the record within 24 hours")
	require.Equal(t, &stypes.AttributeValueMemberS{Value: "new"}, out.Records[0].Dynamodb.Keys["pk"])
}

func TestStreamIteratorBeforeTrimHorizon(t *testing.T) {
	t.Parallel()
	b := setup(t, ddblocal.WithChangeLimit(1))
	b.put(t, key("a", "1"))
	it := b.trimHorizon(t)
	b.put(t, key("b", "1"))
	_, err := b.db.GetRecords(b.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)})
	var trimmed *stypes.TrimmedDataAccessException
	require.ErrorAs(t, err, &trimmed, "the record the iterator pointed to was trimmed")
}

func TestStreamTTLDeletionNamesTheService(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.db.UpdateTimeToLive(b.ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(tbl), TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)}})
	require.NoError(t, err)
	b.put(t, map[string]types.AttributeValue{"pk": s("a"), "sk": s("1"), "ttl": n(fmt.Sprint(epoch.Unix() + 5))})
	_, err = b.db.DeleteItem(b.ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: key("a", "1")})
	require.NoError(t, err)
	b.put(t, map[string]types.AttributeValue{"pk": s("a"), "sk": s("1"), "ttl": n(fmt.Sprint(epoch.Unix() + 5))})
	b.clock.Advance(time.Minute)
	require.Equal(t, 1, b.db.SweepTTL())
	out, err := b.db.GetRecords(b.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(b.trimHorizon(t))})
	require.NoError(t, err)
	require.Len(t, out.Records, 4)
	require.Nil(t, out.Records[1].UserIdentity, "a user's delete")
	ttl := out.Records[3]
	require.Equal(t, stypes.OperationTypeRemove, ttl.EventName)
	require.Equal(t, &stypes.Identity{PrincipalId: aws.String("dynamodb.amazonaws.com"), Type: aws.String("Service")}, ttl.UserIdentity)
	require.Equal(t, epoch.Add(time.Minute), *ttl.Dynamodb.ApproximateCreationDateTime)
}

func TestStreamOfDeletedTableStaysReadable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, key("a", "1"))
	arn := b.db.LatestStreamArn(tbl)
	it := b.trimHorizon(t)
	_, err := b.db.DeleteTable(b.ctx, &dynamodb.DeleteTableInput{TableName: aws.String(tbl)})
	require.NoError(t, err)
	d, err := b.db.DescribeStream(b.ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	require.NoError(t, err)
	require.Equal(t, stypes.StreamStatusDisabled, d.StreamDescription.StreamStatus)
	out, err := b.db.GetRecords(b.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)})
	require.NoError(t, err)
	require.Len(t, out.Records, 1)
	require.Nil(t, out.NextShardIterator, "the end of a closed shard")
	b.clock.Advance(24*time.Hour + time.Second)
	_, err = b.db.DescribeStream(b.ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	var nf *stypes.ResourceNotFoundException
	require.ErrorAs(t, err, &nf, "gone after the retention")
	ls, err := b.db.ListStreams(b.ctx, &dynamodbstreams.ListStreamsInput{})
	require.NoError(t, err)
	require.Empty(t, ls.Streams)
}

func TestStreamValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	arn := b.db.LatestStreamArn(tbl)
	d, err := b.db.DescribeStream(b.ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	require.NoError(t, err)
	shard := d.StreamDescription.Shards[0].ShardId
	_, err = b.db.GetShardIterator(b.ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: shard, ShardIteratorType: stypes.ShardIteratorTypeAtSequenceNumber})
	require.Equal(t, "ValidationException", apiCode(err), "AT_SEQUENCE_NUMBER needs a sequence number")
	_, err = b.db.GetShardIterator(b.ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: shard, ShardIteratorType: "SOMEWHERE"})
	require.Equal(t, "ValidationException", apiCode(err))
	_, err = b.db.GetRecords(b.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(b.trimHorizon(t)), Limit: aws.Int32(1001)})
	require.Equal(t, "ValidationException", apiCode(err))
	it := b.trimHorizon(t)
	_, err = b.db.GetRecords(b.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it[:len(it)-2] + "xx")})
	require.Equal(t, "ValidationException", apiCode(err), "a mangled iterator")
	_, err = b.db.ListStreams(b.ctx, &dynamodbstreams.ListStreamsInput{Limit: aws.Int32(0)})
	require.Equal(t, "ValidationException", apiCode(err))
}
