package ddbhttp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	smithy "github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
)

// sdkCase calls one operation through the real SDK client.
type sdkCase struct {
	op     string
	newIn  func() any
	newOut func() any
	call   func(ctx context.Context, c *dynamodb.Client, in any) (any, error)
}

func caseOf[In, Out any](op string, m func(*dynamodb.Client, context.Context, *In, ...func(*dynamodb.Options)) (*Out, error)) sdkCase {
	return sdkCase{
		op:     op,
		newIn:  func() any { return fill[In]() },
		newOut: func() any { return fill[Out]() },
		call: func(ctx context.Context, c *dynamodb.Client, in any) (any, error) {
			return m(c, ctx, in.(*In))
		},
	}
}

// sdkCases covers every operation the Backend serves.
var sdkCases = []sdkCase{
	caseOf("CreateTable", (*dynamodb.Client).CreateTable),
	caseOf("DescribeTable", (*dynamodb.Client).DescribeTable),
	caseOf("DeleteTable", (*dynamodb.Client).DeleteTable),
	caseOf("ListTables", (*dynamodb.Client).ListTables),
	caseOf("UpdateTimeToLive", (*dynamodb.Client).UpdateTimeToLive),
	caseOf("DescribeTimeToLive", (*dynamodb.Client).DescribeTimeToLive),
	caseOf("PutItem", (*dynamodb.Client).PutItem),
	caseOf("GetItem", (*dynamodb.Client).GetItem),
	caseOf("UpdateItem", (*dynamodb.Client).UpdateItem),
	caseOf("DeleteItem", (*dynamodb.Client).DeleteItem),
	caseOf("Query", (*dynamodb.Client).Query),
	caseOf("Scan", (*dynamodb.Client).Scan),
	caseOf("BatchGetItem", (*dynamodb.Client).BatchGetItem),
	caseOf("BatchWriteItem", (*dynamodb.Client).BatchWriteItem),
	caseOf("TransactWriteItems", (*dynamodb.Client).TransactWriteItems),
	caseOf("TransactGetItems", (*dynamodb.Client).TransactGetItems),
}

// sdkLog captures everything the SDK logs.
type sdkLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *sdkLog) Logf(c logging.Classification, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.buf, "%s "+format+"\n", append([]any{c}, v...)...)
}

func (l *sdkLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

type testBundle struct {
	backend *fakeBackend
	client  *dynamodb.Client
	log     *sdkLog
	url     string
}

// setup serves a fake backend through the handler on loopback and returns a
// real SDK client pointed at it, configured the way a user would.
func setup(t *testing.T, respond func(op string, in any) (any, error), opts ...ddbhttp.Option) *testBundle {
	t.Helper()
	b := &fakeBackend{respond: respond}
	srv := httptest.NewServer(ddbhttp.NewHandler(b, opts...))
	t.Cleanup(srv.Close)

	log := &sdkLog{}
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")),
		config.WithLogger(log),
		config.WithRetryMaxAttempts(1), // one backend call per SDK call, even for retryable errors
	)
	require.NoError(t, err)
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		// Set here rather than in the config: the config refuses a plain
		// *http.Client when AWS_CA_BUNDLE is set in the environment.
		o.HTTPClient = srv.Client()
		o.ClientLogMode = aws.LogRetries | aws.LogDeprecatedUsage
	})
	return &testBundle{backend: b, client: client, log: log, url: srv.URL}
}

// requireNoChecksumComplaints asserts the SDK logged nothing about CRC32 or
// checksums.
func requireNoChecksumComplaints(t *testing.T, log *sdkLog) {
	t.Helper()
	s := strings.ToLower(log.String())
	require.NotContains(t, s, "crc32")
	require.NotContains(t, s, "checksum")
}

// stripMetadata zeroes the SDK's ResultMetadata so an output can be compared
// with what the backend returned.
func stripMetadata(out any) any {
	v := reflect.ValueOf(out).Elem()
	if f := v.FieldByName("ResultMetadata"); f.IsValid() {
		f.Set(reflect.Zero(f.Type()))
	}
	return out
}

