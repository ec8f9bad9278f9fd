package ddbhttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"hash/crc32"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
)

// rawResponse is an HTTP answer with its body parsed as a DynamoDB error.
type rawResponse struct {
	status  int
	header  http.Header
	body    []byte
	errType string
	message string
}

// post sends a raw request, as a tool that does not use an AWS SDK would.
func post(t *testing.T, url, target, body string, hdr map[string]string) rawResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20261129/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date;x-amz-target, Signature=deadbeef")
	if target != "" {
		req.Header.Set("X-Amz-Target", target)
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) rawResponse {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r := rawResponse{status: resp.StatusCode, header: resp.Header, body: b}
	var e struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &e) == nil {
		r.errType, r.message = e.Type, e.Message
	}
	return r
}

// requireDynamoDBHeaders checks what every response carries.
func requireDynamoDBHeaders(t *testing.T, r rawResponse) {
	t.Helper()
	require.Equal(t, strconv.FormatUint(uint64(crc32.ChecksumIEEE(r.body)), 10), r.header.Get("X-Amz-Crc32"), "X-Amz-Crc32 must be the CRC32 of the body")
	require.NotEmpty(t, r.header.Get("x-amzn-RequestId"))
	require.Equal(t, strconv.Itoa(len(r.body)), r.header.Get("Content-Length"))
}

func TestMalformedRequests(t *testing.T) {
	t.Parallel()
	const (
		serialization = "com.amazon.coral.service#SerializationException"
		unknownOp     = "com.amazon.coral.service#UnknownOperationException"
		validation    = "com.amazon.coral.validate#ValidationException"
	)
	tests := []struct {
		name    string
		target  string
		body    string
		status  int
		errType string
		message string // a substring of the message, when it matters
	}{
		{"TruncatedJSON", "DynamoDB_20120810.PutItem", `{"TableName":`, 400, serialization, ""},
		{"NotJSON", "DynamoDB_20120810.PutItem", `TableName=t`, 400, serialization, ""},
		{"TrailingData", "DynamoDB_20120810.PutItem", `{"TableName":"t"} {}`, 400, serialization, ""},
		{"TopLevelList", "DynamoDB_20120810.PutItem", `[]`, 400, serialization, ""},
		{"TopLevelString", "DynamoDB_20120810.GetItem", `"t"`, 400, serialization, ""},
		{"TopLevelNull", "DynamoDB_20120810.GetItem", `null`, 400, serialization, ""},
		{"UnknownOperation", "DynamoDB_20120810.Frobnicate", `{}`, 400, unknownOp, ""},
		{"UnsupportedOperation", "DynamoDB_20120810.RestoreTableFromBackup", `{}`, 400, unknownOp, ""},
		{"MissingTarget", "", `{}`, 400, unknownOp, "X-Amz-Target"},
		{"OtherAPIVersion", "DynamoDB_20111205.GetItem", `{}`, 400, unknownOp, ""},
		{"OtherService", "DynamoDBStreams_20120810.GetRecords", `{}`, 400, unknownOp, ""},
		{"NoOperationName", "DynamoDB_20120810.", `{}`, 400, unknownOp, ""},
		{"TableNameNumber", "DynamoDB_20120810.GetItem", `{"TableName":5}`, 400, serialization, "TableName"},
		{"TableNameObject", "DynamoDB_20120810.GetItem", `{"TableName":{}}`, 400, serialization, "TableName"},
		{"LimitString", "DynamoDB_20120810.Query", `{"TableName":"t","Limit":"10"}`, 400, serialization, "Limit"},
		{"LimitFraction", "DynamoDB_20120810.Query", `{"TableName":"t","Limit":1.5}`, 400, serialization, "Limit"},
		{"LimitOverflow", "DynamoDB_20120810.Query", `{"TableName":"t","Limit":99999999999}`, 400, serialization, "Limit"},
		{"ConsistentReadString", "DynamoDB_20120810.GetItem", `{"TableName":"t","ConsistentRead":"true"}`, 400, serialization, "ConsistentRead"},
		{"ItemList", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":[]}`, 400, serialization, "Item"},
		{"AttributeNotObject", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"pk":"a"}}`, 400, serialization, "Item.pk"},
		{"StringAttributeNumber", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"pk":{"S":1}}}`, 400, serialization, "Item.pk.S"},
		{"NumberAttributeNumber", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"pk":{"N":1}}}`, 400, serialization, "Item.pk.N"},
		{"BoolAttributeString", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"pk":{"BOOL":"true"}}}`, 400, serialization, ""},
		{"BadBase64", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"pk":{"B":"!!!"}}}`, 400, serialization, "base64"},
		{"StringSetOfNumbers", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"pk":{"SS":[1,2]}}}`, 400, serialization, ""},
		{"NullInList", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"pk":{"L":[null]}}}`, 400, serialization, ""},
		{"NestedTypeError", "DynamoDB_20120810.TransactWriteItems", `{"TransactItems":[{"Put":{"TableName":"t","Item":{"m":{"M":{"x":{"N":true}}}}}}]}`, 400, serialization, "TransactItems[0].Put.Item.m.M.x.N"},
		{"TransactItemsObject", "DynamoDB_20120810.TransactWriteItems", `{"TransactItems":{}}`, 400, serialization, "TransactItems"},
		{"EmptyAttributeValue", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"pk":{}}}`, 400, validation, "Supplied AttributeValue is empty"},
		{"NullAttributeValue", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"pk":null}}`, 400, validation, "Supplied AttributeValue is empty"},
		{"UnknownAttributeType", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"pk":{"X":"a"}}}`, 400, validation, "Supplied AttributeValue is empty"},
		{"TwoAttributeTypes", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"pk":{"S":"a","N":"1"}}}`, 400, validation, "more than one datatypes"},
		{"TypeErrorWinsOverValidation", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"a":{},"b":{"S":false}}}`, 400, serialization, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, nil)
			r := post(t, tb.url, tc.target, tc.body, nil)
			require.Equal(t, tc.status, r.status, "body: %s", r.body)
			require.Equal(t, tc.errType, r.errType, "body: %s", r.body)
			require.Contains(t, r.message, tc.message)
			require.Equal(t, "application/x-amz-json-1.0", r.header.Get("Content-Type"))
			requireDynamoDBHeaders(t, r)
			require.Empty(t, tb.backend.Calls(), "a refused request must not reach the backend")
		})
	}
}

