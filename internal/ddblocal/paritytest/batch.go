package paritytest

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

const docBatchGet = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html"

func batchCases() []parityCase {
	return []parityCase{
		// "A single operation can retrieve up to 16 MB of data ...
		// BatchGetItem returns a partial result if the response size limit
		// is exceeded": the rest comes back in UnprocessedKeys, with the
		// request's other parameters, and a retry loop reads it all.
		{"BatchGetStopsAt16MB", docBatchGet, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutHashOnly)
			const count = 50 // 50 items of ~390 KB: about 19 MB
			var keys []item
			for i := range count {
				id := fmt.Sprintf("k%02d", i)
				b.put(t, item{"pk": s(id), "big": s(repeat("x", 390*1024)), "small": n(fmt.Sprint(i))})
				keys = append(keys, item{"pk": s(id)})
			}
			req := map[string]types.KeysAndAttributes{b.table: {Keys: keys, ConsistentRead: aws.Bool(true)}}
			out, err := b.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			require.NoError(t, err)
			got := len(out.Responses[b.table])
			rest, ok := out.UnprocessedKeys[b.table]
			require.True(t, ok, "the answer stops at 16 MB")
			require.Equal(t, count, got+len(rest.Keys), "every key is answered or unprocessed")
			require.LessOrEqual(t, got*390*1024, 16<<20)
			require.True(t, aws.ToBool(rest.ConsistentRead), "the unprocessed keys keep the request's parameters")
			seen := map[string]bool{}
			for _, it := range out.Responses[b.table] {
				seen[it["pk"].(*types.AttributeValueMemberS).Value] = true
			}
			for len(out.UnprocessedKeys) > 0 {
				out, err = b.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: out.UnprocessedKeys})
				require.NoError(t, err)
				for _, it := range out.Responses[b.table] {
					seen[it["pk"].(*types.AttributeValueMemberS).Value] = true
				}
			}
			require.Len(t, seen, count)
		}},
	}
}