func TestSDKRoundTripsEveryOperation(t *testing.T) {
	t.Parallel()
	for _, tc := range sdkCases {
		t.Run(tc.op, func(t *testing.T) {
			t.Parallel()
			want := tc.newOut()
			stripMetadata(want)
			tb := setup(t, func(op string, in any) (any, error) {
				if op != tc.op {
					return nil, fmt.Errorf("unexpected operation %s", op)
				}
				return want, nil
			}, ddbhttp.WithRequestIDs(func() string { return "REQ-" + tc.op }))

			in := tc.newIn()
			got, err := tc.call(context.Background(), tb.client, in)
			require.NoError(t, err)

			calls := tb.backend.Calls()
			require.Len(t, calls, 1)
			require.Equal(t, tc.op, calls[0].op)
			require.Equal(t, in, calls[0].in, "the backend must receive exactly the input the SDK sent")

			reqID, ok := awsmiddleware.GetRequestIDMetadata(reflect.ValueOf(got).Elem().FieldByName("ResultMetadata").Interface().(middleware.Metadata))
			require.True(t, ok)
			require.Equal(t, "REQ-"+tc.op, reqID)
			require.Equal(t, want, stripMetadata(got), "the SDK must receive exactly the output the backend returned")
			requireNoChecksumComplaints(t, tb.log)
		})
	}
}

func TestSDKEmptyInputsAndOutputs(t *testing.T) {
	t.Parallel()
	tb := setup(t, nil)
	ctx := context.Background()

	out, err := tb.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String("t"),
		Item:      map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}},
	})
	require.NoError(t, err)
	require.Nil(t, out.Attributes)

	q, err := tb.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("t")})
	require.NoError(t, err)
	require.NotNil(t, q.Items, "DynamoDB always sends Items, even empty")
	require.Empty(t, q.Items)
	require.Zero(t, q.Count)

	lt, err := tb.client.ListTables(ctx, &dynamodb.ListTablesInput{})
	require.NoError(t, err)
	require.NotNil(t, lt.TableNames)

	bw, err := tb.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		"t": {{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}}}},
	}})
	require.NoError(t, err)
	require.NotNil(t, bw.UnprocessedItems)
	require.Empty(t, bw.UnprocessedItems)
	requireNoChecksumComplaints(t, tb.log)
}

func TestSDKErrors(t *testing.T) {
	t.Parallel()
	item := map[string]types.AttributeValue{
		"pk":    &types.AttributeValueMemberS{Value: "P#1"},
		"lease": &types.AttributeValueMemberN{Value: "1700000000"},
		"set":   &types.AttributeValueMemberSS{Value: []string{"x"}},
	}
	tests := []struct {
		name   string
		err    error
		status int
	}{
		{"ConditionalCheckFailedWithItem", &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed"), Item: item}, 400},
		{"ConditionalCheckFailedWithoutItem", &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}, 400},
		{"TransactionCanceled", &types.TransactionCanceledException{
			Message: aws.String("Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed, TransactionConflict]"),
			CancellationReasons: []types.CancellationReason{
				{Code: aws.String("None")},
				{Code: aws.String("ConditionalCheckFailed"), Message: aws.String("The conditional request failed"), Item: item},
				{Code: aws.String("TransactionConflict"), Message: aws.String("Transaction is ongoing for the item")},
			},
		}, 400},
		{"ResourceNotFound", &types.ResourceNotFoundException{Message: aws.String("Requested resource not found")}, 400},
		{"ResourceInUse", &types.ResourceInUseException{Message: aws.String("Table already exists: t")}, 400},
		{"TransactionConflict", &types.TransactionConflictException{Message: aws.String("Transaction is ongoing for the item")}, 400},
		{"ProvisionedThroughputExceeded", &types.ProvisionedThroughputExceededException{
			Message:           aws.String("throughput exceeded"),
			ThrottlingReasons: []types.ThrottlingReason{{Reason: aws.String("TableWriteProvisionedThroughputExceeded"), Resource: aws.String("arn:aws:dynamodb:us-east-1:000000000000:table/t")}},
		}, 400},
		{"Throttling", &types.ThrottlingException{
			Message:           aws.String("Rate of requests exceeds the allowed throughput."),
			ThrottlingReasons: []types.ThrottlingReason{{Reason: aws.String("TableReadKeyRangeThroughputExceeded")}},
		}, 400},
		{"RequestLimitExceeded", &types.RequestLimitExceeded{Message: aws.String("Throughput exceeds the current throughput limit for your account.")}, 400},
		{"IdempotentParameterMismatch", &types.IdempotentParameterMismatchException{Message: aws.String("token reused")}, 400},
		{"TransactionInProgress", &types.TransactionInProgressException{Message: aws.String("in progress")}, 400},
		{"ItemCollectionSizeLimitExceeded", &types.ItemCollectionSizeLimitExceededException{Message: aws.String("too big")}, 400},
		{"LimitExceeded", &types.LimitExceededException{Message: aws.String("too many tables")}, 400},
		{"InternalServerError", &types.InternalServerError{Message: aws.String("Internal server error")}, 500},
		{"Validation", &smithy.GenericAPIError{Code: "ValidationException", Message: "One or more parameter values were invalid: Missing the key pk in the item"}, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var status int
			tb := setup(t, func(string, any) (any, error) {
				// The in-process client wraps its errors as the SDK does.
				return nil, &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "PutItem", Err: tc.err}
			})
			_, err := tb.client.PutItem(context.Background(), &dynamodb.PutItemInput{
				TableName: aws.String("t"), Item: item,
			}, func(o *dynamodb.Options) {
				o.APIOptions = append(o.APIOptions, captureStatus(&status))
			})
			require.Error(t, err)
			require.Len(t, tb.backend.Calls(), 1)
			require.Equal(t, tc.status, status)

			// errors.As into a fresh value of the same type, then compare
			// every field.
			target := reflect.New(reflect.TypeOf(tc.err))
			require.True(t, errors.As(err, target.Interface()), "errors.As(%T) on %v", tc.err, err)
			require.Equal(t, tc.err, target.Elem().Interface())

			var oe *smithy.OperationError
			require.ErrorAs(t, err, &oe)
			require.Equal(t, "PutItem", oe.OperationName)
			requireNoChecksumComplaints(t, tb.log)
		})
	}
}

