package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
	"github.com/ferryhq/ferry/internal/version"
)

func testEnv(extra map[string]string) func(string) string {
	env := map[string]string{
		"FERRY_TABLE":          "ferry",
		"FERRY_IAM_WORKSPACES": `{"arn:aws:iam::123456789012:role/ferry-ops":["default","ops"]}`,
		"AWS_REGION":           "eu-west-1",
	}
	for k, v := range extra {
		env[k] = v
	}
	return func(k string) string { return env[k] }
}

// TestColdStartNamesTheVariable: a bad environment refuses to start and
// says which variable is wrong.
func TestColdStartNamesTheVariable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env     map[string]string
		wantVar string
	}{
		{map[string]string{"FERRY_TABLE": ""}, "FERRY_TABLE"},
		{map[string]string{"FERRY_PARTITIONS": "many"}, "FERRY_PARTITIONS"},
		{map[string]string{"FERRY_LEASE": "1m", "FERRY_WRITE_MARGIN": "2m"}, "FERRY_WRITE_MARGIN"},
		{map[string]string{"FERRY_IAM_WORKSPACES": `["default"]`}, "FERRY_IAM_WORKSPACES"},
		{map[string]string{"FERRY_WORKSPACE_CLAIM": "a b"}, "FERRY_WORKSPACE_CLAIM"},
		{map[string]string{"LOG_LEVEL": "chatty"}, "LOG_LEVEL"},
		{map[string]string{"FERRY_RETENTION": "forever"}, "FERRY_RETENTION"},
		{map[string]string{"FERRY_ROW_CAP": "-1"}, "FERRY_ROW_CAP"},
	} {
		t.Run(tc.wantVar, func(t *testing.T) {
			t.Parallel()
			db := ddblocal.New()
			_, err := newHandler(t.Context(), testEnv(tc.env), db, clock.System{}, io.Discard)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.wantVar)
		})
	}
}

// sampleActionID is the action id in the events/ samples that name an
// action (get, admit, cancel). Ids are minted per table (design.md §3.10),
// so a run puts the id the enqueue sample was given in its place.
const sampleActionID = "01m8kjt9g0bvpgyzgh00b1"

// sampleStatuses is the answer each events/apigw-*.json sample gets when
// the samples are sent in this order to a fresh table. Every sample in
// events/ must be listed.
var sampleStatuses = []struct {
	file   string
	status int
	want   map[string]any // top-level fields of the answer
}{
	{"apigw-healthz.json", 200, map[string]any{"status": "ok"}},
	{"apigw-openapi.json", 200, map[string]any{"openapi": "3.1.0"}},
	{"apigw-enqueue.json", 201, map[string]any{"id": sampleActionID, "state": "PROPOSED", "workspace_id": "default"}},
	{"apigw-enqueue-batch.json", 201, nil},
	{"apigw-get-action.json", 200, map[string]any{"id": sampleActionID, "lane_key": "order-42"}},
	{"apigw-list-actions.json", 200, map[string]any{"next_cursor": nil}},
	{"apigw-admit-action.json", 200, map[string]any{"id": sampleActionID, "state": "ADMITTED"}},
	{"apigw-cancel-action.json", 200, map[string]any{"id": sampleActionID, "state": "CANCELLED", "stop_reason": "CANCELLED"}},
	{"apigw-erase-subject.json", 200, map[string]any{"erased": float64(2)}},
}