func TestRequestsOtherThanPost(t *testing.T) {
	t.Parallel()
	tb := setup(t, nil)

	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, tb.url+"/", nil)
	require.NoError(t, err)
	r := do(t, req)
	require.Equal(t, http.StatusOK, r.status)
	require.True(t, strings.HasPrefix(string(r.body), "healthy: "), "GET / answers a health line, as DynamoDB does: %q", r.body)
	requireDynamoDBHeaders(t, r)

	req, err = http.NewRequestWithContext(context.Background(), http.MethodPut, tb.url+"/", strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.ListTables")
	r = do(t, req)
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Equal(t, "com.amazon.coral.service#UnknownOperationException", r.errType)
	requireDynamoDBHeaders(t, r)
	require.Empty(t, tb.backend.Calls())
}

func TestBodyTooLarge(t *testing.T) {
	t.Parallel()
	tb := setup(t, nil, ddbhttp.WithMaxBodyBytes(1024))
	r := post(t, tb.url, "DynamoDB_20120810.PutItem", `{"TableName":"`+strings.Repeat("x", 2048)+`"}`, nil)
	require.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	require.Equal(t, "com.amazon.coral.service#RequestEntityTooLarge", r.errType)
	requireDynamoDBHeaders(t, r)
	require.Empty(t, tb.backend.Calls())
}

func TestAuthorization(t *testing.T) {
	t.Parallel()
	t.Run("AnySignatureAccepted", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, nil, ddbhttp.RequireAuthorization())
		r := post(t, tb.url, "DynamoDB_20120810.ListTables", `{}`, nil)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		require.Len(t, tb.backend.Calls(), 1)
	})
	t.Run("UnsignedServedByDefault", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, nil)
		r := post(t, tb.url, "DynamoDB_20120810.ListTables", `{}`, map[string]string{"Authorization": ""})
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		require.JSONEq(t, `{"TableNames":[]}`, string(r.body))
	})
	t.Run("UnsignedRefusedWhenRequired", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, nil, ddbhttp.RequireAuthorization())
		r := post(t, tb.url, "DynamoDB_20120810.ListTables", `{}`, map[string]string{"Authorization": ""})
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Equal(t, "com.amazon.coral.service#MissingAuthenticationTokenException", r.errType)
		requireDynamoDBHeaders(t, r)
		require.Empty(t, tb.backend.Calls())
	})
}

