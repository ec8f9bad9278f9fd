package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/adapters/email"
	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/handlers"
	"github.com/ferryhq/ferry/internal/outbox"
	"github.com/ferryhq/ferry/internal/telemetry"
)

// sampleMessageID is SES's message id in every sample of events/.
const sampleMessageID = "0102019a1b2c3d4e-5f6a7b8c-9d0e-4f1a-8b2c-3d4e5f6a7b8c-000000"

// sesSender answers SendEmail with err (nil: accepted, as the samples'
// message id, so the samples are about the email it sent).
type sesSender struct{ err error }

func (s sesSender) SendEmail(context.Context, *sesv2.SendEmailInput, ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error) {
	if s.err != nil {
		return nil, s.err
	}
	id := sampleMessageID
	return &sesv2.SendEmailOutput{MessageId: &id}, nil
}

type sesBundle struct {
	ctx context.Context
	clk *clock.Manual
	eng *outbox.Engine
	out *bytes.Buffer
	fn  lambda.Handler
}

// setupSES is the sesevents handler over the real engine on the embedded
// DynamoDB, with the email kind sending through sender.
func setupSES(t *testing.T, sender email.Sender, db outbox.DynamoDB) *sesBundle {
	t.Helper()
	ctx := context.Background()
	// After the samples' dates: an event dated ahead of the clock is refused.
	clk := clock.NewManual(time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC))
	if db == nil {
		db = ddblocal.New(ddblocal.WithClock(clk))
	}
	reg := outbox.NewRegistry()
	em, err := email.New(email.Options{Sender: sender})
	require.NoError(t, err)
	require.NoError(t, reg.Register(em))
	eng, err := outbox.New(db, clk, reg, outbox.Config{Table: "ferry", Partitions: 2})
	require.NoError(t, err)
	require.NoError(t, eng.EnsureTable(ctx))
	out := &bytes.Buffer{}
	w := telemetry.NewLockedWriter(out)
	obs := telemetry.NewObserver(telemetry.NewMetrics(w, clk, nil).WithBase(telemetry.Dim{Name: telemetry.DimStack, Value: "Ferry"}),
		telemetry.NewLogger(w, slog.LevelInfo))
	h := &handlers.SESEventsHandler{Engine: eng, Obs: obs, Log: obs.Log, Clock: clk, ConfigurationSet: "ferry"}
	return &sesBundle{ctx: ctx, clk: clk, eng: eng, out: out, fn: lambda.NewHandler(h.Invoke)}
}

// email enqueues an email and drains it.
func (b *sesBundle) email(t *testing.T) *outbox.Action {
	t.Helper()
	r, err := b.eng.Enqueue(b.ctx, outbox.EnqueueParams{Kind: email.Kind, WorkspaceID: "default",
		Payload: json.RawMessage(`{"from":"shop@example.com","to":["ann@example.com"],"subject":"s","text":"t"}`)})
	require.NoError(t, err)
	_, err = b.eng.Sweep(b.ctx, outbox.DrainParams{})
	require.NoError(t, err)
	a, err := b.eng.ActionGet(b.ctx, r.Action.ID)
	require.NoError(t, err)
	return a
}

// sample loads events/<name> with its ferry_action_id tag set to id.
func sample(t *testing.T, name, id string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	require.NoError(t, err)
	var ev map[string]any
	require.NoError(t, json.Unmarshal(raw, &ev))
	tags := ev["detail"].(map[string]any)["mail"].(map[string]any)["tags"].(map[string]any)
	require.Equal(t, []any{"01m8kjt9g0bvpgyzgh00b1"}, tags[email.ActionIDTag])
	tags[email.ActionIDTag] = []any{email.TagValue(id)}
	out, err := json.Marshal(ev)
	require.NoError(t, err)
	return out
}

func (b *sesBundle) invoke(t *testing.T, raw []byte) handlers.SESEventResponse {
	t.Helper()
	out, err := b.fn.Invoke(b.ctx, raw)
	require.NoError(t, err)
	var resp handlers.SESEventResponse
	require.NoError(t, json.Unmarshal(out, &resp))
	return resp
}

// metric sums the EMF values of name whose line has dimension dim=value.
func metric(t *testing.T, out *bytes.Buffer, name, dim, value string) int {
	t.Helper()
	n := 0
	for _, line := range strings.Split(out.String(), "\n") {
		var doc map[string]any
		if json.Unmarshal([]byte(line), &doc) != nil || doc["_aws"] == nil {
			continue
		}
		require.Equal(t, "Ferry", doc["Stack"], "every metric carries the stack")
		if v, ok := doc[name].(float64); ok && doc[dim] == value {
			n += int(v)
		}
	}
	return n
}

