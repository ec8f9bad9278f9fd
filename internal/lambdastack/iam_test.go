package lambdastack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"
	"github.com/stretchr/testify/require"
)

func TestEvaluateTemplateRoles(t *testing.T) {
	t.Parallel()
	tmpl := readTestTemplate(t)
	table := "arn:aws:dynamodb:us-east-1:000000000000:table/ferry"
	cases := []struct {
		fn, action, resource string
		want                 bool
	}{
		{"drainer", "dynamodb:ConditionCheckItem", table, true},
		{"drainer", "dynamodb:Query", table + "/index/due", true},
		{"drainer", "dynamodb:Query", table + "/index/subject", false},
		{"drainer", "dynamodb:GetRecords", table + "/stream/2026-12-01T00:00:00.000", true},
		{"drainer", "dynamodb:Scan", table, false},
		{"enqueue", "dynamodb:Scan", table, true},
		{"enqueue", "dynamodb:Query", table + "/index/subject", true},
		{"enqueue", "dynamodb:PutItem", "arn:aws:dynamodb:us-east-1:000000000000:table/other", false},
		{"retention", "dynamodb:DescribeTable", table, true},
		{"retention", "dynamodb:PutItem", table, false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s/%s", c.fn, c.action, c.resource[strings.LastIndex(c.resource, ":")+1:]), func(t *testing.T) {
			t.Parallel()
			got, _ := Evaluate(tmpl.Function(c.fn).Role.Statements, Authorization{Action: c.action, Resource: c.resource})
			require.Equal(t, c.want, got)
		})
	}
}

func TestEvaluateDenyAndConditions(t *testing.T) {
	t.Parallel()
	stmts := []Statement{
		{Effect: "Allow", Actions: []string{"dynamodb:*"}, Resources: []string{"*"}},
		{Effect: "Deny", Actions: []string{"dynamodb:DeleteItem"}, Resources: []string{"*"}},
		{Effect: "Allow", Actions: []string{"kms:Decrypt"}, Resources: []string{"*"},
			Condition: map[string]map[string][]string{"StringEquals": {"kms:ViaService": {"dynamodb.us-east-1.amazonaws.com"}}}},
	}
	ok, explicit := Evaluate(stmts, Authorization{Action: "dynamodb:GetItem", Resource: "x"})
	require.True(t, ok)
	require.False(t, explicit)
	ok, explicit = Evaluate(stmts, Authorization{Action: "dynamodb:DeleteItem", Resource: "x"})
	require.False(t, ok)
	require.True(t, explicit)
	ok, _ = Evaluate(stmts, Authorization{Action: "kms:Decrypt", Resource: "k"})
	require.False(t, ok, "a condition key the request lacks fails the condition")
	ok, _ = Evaluate(stmts, Authorization{Action: "kms:Decrypt", Resource: "k", Context: map[string][]string{"kms:ViaService": {"dynamodb.us-east-1.amazonaws.com"}}})
	require.True(t, ok)
}

func TestRoleGate(t *testing.T) {
	t.Parallel()
	tmpl := readTestTemplate(t)
	forwarded := 0
	gate := &RoleGate{
		Next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			forwarded++
			_, _ = io.WriteString(w, "{}")
		}),
		Map:   MapRequests(DefaultLocal),
		Local: DefaultLocal, Logs: &Logs{},
	}
	gate.Register(tmpl.Function("retention"))
	srv := httptest.NewServer(gate)
	t.Cleanup(srv.Close)
	send := func(key, op string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"TableName":"ferry"}`))
		require.NoError(t, err)
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+key+"/20261201/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=x")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, _ := send(AccessKeyID("retention"), "Query")
	require.Equal(t, 200, status)
	status, body := send(AccessKeyID("retention"), "PutItem")
	require.Equal(t, 400, status)
	require.JSONEq(t, `{"__type":"com.amazon.coral.service#AccessDeniedException","Message":"User: arn:aws:sts::000000000000:assumed-role/`+
		tmpl.Function("retention").Role.LogicalID+`/retention is not authorized to perform: dynamodb:PutItem on resource: arn:aws:dynamodb:us-east-1:000000000000:table/ferry because no identity-based policy allows the dynamodb:PutItem action"}`, body)
	status, _ = send("AKIADEVELOPER", "PutItem")
	require.Equal(t, 200, status, "requests of other callers are not checked")
	require.Equal(t, 2, forwarded)
	require.Len(t, gate.Denials(), 1)

	// A transaction is authorized item by item: the retention role may
	// delete but not condition-check.
	req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(
		`{"TransactItems":[{"Delete":{"TableName":"ferry"}},{"ConditionCheck":{"TableName":"ferry"}}]}`))
	require.NoError(t, err)
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.TransactWriteItems")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+AccessKeyID("retention")+"/20261201/us-east-1/dynamodb/aws4_request")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	require.Equal(t, 400, resp.StatusCode)
	require.Contains(t, string(raw), "is not authorized to perform: dynamodb:ConditionCheckItem on resource: arn:aws:dynamodb:us-east-1:000000000000:table/ferry")
}

func TestMapRequestsGetRecordsNamesTheIteratorsStream(t *testing.T) {
	t.Parallel()
	stream := "arn:aws:dynamodb:us-east-1:000000000000:table/ferry/stream/2026-12-01T00:00:00.000"
	got, err := MapRequests(DefaultLocal)("GetRecords", []byte(`{"ShardIterator":"`+stream+`|1|AAAA"}`))
	require.NoError(t, err)
	require.Equal(t, []Authorization{{Action: "dynamodb:GetRecords", Resource: stream}}, got)
	ok, _ := Evaluate(readTestTemplate(t).Function("drainer").Role.Statements, got[0])
	require.True(t, ok)
}

// TestRoleGateAnswersCarryTheChecksum is issue 28 item 12: the gate's
// AccessDeniedException answers had no X-Amz-Crc32, so the DynamoDB SDK
// of every function logged a checksum warning beside the refusal. The
// SDK, as the functions build it, reads the refusal and warns of nothing.
func TestRoleGateAnswersCarryTheChecksum(t *testing.T) {
	t.Parallel()
	gate := &RoleGate{Next: http.NotFoundHandler(), Map: MapRequests(DefaultLocal), Local: DefaultLocal, Logs: &Logs{}}
	gate.Register(readTestTemplate(t).Function("retention"))
	srv := httptest.NewServer(gate)
	t.Cleanup(srv.Close)
	var logged bytes.Buffer
	client := dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(srv.URL), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(AccessKeyID("retention"), "s", "t"),
		Logger: logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
			fmt.Fprintf(&logged, "%s "+format+"\n", append([]any{c}, v...)...)
		}),
		RetryMaxAttempts: 1,
	})
	_, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("ferry"),
		Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "x"}}})
	var denied interface{ ErrorCode() string }
	require.ErrorAs(t, err, &denied)
	require.Equal(t, "AccessDeniedException", denied.ErrorCode())
	require.Empty(t, logged.String(), "the SDK warned")
}
