package eventbridge_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awseb "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/adapters/eventbridge"
	"github.com/ferryhq/ferry/internal/outbox"
)

// ebStandIn is a local stand-in for EventBridge speaking its JSON 1.1 wire
// format (POST /, X-Amz-Target: AWSEvents.PutEvents).
type ebStandIn struct {
	*httptest.Server
	mu      sync.Mutex
	entries []putEntry
	targets []string
	respond http.HandlerFunc
}

type putEntry struct {
	Source, DetailType, Detail, EventBusName string
}

func newStandIn(t *testing.T, respond http.HandlerFunc) *ebStandIn {
	t.Helper()
	s := &ebStandIn{respond: respond}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Entries []putEntry }
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &in)
		s.mu.Lock()
		s.entries = append(s.entries, in.Entries...)
		s.targets = append(s.targets, r.Method+" "+r.URL.Path+" "+r.Header.Get("X-Amz-Target")+" "+r.Header.Get("Content-Type"))
		s.mu.Unlock()
		s.respond(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *ebStandIn) received() []putEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]putEntry(nil), s.entries...)
}

func answer(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		_, _ = io.WriteString(w, body)
	}
}

func awsError(status int, code string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"__type":"`+code+`","message":"stand-in says no"}`)
	}
}

func entryFailed(code string) http.HandlerFunc {
	return answer(`{"FailedEntryCount":1,"Entries":[{"ErrorCode":"` + code + `","ErrorMessage":"stand-in entry error"}]}`)
}

func client(endpoint string) *awseb.Client {
	return awseb.New(awseb.Options{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDSTANDIN", "standin-secret", ""),
	})
}

func newAdapter(t testing.TB, endpoint string) *eventbridge.Adapter {
	t.Helper()
	a, err := eventbridge.New(eventbridge.Options{Client: client(endpoint)})
	require.NoError(t, err)
	return a
}

const payload = `{"event_bus":"orders","source":"shop.orders","detail_type":"OrderShipped","detail":{"order":42,"items":["a","b"]}}`

func action(id string) outbox.Action {
	return outbox.Action{ID: id, Kind: eventbridge.Kind, WorkspaceID: "ws1", Payload: json.RawMessage(payload)}
}

func TestPutEventCarriesTheActionID(t *testing.T) {
	t.Parallel()
	eb := newStandIn(t, answer(`{"FailedEntryCount":0,"Entries":[{"EventId":"11710aed-b79e-4468-a20b-bb3c0c3b4860"}]}`))
	a := newAdapter(t, eb.URL)
	res := a.Execute(context.Background(), &outbox.Attempt{Action: action("5-000007"), Number: 1})
	require.Equal(t, outbox.OutcomeDone, res.Outcome, res.Err)
	require.Equal(t, "11710aed-b79e-4468-a20b-bb3c0c3b4860", res.ReadbackRef)

	require.Equal(t, []string{"POST / AWSEvents.PutEvents application/x-amz-json-1.1"}, eb.targets)
	got := eb.received()
	require.Len(t, got, 1)
	require.Equal(t, "orders", got[0].EventBusName)
	require.Equal(t, "shop.orders", got[0].Source)
	require.Equal(t, "OrderShipped", got[0].DetailType)
	require.JSONEq(t, `{"order":42,"items":["a","b"],"ferry_action_id":"5-000007"}`, got[0].Detail)

	// A retry carries the same id, so consumers can drop the duplicate.
	res = a.Execute(context.Background(), &outbox.Attempt{Action: action("5-000007"), Number: 2})
	require.Equal(t, outbox.OutcomeDone, res.Outcome, res.Err)
	require.Equal(t, got[0].Detail, eb.received()[1].Detail)
}

func TestOutcomes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		respond http.HandlerFunc
		outcome outbox.Outcome
		reason  outbox.StopReason
		wait    time.Duration
	}{
		{"EntryThrottled", entryFailed("ThrottlingException"), outbox.OutcomeDefer, "", 5 * time.Second},
		{"EntryInternalFailure", entryFailed("InternalFailure"), outbox.OutcomeRetry, "", 0},
		{"EntryAccessDenied", entryFailed("AccessDeniedException"), outbox.OutcomeFailed, outbox.StopRejected, 0},
		{"EntryMalformedDetail", entryFailed("MalformedDetail"), outbox.OutcomeFailed, outbox.StopRejected, 0},
		{"EntryNotAuthorizedForSource", entryFailed("NotAuthorizedForSourceException"), outbox.OutcomeFailed, outbox.StopRejected, 0},
		{"EntryInvalidArgument", entryFailed("InvalidArgument"), outbox.OutcomeFailed, outbox.StopRejected, 0},
		{"NoEntries", answer(`{"FailedEntryCount":0,"Entries":[]}`), outbox.OutcomeRetry, "", 0},
		{"CallThrottled", awsError(400, "ThrottlingException"), outbox.OutcomeDefer, "", 5 * time.Second},
		{"CallValidation", awsError(400, "ValidationException"), outbox.OutcomeFailed, outbox.StopRejected, 0},
		{"CallBusNotFound", awsError(400, "ResourceNotFoundException"), outbox.OutcomeFailed, outbox.StopRejected, 0},
		{"CallUnrecognizedClient", awsError(400, "UnrecognizedClientException"), outbox.OutcomeRetry, "", 0},
		{"CallInternal", awsError(500, "InternalException"), outbox.OutcomeRetry, "", 0},
		{"CallUnavailable", awsError(503, "ServiceUnavailable"), outbox.OutcomeRetry, "", 0},
		{"Dropped", func(w http.ResponseWriter, _ *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}, outbox.OutcomeRetry, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			eb := newStandIn(t, c.respond)
			a := newAdapter(t, eb.URL)
			res := a.Execute(context.Background(), &outbox.Attempt{Action: action("1-1"), Number: 1})
			require.Equal(t, c.outcome, res.Outcome, res.Err)
			require.Equal(t, c.reason, res.StopReason)
			require.Equal(t, c.wait, res.Wait)
			require.Error(t, res.Err)
			require.Len(t, eb.received(), 1) // the SDK's retries are off
		})
	}
}

func TestConnectionRefusedRetries(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	a := newAdapter(t, "http://"+addr)
	res := a.Execute(context.Background(), &outbox.Attempt{Action: action("1-2"), Number: 1})
	require.Equal(t, outbox.OutcomeRetry, res.Outcome)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	a := newAdapter(t, "http://127.0.0.1:1")
	require.NoError(t, a.Validate("", json.RawMessage(payload)))
	require.NoError(t, a.Validate("", json.RawMessage(`{"source":"s","detail_type":"t","detail":{}}`)))
	long := make([]byte, eventbridge.MaxEntrySize)
	for i := range long {
		long[i] = 'x'
	}
	bigDetail, err := json.Marshal(map[string]any{"source": "s", "detail_type": "t", "detail": map[string]string{"x": string(long)}})
	require.NoError(t, err)
	bad := map[string]string{
		`{"detail_type":"t","detail":{}}`:                                  "source",
		`{"source":"s","detail":{}}`:                                       "detail_type",
		`{"source":"s","detail_type":"t"}`:                                 "detail",
		`{"source":"s","detail_type":"t","detail":null}`:                   "detail",
		`{"source":"s","detail_type":"t","detail":[1,2]}`:                  "detail",
		`{"source":"s","detail_type":"t","detail":"text"}`:                 "detail",
		`{"source":"s","detail_type":"t","detail":{"ferry_action_id":1}}`:  "detail.ferry_action_id",
		`{"source":"s","detail_type":"t","detail":{},"resources":["arn"]}`: "resources",
		string(bigDetail): "detail",
	}
	for p, field := range bad {
		var pe *outbox.PayloadError
		require.ErrorAs(t, a.Validate("", json.RawMessage(p)), &pe, p[:min(len(p), 80)])
		require.Equal(t, field, pe.Field, p[:min(len(p), 80)])
	}
}