// TestSESEventsRecordEachSample feeds every SES sample of events/ through
// the sesevents handler for a Ferry email: each is recorded beside its
// action (which does not change), and the API's delivery shows the most
// telling one.
func TestSESEventsRecordEachSample(t *testing.T) {
	t.Parallel()
	b := setupSES(t, sesSender{}, nil)
	a := b.email(t)
	require.Equal(t, outbox.StateDONE, a.State)
	names, err := filepath.Glob(filepath.Join("..", "..", "events", "ses-*.json"))
	require.NoError(t, err)
	require.Len(t, names, 6, "Send, Delivery, Bounce, Complaint, Reject, DeliveryDelay")
	for _, path := range names {
		name := filepath.Base(path)
		resp := b.invoke(t, sample(t, name, a.ID))
		require.Equal(t, "RECORDED", resp.Outcome, name)
		// EventBridge delivers at least once: a repeat changes nothing.
		require.Equal(t, "DUPLICATE", b.invoke(t, sample(t, name, a.ID)).Outcome, name)
	}
	after, err := b.eng.ActionGet(b.ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, a, after, "the action stays as it ended")
	d, err := b.eng.DeliveryGet(b.ctx, after)
	require.NoError(t, err)
	require.Equal(t, outbox.DeliveryRejected, d.Status)
	require.Len(t, d.Events, 6)
	for _, st := range []string{"SENT", "DELIVERED", "BOUNCED", "COMPLAINED", "REJECTED", "DELAYED"} {
		require.Equal(t, 1, metric(t, b.out, handlers.MetricDeliveryEvents, "Status", st), st)
	}
	require.NotContains(t, b.out.String(), "ann@example.com", "no address in logs or metrics")
}

// TestSESEventsDeliveryAndBounce: a Delivery and a Bounce of an email show
// up on its action, the bounce as the status.
func TestSESEventsDeliveryAndBounce(t *testing.T) {
	t.Parallel()
	b := setupSES(t, sesSender{}, nil)
	a := b.email(t)
	b.invoke(t, sample(t, "ses-delivery.json", a.ID))
	d, err := b.eng.DeliveryGet(b.ctx, a)
	require.NoError(t, err)
	require.Equal(t, outbox.DeliveryDelivered, d.Status)
	require.Equal(t, "delivered to 1 recipient in 1336 ms", d.Detail)
	b.invoke(t, sample(t, "ses-bounce.json", a.ID))
	d, err = b.eng.DeliveryGet(b.ctx, a)
	require.NoError(t, err)
	require.Equal(t, outbox.DeliveryBounced, d.Status)
	require.Equal(t, time.Date(2026, 12, 1, 10, 0, 2, 789e6, time.UTC), d.At)
}

func TestSESEventsConfirmUncertainEmails(t *testing.T) {
	t.Parallel()
	// A reset after the request left: SES may have the message.
	b := setupSES(t, sesSender{err: &smithyhttp.RequestSendError{Err: errors.New("read: connection reset by peer")}}, nil)
	a := b.email(t)
	require.Equal(t, outbox.StateUNCERTAIN, a.State, "the send's answer was lost")
	b.invoke(t, sample(t, "ses-send.json", a.ID))
	b.invoke(t, sample(t, "ses-delivery.json", a.ID))
	require.Equal(t, 1, metric(t, b.out, handlers.MetricUncertainConfirmed, "Kind", "email"), "once per action")
}

func TestSESEventsDropWhatTheyCannotPlace(t *testing.T) {
	t.Parallel()
	b := setupSES(t, sesSender{}, nil)
	require.Equal(t, "UNKNOWN_ACTION", b.invoke(t, sample(t, "ses-delivery.json", "1-999")).Outcome)
	notFerry := strings.Replace(string(sample(t, "ses-delivery.json", "1-1")), `"ferry_action_id"`, `"other_tag"`, 1)
	require.Equal(t, "NOT_FERRY", b.invoke(t, []byte(notFerry)).Outcome)
	open := strings.Replace(string(sample(t, "ses-send.json", "1-1")), `"eventType":"Send"`, `"eventType":"Open"`, 1)
	require.Equal(t, "NOT_EVIDENCE", b.invoke(t, []byte(open)).Outcome)

	r, err := b.eng.Enqueue(b.ctx, outbox.EnqueueParams{Kind: email.Kind, WorkspaceID: "default", SubjectID: "acct",
		Payload: json.RawMessage(`{"from":"shop@example.com","to":["ann@example.com"],"subject":"s","text":"t"}`)})
	require.NoError(t, err)
	_, err = b.eng.EraseSubject(b.ctx, "default", "acct")
	require.NoError(t, err)
	require.Equal(t, "UNKNOWN_ACTION", b.invoke(t, sample(t, "ses-send.json", r.Action.ID)).Outcome, "erased and gone")
	require.Equal(t, 2, metric(t, b.out, handlers.MetricDeliveryEventsDropped, "Reason", "UNKNOWN_ACTION"))
	require.Equal(t, 1, metric(t, b.out, handlers.MetricDeliveryEventsDropped, "Reason", "NOT_FERRY"))
	require.Equal(t, 1, metric(t, b.out, handlers.MetricDeliveryEventsDropped, "Reason", "NOT_EVIDENCE"))
}

