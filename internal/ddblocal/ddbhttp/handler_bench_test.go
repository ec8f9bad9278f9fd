package ddbhttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// queryAnswer answers Query with a fixed page of ten items of about 200
// bytes, the shape of a claim page.
type queryAnswer struct{ answerEmpty }

var benchPage = func() []map[string]types.AttributeValue {
	items := make([]map[string]types.AttributeValue, 10)
	for i := range items {
		items[i] = map[string]types.AttributeValue{
			"pk":      &types.AttributeValueMemberS{Value: "P#3"},
			"sk":      &types.AttributeValueMemberS{Value: "A#01JDZ3K9" + strconv.Itoa(i)},
			"state":   &types.AttributeValueMemberS{Value: "ADMITTED"},
			"attempt": &types.AttributeValueMemberN{Value: "0"},
			"due":     &types.AttributeValueMemberN{Value: "1795960800123"},
			"payload": &types.AttributeValueMemberS{Value: strings.Repeat("x", 100)},
			"tags":    &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		}
	}
	return items
}()

func (queryAnswer) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return &dynamodb.QueryOutput{Items: benchPage, Count: 10, ScannedCount: 10}, nil
}

func benchServe(b *testing.B, h http.Handler, target, body string) {
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/", strings.NewReader(body))
		req.Header.Set("X-Amz-Target", targetPrefix+target)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkHandlerPutItem measures the protocol's cost for one PutItem of
// about 200 bytes (decode, dispatch, encode, CRC32), without the engine.
func BenchmarkHandlerPutItem(b *testing.B) {
	body := `{"TableName":"ferry","Item":{"pk":{"S":"P#3"},"sk":{"S":"A#01JDZ3K9"},"state":{"S":"ADMITTED"},"attempt":{"N":"0"},"due":{"N":"1795960800123"},"payload":{"S":"` + strings.Repeat("x", 100) + `"}},"ConditionExpression":"attribute_not_exists(pk)"}`
	benchServe(b, NewHandler(answerEmpty{}), "PutItem", body)
}

// BenchmarkHandlerQueryPage measures answering a Query page of ten items.
func BenchmarkHandlerQueryPage(b *testing.B) {
	body := `{"TableName":"ferry","KeyConditionExpression":"pk = :p","ExpressionAttributeValues":{":p":{"S":"P#3"}},"Limit":10}`
	benchServe(b, NewHandler(queryAnswer{}), "Query", body)
}