func TestSDKReadsCancellationReasons(t *testing.T) {
	t.Parallel()
	old := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}, "v": &types.AttributeValueMemberN{Value: "3"}}
	tb := setup(t, func(string, any) (any, error) {
		return nil, &types.TransactionCanceledException{
			Message: aws.String("Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed]"),
			CancellationReasons: []types.CancellationReason{
				{Code: aws.String("None")},
				{Code: aws.String("ConditionalCheckFailed"), Message: aws.String("The conditional request failed"), Item: old},
			},
		}
	})
	_, err := tb.client.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String("t"), Item: old}},
			{ConditionCheck: &types.ConditionCheck{TableName: aws.String("t"), Key: old, ConditionExpression: aws.String("attribute_not_exists(pk)"), ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
		},
	})
	var tce *types.TransactionCanceledException
	require.ErrorAs(t, err, &tce)
	require.Len(t, tce.CancellationReasons, 2)
	require.Equal(t, "None", aws.ToString(tce.CancellationReasons[0].Code))
	require.Equal(t, "ConditionalCheckFailed", aws.ToString(tce.CancellationReasons[1].Code))
	require.Equal(t, old, tce.CancellationReasons[1].Item)
	require.Equal(t, "TransactionCanceledException", tce.ErrorCode())
}

func TestSDKNonAPIErrorIsInternalServerError(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(string, any) (any, error) {
		return nil, errors.New("disk on fire: /secret/path")
	})
	_, err := tb.client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a")})
	var ise *types.InternalServerError
	require.ErrorAs(t, err, &ise)
	require.NotContains(t, err.Error(), "secret", "internal errors must not leak to clients")
}

func TestSDKDefaultMessages(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(string, any) (any, error) {
		return nil, &types.ConditionalCheckFailedException{}
	})
	_, err := tb.client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: key("a")})
	var ccf *types.ConditionalCheckFailedException
	require.ErrorAs(t, err, &ccf)
	require.Equal(t, "The conditional request failed", ccf.ErrorMessage())
}

// captureStatus records the HTTP status of the raw response.
func captureStatus(status *int) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Deserialize.Add(middleware.DeserializeMiddlewareFunc("captureStatus",
			func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleDeserialize(ctx, in)
				if r, ok := out.RawResponse.(*smithyhttp.Response); ok {
					*status = r.StatusCode
				}
				return out, md, err
			}), middleware.After)
	}
}

func key(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}
}

// A client that asks for gzip gets an identity-encoded answer, which HTTP
// allows, and its CRC32 check still passes.
func TestSDKWithAcceptEncodingGzip(t *testing.T) {
	t.Parallel()
	want := &dynamodb.GetItemOutput{Item: richItem()}
	tb := setup(t, func(string, any) (any, error) { return want, nil })
	got, err := tb.client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a")},
		func(o *dynamodb.Options) { o.EnableAcceptEncodingGzip = true })
	require.NoError(t, err)
	require.Equal(t, want.Item, got.Item)
	requireNoChecksumComplaints(t, tb.log)
}