// TestSamplesThroughTheLambdaHandler feeds every API Gateway sample in
// events/ through the Lambda handler in-process, on the real engine over
// the embedded DynamoDB, and checks each answer.
func TestSamplesThroughTheLambdaHandler(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	files, err := filepath.Glob("../../events/apigw-*.json")
	require.NoError(t, err)
	var listed []string
	for _, s := range sampleStatuses {
		listed = append(listed, "../../events/"+s.file)
	}
	sort.Strings(files)
	sort.Strings(listed)
	require.Equal(t, listed, files, "every apigw sample has an expected answer")

	invoke := lambda.NewHandler(newTestHandler(t, io.Discard).Invoke)

	minted := ""
	for _, s := range sampleStatuses {
		raw, err := os.ReadFile("../../events/" + s.file)
		require.NoError(t, err)
		if minted != "" {
			raw = bytes.ReplaceAll(raw, []byte(sampleActionID), []byte(minted))
		}
		out, err := invoke.Invoke(ctx, raw)
		require.NoError(t, err, s.file)
		var resp events.APIGatewayV2HTTPResponse
		require.NoError(t, json.Unmarshal(out, &resp))
		require.Equal(t, s.status, resp.StatusCode, "%s: %s", s.file, resp.Body)
		require.Equal(t, "application/json", resp.Headers["Content-Type"], s.file)
		require.True(t, json.Valid([]byte(resp.Body)), s.file)
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(resp.Body), &got))
		if s.file == "apigw-enqueue.json" {
			minted, _ = got["id"].(string)
			_, _, err := outbox.ParseActionID(minted)
			require.NoError(t, err, "a global action id")
			require.NotEqual(t, sampleActionID, minted, "minted for this table")
		}
		for k, v := range s.want {
			if v == sampleActionID {
				v = minted
			}
			require.Equal(t, v, got[k], "%s: field %s of %s", s.file, k, resp.Body)
		}
		switch s.file {
		case "apigw-enqueue-batch.json":
			require.Len(t, got["actions"], 2)
		case "apigw-list-actions.json":
			// Listed through the IAM authorizer: the proposed action.
			require.Len(t, got["actions"], 1)
		}
	}
}

// TestEveryBuiltInKindIsAccepted: the enqueue function validates with the
// drainer's registry, so each built-in kind the drainer carries out can be
// enqueued through the API.
func TestEveryBuiltInKindIsAccepted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	invoke := lambda.NewHandler(newTestHandler(t, io.Discard).Invoke)

	raw, err := os.ReadFile("../../events/apigw-enqueue.json")
	require.NoError(t, err)
	for kind, payload := range map[string]string{
		"webhook":     `{"url":"https://example.com/hook","body":{"order":42}}`,
		"email":       `{"from":"shop@example.com","to":["ada@example.com"],"subject":"Shipped","text":"Your order shipped."}`,
		"eventbridge": `{"event_bus":"default","source":"shop.orders","detail_type":"OrderShipped","detail":{"order":42}}`,
	} {
		var req map[string]any
		require.NoError(t, json.Unmarshal(raw, &req))
		req["body"] = `{"kind":"` + kind + `","workspace_id":"default","payload":` + payload + `}`
		in, err := json.Marshal(req)
		require.NoError(t, err)
		out, err := invoke.Invoke(ctx, in)
		require.NoError(t, err, kind)
		var resp events.APIGatewayV2HTTPResponse
		require.NoError(t, json.Unmarshal(out, &resp))
		require.Equal(t, 201, resp.StatusCode, "%s: %s", kind, resp.Body)
	}
}

// TestInvocationFlushesMetrics: each invocation writes its metrics as
// CloudWatch Embedded Metric Format lines (namespace Ferry), and the
// enqueue is counted by kind.
func TestInvocationFlushesMetrics(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var out lockedBuffer
	h := newTestHandler(t, &out)
	raw, err := os.ReadFile("../../events/apigw-enqueue.json")
	require.NoError(t, err)
	_, err = lambda.NewHandler(h.Invoke).Invoke(ctx, raw)
	require.NoError(t, err)
	var found bool
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.Contains(line, `"_aws"`) {
			continue
		}
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &doc), line)
		if doc["ActionsEnqueued"] == float64(1) && doc["Kind"] == "webhook" {
			require.Contains(t, line, `"Namespace":"Ferry"`)
			found = true
		}
	}
	require.True(t, found, "no ActionsEnqueued metric in:\n%s", out.String())
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newTestHandler builds the function's handler over a fresh embedded
// DynamoDB whose table exists, on a manual clock; logs and metrics go to
// logOut.
func newTestHandler(t *testing.T, logOut io.Writer) *handler {
	t.Helper()
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	setupEng, err := outbox.New(db, clk, outbox.NewRegistry(), outbox.Config{Table: "ferry"})
	require.NoError(t, err)
	require.NoError(t, setupEng.EnsureTable(t.Context()))
	h, err := newHandler(t.Context(), testEnv(nil), db, clk, logOut)
	require.NoError(t, err)
	return h
}