func TestBackendPanicAnswersInternalServerError(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	tb := setup(t, func(string, any) (any, error) { panic("engine bug") },
		ddbhttp.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	r := post(t, tb.url, "DynamoDB_20120810.GetItem", `{"TableName":"t","Key":{"pk":{"S":"a"}}}`, nil)
	require.Equal(t, http.StatusInternalServerError, r.status)
	require.Equal(t, "com.amazonaws.dynamodb.v20120810#InternalServerError", r.errType)
	requireDynamoDBHeaders(t, r)

	// The server is still serving.
	r = post(t, tb.url, "DynamoDB_20120810.ListTables", `{}`, nil)
	require.Equal(t, http.StatusInternalServerError, r.status)
	require.Len(t, tb.backend.Calls(), 2)
	require.Contains(t, logs.String(), "engine bug", "a recovered panic is logged for the operator")
	require.NotContains(t, string(r.body), "engine bug", "but not sent to the client")
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestErrorWireFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{
			"ConditionalCheckFailed",
			&types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed"), Item: key("a")},
			`{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed","Item":{"pk":{"S":"a"}}}`,
		},
		{
			"TransactionCanceled",
			&types.TransactionCanceledException{Message: aws.String("Transaction cancelled"), CancellationReasons: []types.CancellationReason{
				{Code: aws.String("None")},
				{Code: aws.String("ConditionalCheckFailed"), Message: aws.String("The conditional request failed"), Item: key("a")},
			}},
			`{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","Message":"Transaction cancelled","CancellationReasons":[{"Code":"None"},{"Code":"ConditionalCheckFailed","Message":"The conditional request failed","Item":{"pk":{"S":"a"}}}]}`,
		},
		{
			"Throttling",
			&types.ThrottlingException{Message: aws.String("slow down"), ThrottlingReasons: []types.ThrottlingReason{{Reason: aws.String("r"), Resource: aws.String("arn")}}},
			`{"__type":"com.amazon.coral.availability#ThrottlingException","message":"slow down","throttlingReasons":[{"reason":"r","resource":"arn"}]}`,
		},
		{
			"ProvisionedThroughputExceeded",
			&types.ProvisionedThroughputExceededException{Message: aws.String("too fast")},
			`{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"too fast"}`,
		},
		{
			"Validation",
			&types.ResourceNotFoundException{Message: aws.String("Requested resource not found")},
			`{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Requested resource not found"}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, func(string, any) (any, error) { return nil, tc.err })
			r := post(t, tb.url, "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"pk":{"S":"a"}}}`, nil)
			require.Equal(t, http.StatusBadRequest, r.status)
			require.JSONEq(t, tc.want, string(r.body))
			requireDynamoDBHeaders(t, r)
		})
	}
}

func TestOutputWireFormat(t *testing.T) {
	t.Parallel()
	created := mustTime(t, "2026-11-29T14:00:00.250Z")
	tb := setup(t, func(op string, _ any) (any, error) {
		switch op {
		case "Query":
			return &dynamodb.QueryOutput{}, nil
		case "DescribeTable":
			return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{
				TableName:        aws.String("t"),
				TableStatus:      types.TableStatusActive,
				CreationDateTime: &created,
				ItemCount:        aws.Int64(0),
				BillingModeSummary: &types.BillingModeSummary{
					BillingMode: types.BillingModePayPerRequest,
				},
			}}, nil
		case "GetItem":
			return &dynamodb.GetItemOutput{Item: map[string]types.AttributeValue{
				"b":  &types.AttributeValueMemberB{Value: []byte("hi")},
				"bs": &types.AttributeValueMemberBS{Value: [][]byte{[]byte("a")}},
				"ss": &types.AttributeValueMemberSS{Value: []string{"x"}},
				"ns": &types.AttributeValueMemberNS{Value: []string{"1"}},
				"nl": &types.AttributeValueMemberNULL{Value: true},
				"l":  &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberBOOL{Value: true}}},
				"m":  &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}},
			}}, nil
		}
		return nil, nil
	})

	r := post(t, tb.url, "DynamoDB_20120810.Query", `{"TableName":"t"}`, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.JSONEq(t, `{"Count":0,"Items":[],"ScannedCount":0}`, string(r.body), "DynamoDB always sends Count, ScannedCount and Items")
	requireDynamoDBHeaders(t, r)

	r = post(t, tb.url, "DynamoDB_20120810.Query", `{"TableName":"t","Select":"COUNT"}`, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.JSONEq(t, `{"Count":0,"ScannedCount":0}`, string(r.body), "Select COUNT answers no Items")

	r = post(t, tb.url, "DynamoDB_20120810.DescribeTable", `{"TableName":"t"}`, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.JSONEq(t, `{"Table":{"BillingModeSummary":{"BillingMode":"PAY_PER_REQUEST"},"CreationDateTime":1795960800.25,"ItemCount":0,"TableName":"t","TableStatus":"ACTIVE"}}`, string(r.body))

	r = post(t, tb.url, "DynamoDB_20120810.GetItem", `{"TableName":"t","Key":{"pk":{"S":"a"}}}`, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.JSONEq(t, `{"Item":{"b":{"B":"aGk="},"bs":{"BS":["YQ=="]},"ss":{"SS":["x"]},"ns":{"NS":["1"]},"nl":{"NULL":true},"l":{"L":[{"BOOL":true}]},"m":{"M":{}}}}`, string(r.body))
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return tm
}
