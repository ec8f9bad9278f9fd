package ddbhttp

import (
	"context"
	"errors"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

var fuzzSeeds = []string{
	``,
	`{}`,
	`null`,
	`[]`,
	`{"TableName":"t","Item":{"pk":{"S":"a"},"n":{"N":"1"},"b":{"B":"AAE="},"ok":{"BOOL":true},"z":{"NULL":true}}}`,
	`{"TableName":"t","Item":{"m":{"M":{"l":{"L":[{"SS":["a"]},{"NS":["1"]},{"BS":["AA=="]}]}}}}}`,
	`{"TableName":"t","Key":{"pk":{"S":"a","N":"1"}}}`,
	`{"TableName":"t","Key":{"pk":{}}}`,
	`{"TableName":5}`,
	`{"TableName":"t","Limit":1e99}`,
	`{"TableName":"t","Limit":-0}`,
	`{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"a"}}}},{"ConditionCheck":{"Key":{"pk":{"S":"a"}},"ConditionExpression":"x"}}],"ClientRequestToken":"x"}`,
	`{"RequestItems":{"t":{"Keys":[{"pk":{"S":"a"}}],"ConsistentRead":true}}}`,
	`{"RequestItems":{"t":[{"PutRequest":{"Item":{"pk":{"S":"a"}}}}]}}`,
	`{"TableName":"t","Select":"COUNT","Segment":0,"TotalSegments":2,"ReturnConsumedCapacity":"TOTAL"}`,
	`{"TableName":"t","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"ProvisionedThroughput":{"ReadCapacityUnits":5,"WriteCapacityUnits":5}}`,
	`{"TableName":"t","Item":{"s":{"S":"\u00e9\ud83d\ude00\\\"\n"}}} `,
	`{"a":` + strings.Repeat(`[`, 200),
}

// fuzzOps are the operations whose inputs the fuzzer decodes, in a fixed
// order so that a corpus entry means the same thing on every run.
func fuzzOps() ([]string, map[string]operation) {
	ops := operations(answerEmpty{})
	names := make([]string, 0, len(ops))
	for name := range ops {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, ops
}

// FuzzDecode feeds arbitrary bodies to every operation's request decoder.
// It must never panic; it must refuse only with SerializationException or
// ValidationException; and what it accepts must survive a round trip through
// the encoder unchanged (the decoder and the encoder agree on every member).
// The same body through the whole handler must answer with a CRC32 header.
func FuzzDecode(f *testing.F) {
	names, ops := fuzzOps()
	for i, s := range fuzzSeeds {
		f.Add(uint8(i), []byte(s))
	}
	h := NewHandler(answerEmpty{})
	f.Fuzz(func(t *testing.T, opIndex uint8, body []byte) {
		name := names[int(opIndex)%len(names)]
		in := ops[name].newInput()
		err := decodeRequest(body, in)
		if err != nil {
			var re *requestError
			if !errors.As(err, &re) || (re.code != codeSerialization && re.code != codeValidation) {
				t.Fatalf("decode refused with %v, want a SerializationException or ValidationException", err)
			}
		} else {
			again := ops[name].newInput()
			if err := decodeRequest(encodeShape(in), again); err != nil {
				t.Fatalf("re-decoding the encoded input failed: %v", err)
			}
			if !reflect.DeepEqual(in, again) {
				t.Fatalf("round trip changed the input:\n%#v\n%#v", in, again)
			}
		}

		req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/", strings.NewReader(string(body)))
		req.Header.Set("X-Amz-Target", targetPrefix+name)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if got, want := rec.Header().Get("X-Amz-Crc32"), strconv.FormatUint(uint64(crc32.ChecksumIEEE(rec.Body.Bytes())), 10); got != want {
			t.Fatalf("X-Amz-Crc32 %s, want %s", got, want)
		}
		if (err == nil) != (rec.Code == http.StatusOK) {
			t.Fatalf("decode error %v but handler answered %d: %s", err, rec.Code, rec.Body)
		}
	})
}

// answerEmpty is a Backend whose every operation succeeds with an empty
// output.
type answerEmpty struct{}

func (answerEmpty) CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	return &dynamodb.CreateTableOutput{}, nil
}

func (answerEmpty) DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return &dynamodb.DescribeTableOutput{}, nil
}

func (answerEmpty) DeleteTable(context.Context, *dynamodb.DeleteTableInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error) {
	return &dynamodb.DeleteTableOutput{}, nil
}

func (answerEmpty) ListTables(context.Context, *dynamodb.ListTablesInput, ...func(*dynamodb.Options)) (*dynamodb.ListTablesOutput, error) {
	return &dynamodb.ListTablesOutput{}, nil
}

func (answerEmpty) UpdateTimeToLive(context.Context, *dynamodb.UpdateTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	return &dynamodb.UpdateTimeToLiveOutput{}, nil
}

func (answerEmpty) DescribeTimeToLive(context.Context, *dynamodb.DescribeTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	return &dynamodb.DescribeTimeToLiveOutput{}, nil
}

func (answerEmpty) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return &dynamodb.PutItemOutput{}, nil
}

func (answerEmpty) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, nil
}

func (answerEmpty) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return &dynamodb.UpdateItemOutput{}, nil
}

func (answerEmpty) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return &dynamodb.DeleteItemOutput{}, nil
}

func (answerEmpty) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return &dynamodb.QueryOutput{}, nil
}

func (answerEmpty) Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return &dynamodb.ScanOutput{}, nil
}

func (answerEmpty) BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return &dynamodb.BatchGetItemOutput{}, nil
}

func (answerEmpty) BatchWriteItem(context.Context, *dynamodb.BatchWriteItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	return &dynamodb.BatchWriteItemOutput{}, nil
}

func (answerEmpty) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

func (answerEmpty) TransactGetItems(context.Context, *dynamodb.TransactGetItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error) {
	return &dynamodb.TransactGetItemsOutput{}, nil
}
