package ddbhttp

import (
	"context"
	"reflect"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamschemas "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/schemas"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	smithy "github.com/aws/smithy-go"
)

// streamsTargetPrefix is the service part of X-Amz-Target for the DynamoDB
// Streams API, which DynamoDB serves at its own endpoint and the handler
// serves beside the DynamoDB API.
const streamsTargetPrefix = "DynamoDBStreams_20120810."

// StreamsBackend is the DynamoDB Streams API with the method signatures of
// *dynamodbstreams.Client. A Backend that also implements it (the embedded
// engine does) gets its Streams operations served.
type StreamsBackend interface {
	ListStreams(ctx context.Context, in *dynamodbstreams.ListStreamsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.ListStreamsOutput, error)
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

type streamsMethod[In, Out any] func(context.Context, *In, ...func(*dynamodbstreams.Options)) (*Out, error)

func bindStreams[In, Out any](m streamsMethod[In, Out]) operation {
	return operation{
		newInput: func() any { return new(In) },
		call: func(ctx context.Context, in any) (any, error) {
			out, err := m(ctx, in.(*In))
			if err != nil {
				return nil, err
			}
			return out, nil
		},
	}
}

// streamsOperations maps the Streams operation names to b's methods (none
// when b does not serve Streams).
func streamsOperations(b Backend) map[string]operation {
	sb, ok := b.(StreamsBackend)
	if !ok {
		return map[string]operation{}
	}
	return map[string]operation{
		"ListStreams":      bindStreams(sb.ListStreams),
		"DescribeStream":   bindStreams(sb.DescribeStream),
		"GetShardIterator": bindStreams(sb.GetShardIterator),
		"GetRecords":       bindStreams(sb.GetRecords),
	}
}

// lookup finds the operation an X-Amz-Target names, in either API.
func (h *Handler) lookup(target string) (string, operation, bool) {
	if name, ok := strings.CutPrefix(target, targetPrefix); ok {
		op, known := h.ops[name]
		return name, op, known
	}
	if name, ok := strings.CutPrefix(target, streamsTargetPrefix); ok {
		op, known := h.streamOps[name]
		return name, op, known
	}
	return "", operation{}, false
}

var streamsAttributeValueType = reflect.TypeFor[streamtypes.AttributeValue]()

// streamsSchemas are the Streams shapes whose wire names differ from their
// Go field names: Record's members are spelled in lower case ("eventID",
// "dynamodb"), and the modeled errors' "message".
func streamsSchemas(m map[reflect.Type]*smithy.Schema) {
	m[reflect.TypeFor[streamtypes.Record]()] = streamschemas.Record
	for _, e := range dynamodbstreams.TypeRegistry.Entries {
		if e == nil || e.New == nil || e.Schema == nil {
			continue
		}
		t := reflect.TypeOf(e.New())
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		m[t] = e.Schema
	}
}

// streamsAttributeValue writes the Streams API's AttributeValue union (the
// same wire form as DynamoDB's).
func (e *encoder) streamsAttributeValue(v reflect.Value) {
	if v.IsNil() {
		e.buf = append(e.buf, "null"...)
		return
	}
	switch av := v.Interface().(type) {
	case *streamtypes.AttributeValueMemberS:
		e.buf = append(e.buf, `{"S":`...)
		e.str(av.Value)
	case *streamtypes.AttributeValueMemberN:
		e.buf = append(e.buf, `{"N":`...)
		e.str(av.Value)
	case *streamtypes.AttributeValueMemberB:
		e.buf = append(e.buf, `{"B":`...)
		e.blob(av.Value)
	case *streamtypes.AttributeValueMemberBOOL:
		e.buf = append(e.buf, `{"BOOL":`...)
		e.buf = appendBool(e.buf, av.Value)
	case *streamtypes.AttributeValueMemberNULL:
		e.buf = append(e.buf, `{"NULL":`...)
		e.buf = appendBool(e.buf, av.Value)
	case *streamtypes.AttributeValueMemberM:
		e.buf = append(e.buf, `{"M":`...)
		e.value(reflect.ValueOf(av.Value))
	case *streamtypes.AttributeValueMemberL:
		e.buf = append(e.buf, `{"L":`...)
		e.value(reflect.ValueOf(av.Value))
	case *streamtypes.AttributeValueMemberSS:
		e.buf = append(e.buf, `{"SS":`...)
		e.value(reflect.ValueOf(av.Value))
	case *streamtypes.AttributeValueMemberNS:
		e.buf = append(e.buf, `{"NS":`...)
		e.value(reflect.ValueOf(av.Value))
	case *streamtypes.AttributeValueMemberBS:
		e.buf = append(e.buf, `{"BS":`...)
		e.value(reflect.ValueOf(av.Value))
	default:
		e.buf = append(e.buf, "{}"...)
		return
	}
	e.buf = append(e.buf, '}')
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}