// TestColdStartNamesTheVersion: the function's first log line is its cold
// start with the build's version; /healthz, the OpenAPI document and every
// EMF line name the same version.
func TestColdStartNamesTheVersion(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var out lockedBuffer
	invoke := lambda.NewHandler(newTestHandler(t, &out).Invoke)

	first, _, _ := strings.Cut(out.String(), "\n")
	var start map[string]any
	require.NoError(t, json.Unmarshal([]byte(first), &start), first)
	require.Equal(t, "cold start", start["msg"])
	require.Equal(t, "enqueue", start["function"])
	require.Equal(t, version.String(), start["version"])

	answer := func(sample string) map[string]any {
		raw, err := os.ReadFile("../../events/" + sample)
		require.NoError(t, err)
		got, err := invoke.Invoke(ctx, raw)
		require.NoError(t, err)
		var resp events.APIGatewayV2HTTPResponse
		require.NoError(t, json.Unmarshal(got, &resp))
		var body map[string]any
		require.NoError(t, json.Unmarshal([]byte(resp.Body), &body))
		return body
	}
	require.Equal(t, version.String(), answer("apigw-healthz.json")["version"])
	require.Equal(t, version.String(), answer("apigw-openapi.json")["info"].(map[string]any)["version"])
	answer("apigw-enqueue.json")

	var emf int
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.Contains(line, `"_aws"`) {
			continue
		}
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &doc), line)
		require.Equal(t, version.String(), doc["version"], line)
		emf++
	}
	require.NotZero(t, emf)
}

// TestColdStartRefusesATableOfAnotherLayout: the function refuses to start
// on a table that is not a Ferry table, has no layout version, or an older
// or newer one (design.md §3.10), naming the table, both versions and the
// docs, and writes nothing to it.
func TestColdStartRefusesATableOfAnotherLayout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		marker map[string]types.AttributeValue
		want   string
	}{
		{"NotFerry", nil, "table ferry is not a Ferry table"},
		{"Missing", markerItem(nil), "table ferry has no layout version"},
		{"Older", markerItem(aws.Int(outbox.Layout - 1)), fmt.Sprintf("table ferry has layout %d, older than layout %d", outbox.Layout-1, outbox.Layout)},
		{"Newer", markerItem(aws.Int(outbox.Layout + 1)), fmt.Sprintf("table ferry has layout %d, newer than layout %d", outbox.Layout+1, outbox.Layout)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := ddblocal.New()
			_, err := db.CreateTable(t.Context(), outbox.TableInput("ferry"))
			require.NoError(t, err)
			if tc.marker != nil {
				_, err = db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String("ferry"), Item: tc.marker})
				require.NoError(t, err)
			}
			before, err := db.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String("ferry")})
			require.NoError(t, err)
			_, err = newHandler(t.Context(), testEnv(nil), db, clock.System{}, io.Discard)
			require.ErrorIs(t, err, outbox.ErrLayout)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, outbox.LayoutDocs)
			after, err := db.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String("ferry")})
			require.NoError(t, err)
			require.Equal(t, before.Items, after.Items, "nothing written")
		})
	}
}

// markerItem is a marker item (M#table) with layout version lv (nil: none).
func markerItem(lv *int) map[string]types.AttributeValue {
	it := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "M#table"}, "sk": &types.AttributeValueMemberS{Value: "M"},
	}
	if lv != nil {
		it["lv"] = &types.AttributeValueMemberN{Value: fmt.Sprint(*lv)}
	}
	return it
}
