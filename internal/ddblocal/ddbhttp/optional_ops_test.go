package ddbhttp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
)

// extendedBackend has the optional operations the handler serves when a
// backend offers them.
type extendedBackend struct{ *fakeBackend }

func (f extendedBackend) UpdateTable(_ context.Context, in *dynamodb.UpdateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	return answer[dynamodb.UpdateTableOutput](f.fakeBackend, "UpdateTable", in)
}

func (f extendedBackend) DescribeLimits(_ context.Context, in *dynamodb.DescribeLimitsInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeLimitsOutput, error) {
	return answer[dynamodb.DescribeLimitsOutput](f.fakeBackend, "DescribeLimits", in)
}

func (f extendedBackend) DescribeEndpoints(_ context.Context, in *dynamodb.DescribeEndpointsInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeEndpointsOutput, error) {
	return answer[dynamodb.DescribeEndpointsOutput](f.fakeBackend, "DescribeEndpoints", in)
}

func (f extendedBackend) TagResource(_ context.Context, in *dynamodb.TagResourceInput, _ ...func(*dynamodb.Options)) (*dynamodb.TagResourceOutput, error) {
	return answer[dynamodb.TagResourceOutput](f.fakeBackend, "TagResource", in)
}

func (f extendedBackend) UntagResource(_ context.Context, in *dynamodb.UntagResourceInput, _ ...func(*dynamodb.Options)) (*dynamodb.UntagResourceOutput, error) {
	return answer[dynamodb.UntagResourceOutput](f.fakeBackend, "UntagResource", in)
}

func (f extendedBackend) ListTagsOfResource(_ context.Context, in *dynamodb.ListTagsOfResourceInput, _ ...func(*dynamodb.Options)) (*dynamodb.ListTagsOfResourceOutput, error) {
	return answer[dynamodb.ListTagsOfResourceOutput](f.fakeBackend, "ListTagsOfResource", in)
}

func (f extendedBackend) DescribeContinuousBackups(_ context.Context, in *dynamodb.DescribeContinuousBackupsInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeContinuousBackupsOutput, error) {
	return answer[dynamodb.DescribeContinuousBackupsOutput](f.fakeBackend, "DescribeContinuousBackups", in)
}

func TestOptionalOperations(t *testing.T) {
	t.Parallel()
	cases := []sdkCase{
		caseOf("UpdateTable", (*dynamodb.Client).UpdateTable),
		caseOf("DescribeLimits", (*dynamodb.Client).DescribeLimits),
		caseOf("DescribeEndpoints", (*dynamodb.Client).DescribeEndpoints),
		caseOf("TagResource", (*dynamodb.Client).TagResource),
		caseOf("UntagResource", (*dynamodb.Client).UntagResource),
		caseOf("ListTagsOfResource", (*dynamodb.Client).ListTagsOfResource),
		caseOf("DescribeContinuousBackups", (*dynamodb.Client).DescribeContinuousBackups),
	}
	for _, tc := range cases {
		t.Run(tc.op, func(t *testing.T) {
			t.Parallel()
			want := stripMetadata(tc.newOut())
			b := &fakeBackend{respond: func(op string, _ any) (any, error) {
				if op != tc.op {
					return nil, fmt.Errorf("unexpected operation %s", op)
				}
				return want, nil
			}}
			srv := httptest.NewServer(ddbhttp.NewHandler(extendedBackend{b}))
			t.Cleanup(srv.Close)
			cfg, err := config.LoadDefaultConfig(context.Background(),
				config.WithRegion("us-east-1"),
				config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")),
				config.WithRetryMaxAttempts(1))
			require.NoError(t, err)
			client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
				o.BaseEndpoint = aws.String(srv.URL)
				o.HTTPClient = srv.Client()
			})

			in := tc.newIn()
			got, err := tc.call(context.Background(), client, in)
			require.NoError(t, err)
			calls := b.Calls()
			require.Len(t, calls, 1)
			require.Equal(t, in, calls[0].in)
			require.Equal(t, want, stripMetadata(got))
		})
	}

	t.Run("AbsentWithoutTheMethod", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, nil)
		r := post(t, tb.url, "DynamoDB_20120810.UpdateTable", `{"TableName":"t"}`, nil)
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Equal(t, "com.amazon.coral.service#UnknownOperationException", r.errType)
	})
}