// failingGets fails every GetItem once down is set: DynamoDB is
// unreachable.
type failingGets struct {
	outbox.DynamoDB
	down *atomic.Bool
}

func (f failingGets) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if f.down.Load() {
		return nil, errors.New("dial tcp: connection refused")
	}
	return f.DynamoDB.GetItem(ctx, in, o...)
}

// TestSESEventsFailWhenDynamoDBDoes: the event is not dropped but returned
// as an error, so Lambda's asynchronous retries deliver it again.
func TestSESEventsFailWhenDynamoDBDoes(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 12, 1, 9, 59, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	f := failingGets{DynamoDB: db, down: &atomic.Bool{}}
	b := setupSES(t, sesSender{}, f)
	f.down.Store(true)
	_, err := b.fn.Invoke(b.ctx, sample(t, "ses-delivery.json", outbox.NewActionID(clk.Now(), 1, 1, 1)))
	require.ErrorContains(t, err, "connection refused")
}

// TestSESEventsRefuseWhatSESDidNotSay is issue 28 item 10: an event with
// source evil.example, a foreign account, detail-type "Totally Not SES",
// no configuration-set tag, another messageId than the action's
// readback_ref, or a date in the future was recorded as evidence. Each is
// now dropped and counted by reason, and nothing is recorded; the sample
// itself still is.
func TestSESEventsRefuseWhatSESDidNotSay(t *testing.T) {
	t.Parallel()
	b := setupSES(t, sesSender{}, nil)
	a := b.email(t)
	require.Equal(t, sampleMessageID, a.ReadbackRef)
	// The function's ARN names its account (Lambda's invocation context).
	fnCtx := lambdacontext.NewContext(b.ctx, &lambdacontext.LambdaContext{
		InvokedFunctionArn: "arn:aws:lambda:eu-west-1:111122223333:function:ferry-sesevents"})
	edit := func(change func(ev, mail map[string]any)) []byte {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(sample(t, "ses-bounce.json", a.ID), &ev))
		change(ev, ev["detail"].(map[string]any)["mail"].(map[string]any))
		raw, err := json.Marshal(ev)
		require.NoError(t, err)
		return raw
	}
	future := b.clk.Now().Add(2 * time.Minute).Format(time.RFC3339Nano)
	for _, c := range []struct {
		reason string
		raw    []byte
	}{
		{"NOT_SES", edit(func(ev, _ map[string]any) { ev["source"] = "evil.example" })},
		{"NOT_SES", edit(func(ev, _ map[string]any) { ev["detail-type"] = "Totally Not SES" })},
		{"NOT_SES", edit(func(ev, _ map[string]any) { ev["detail-type"] = "Email Delivered" })}, // not a bounce's
		{"FOREIGN_ACCOUNT", edit(func(ev, _ map[string]any) { ev["account"] = "999988887777" })},
		{"OTHER_CONFIGURATION_SET", edit(func(_, mail map[string]any) {
			delete(mail["tags"].(map[string]any), "ses:configuration-set")
		})},
		{"OTHER_CONFIGURATION_SET", edit(func(_, mail map[string]any) {
			mail["tags"].(map[string]any)["ses:configuration-set"] = []any{"another"}
		})},
		{"MESSAGE_ID_MISMATCH", edit(func(_, mail map[string]any) { mail["messageId"] = "0102019aaaaaaaaa-forged-000000" })},
		{"FUTURE", edit(func(ev, _ map[string]any) {
			ev["detail"].(map[string]any)["bounce"].(map[string]any)["timestamp"] = future
		})},
		{"FUTURE", edit(func(ev, _ map[string]any) { ev["time"] = future })},
	} {
		out, err := b.fn.Invoke(fnCtx, c.raw)
		require.NoError(t, err)
		var resp handlers.SESEventResponse
		require.NoError(t, json.Unmarshal(out, &resp))
		require.Equal(t, c.reason, resp.Outcome, string(c.raw))
	}
	d, err := b.eng.DeliveryGet(b.ctx, a)
	require.NoError(t, err)
	require.Nil(t, d, "nothing was recorded")
	for reason, n := range map[string]int{"NOT_SES": 3, "FOREIGN_ACCOUNT": 1, "OTHER_CONFIGURATION_SET": 2, "MESSAGE_ID_MISMATCH": 1, "FUTURE": 2} {
		require.Equal(t, n, metric(t, b.out, handlers.MetricDeliveryEventsDropped, "Reason", reason), reason)
	}
	require.Zero(t, metric(t, b.out, handlers.MetricDeliveryEvents, "Status", "BOUNCED"))

	out, err := b.fn.Invoke(fnCtx, sample(t, "ses-bounce.json", a.ID))
	require.NoError(t, err)
	require.Contains(t, string(out), `"RECORDED"`, "SES's own event, of this account and set, is recorded")
}
