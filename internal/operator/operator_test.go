package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

type testBundle struct {
	ctx context.Context
	clk *clock.Manual
	db  *ddblocal.DB
	s   *Session
	out *bytes.Buffer
	err *bytes.Buffer
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	e, err := outbox.New(db, clk, outbox.NewRegistry(), outbox.Config{Table: "ferry", Partitions: 2})
	require.NoError(t, err)
	require.NoError(t, e.EnsureTable(ctx))
	s, err := NewSession(ctx, db, clk, Target{Table: "ferry", Partitions: 2})
	require.NoError(t, err)
	tb := &testBundle{ctx: ctx, clk: clk, db: db, s: s, out: &bytes.Buffer{}, err: &bytes.Buffer{}}
	s.Out, s.Err = tb.out, tb.err
	return tb
}

func (tb *testBundle) enqueue(t *testing.T, p outbox.EnqueueParams) outbox.Action {
	t.Helper()
	if p.Kind == "" {
		p.Kind = "webhook"
	}
	if p.WorkspaceID == "" {
		p.WorkspaceID = "default"
	}
	p.Payload = json.RawMessage(`{"url":"https://example.com/hook"}`)
	if p.Kind == "email" {
		p.Payload = json.RawMessage(`{"from":"shop@example.com","to":["ann@example.com"],"subject":"s","text":"t"}`)
	}
	r, err := tb.s.Engine.Enqueue(tb.ctx, p)
	require.NoError(t, err)
	return r.Action
}

func TestMeterAddsUpWhatDynamoDBReports(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	before := tb.s.Meter.Usage()
	require.Equal(t, 3, before.Calls, "the session checked the table, its layout marker and its partition map (which records the count: no partition probe)")
	tb.enqueue(t, outbox.EnqueueParams{})
	u := tb.s.Meter.Usage()
	require.Greater(t, u.WriteUnits, 0.0, "an enqueue writes")
	require.NoError(t, tb.s.Status(tb.ctx, StatusParams{}))
	after := tb.s.Meter.Usage()
	require.Greater(t, after.ReadUnits, u.ReadUnits)
	require.Equal(t, u.WriteUnits, after.WriteUnits, "status only reads")
	require.Contains(t, tb.out.String(), "read units")
}

func TestConfirmOnATerminal(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.enqueue(t, outbox.EnqueueParams{})
	tb.s.Interactive = true
	tb.s.In = strings.NewReader("n\n")
	err := tb.s.Cancel(tb.ctx, a.ID)
	require.Equal(t, ExitNotConfirmed, ExitCode(err))
	require.Contains(t, tb.err.String(), "[y/N]")
	got, err := tb.s.Engine.ActionGet(tb.ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, outbox.StateADMITTED, got.State, "not cancelled")

	tb.s.In = strings.NewReader("y\n")
	require.NoError(t, tb.s.Cancel(tb.ctx, a.ID))
	got, err = tb.s.Engine.ActionGet(tb.ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, outbox.StateCANCELLED, got.State)
}

func TestEraseDrawsProgressOnATerminal(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for range 3 {
		tb.enqueue(t, outbox.EnqueueParams{SubjectID: "s"})
	}
	tb.enqueue(t, outbox.EnqueueParams{WorkspaceID: "other", SubjectID: "s"})
	tb.s.Interactive, tb.s.Yes = true, true
	require.NoError(t, tb.s.Erase(tb.ctx, EraseParams{SubjectID: "s", AllWorkspaces: true}))
	require.Contains(t, tb.err.String(), "] 4/4")
	require.Contains(t, tb.out.String(), "subject s: 4 actions (default: ADMITTED 3; other: ADMITTED 1)")
	require.Contains(t, tb.out.String(), "erased 4 actions")
}

func TestRetryExplainsThereIsNone(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.enqueue(t, outbox.EnqueueParams{LaneKey: "order-7", IdempotencyKey: "k", SubjectID: "acct"})
	err := tb.s.Retry(tb.ctx, a.ID)
	require.Equal(t, ExitRefused, ExitCode(err))
	require.Contains(t, err.Error(), "not ended")
	_, err = tb.s.Engine.Cancel(tb.ctx, a.ID)
	require.NoError(t, err)
	err = tb.s.Retry(tb.ctx, a.ID)
	require.Equal(t, ExitRefused, ExitCode(err))
	require.Equal(t, "An ended action never changes: there is no retry of "+a.ID+". To try again, the application enqueues a new action: "+
		"kind webhook, workspace_id default, lane_key order-7, subject_id acct, and its payload (an ended action keeps none), "+
		"with a new idempotency_key (k returns this action while it is retained).", err.Error())
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	require.Equal(t, ExitOK, ExitCode(nil))
	require.Equal(t, ExitNotFound, ExitCode(outbox.ErrNotFound))
	require.Equal(t, ExitRefused, ExitCode(&outbox.TransitionError{ID: "1-1", From: outbox.StateDONE, To: outbox.StateCANCELLED}))
	require.Equal(t, ExitUsage, ExitCode(&outbox.ValidationError{Field: "limit"}))
	denied := &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not authorized to perform: dynamodb:Scan"}
	require.Equal(t, ExitDenied, ExitCode(denied))
	require.Contains(t, classify(denied).Error(), "dynamodb:Scan", "the message names the permission")
	require.Equal(t, ExitFailed, ExitCode(errors.New("boom")))
}

// TestGetShowsDeliveryEvidence: ferry actions get shows an email's
// delivery evidence, in the table and in JSON.
func TestGetShowsDeliveryEvidence(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.enqueue(t, outbox.EnqueueParams{Kind: "email"})
	at := tb.clk.Now()
	for _, st := range []outbox.DeliveryStatus{outbox.DeliveryDelivered, outbox.DeliveryBounced} {
		_, err := tb.s.Engine.DeliveryRecord(tb.ctx, a.ID, outbox.DeliveryEvent{Status: st, At: at, Detail: "1 recipient"})
		require.NoError(t, err)
		at = at.Add(time.Second)
	}
	require.NoError(t, tb.s.Get(tb.ctx, a.ID))
	require.Contains(t, tb.out.String(), "BOUNCED at 2026-12-01T09:00:01Z (1 recipient)")
	tb.out.Reset()
	tb.s.JSON = true
	require.NoError(t, tb.s.Get(tb.ctx, a.ID))
	var v struct {
		Delivery struct {
			Status string
			Events []any
		}
	}
	require.NoError(t, json.Unmarshal(tb.out.Bytes(), &v))
	require.Equal(t, "BOUNCED", v.Delivery.Status)
	require.Len(t, v.Delivery.Events, 2)
}

// TestPartitionsSetsTheCountLive: `ferry partitions --set` asks first, then
// records the count in the partition map (ADR 0011); new actions use it
// and a session given the old --partitions still opens.
func TestPartitionsSetsTheCountLive(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	require.NoError(t, tb.s.Partitions(tb.ctx, 0))
	require.Contains(t, tb.out.String(), "count 2")
	var ex *Error
	require.ErrorAs(t, tb.s.Partitions(tb.ctx, 8), &ex)
	require.Equal(t, ExitNotConfirmed, ex.Code)
	tb.s.Yes = true
	require.NoError(t, tb.s.Partitions(tb.ctx, 8))
	require.Contains(t, tb.out.String(), "count 8 (new lanes and keyless actions), live 8, kept 8")
	// What the change costs is said before it is made, --yes or not.
	require.Contains(t, tb.err.String(), "8 partitions cost about 23 k write and 17 k read units a day idle (2 now: 6 k and 4 k)")
	seen := map[int]bool{}
	for range 16 {
		seen[tb.enqueue(t, outbox.EnqueueParams{}).Partition] = true
	}
	require.Len(t, seen, 8, "keyless actions spread over the new count")
	_, err := NewSession(tb.ctx, tb.db, tb.clk, Target{Table: "ferry", Partitions: 2})
	require.NoError(t, err, "the map says where rows are: the old --partitions is no longer refused")
	require.ErrorAs(t, tb.s.Partitions(tb.ctx, 5000), &ex)
	require.Equal(t, ExitUsage, ex.Code)
}

// TestStatusTellsABlockedLaneFromABacklog is issue 28, item 8 at the
// command line: members waiting behind their lane's head (here a
// proposal) are BLOCKED, not DUE, and their lane is stuck once they have
// waited past the stuck bound; the JSON says the same.
func TestStatusTellsABlockedLaneFromABacklog(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.enqueue(t, outbox.EnqueueParams{LaneKey: "order-7", Propose: true})
	for range 5 {
		tb.enqueue(t, outbox.EnqueueParams{LaneKey: "order-7"})
	}
	tb.clk.Advance(20 * time.Minute)
	require.NoError(t, tb.s.Status(tb.ctx, StatusParams{}))
	lines := strings.Split(tb.out.String(), "\n")
	var header, total []string
	for _, l := range lines {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "PARTITION":
			header = f
		case len(f) > 0 && f[0] == "total":
			total = f
		}
	}
	require.Len(t, total, len(header), tb.out.String())
	col := map[string]string{}
	for i, h := range header {
		col[h] = total[i]
	}
	require.Equal(t, "0", col["DUE"], tb.out.String())
	require.Equal(t, "5", col["BLOCKED"])
	require.Equal(t, "1", col["STUCK-HEADS"])
	require.Equal(t, "-", col["OLDEST-DUE"])
	tb.out.Reset()
	tb.s.JSON = true
	require.NoError(t, tb.s.Status(tb.ctx, StatusParams{}))
	var v struct {
		Total struct {
			Due, Blocked     int
			Stuck            int     `json:"stuck_lane_heads"`
			OldestBlockedAge float64 `json:"oldest_blocked_age_seconds"`
		}
	}
	require.NoError(t, json.Unmarshal(tb.out.Bytes(), &v))
	require.Equal(t, 0, v.Total.Due)
	require.Equal(t, 5, v.Total.Blocked)
	require.Equal(t, 1, v.Total.Stuck)
	require.InDelta(t, 1200, v.Total.OldestBlockedAge, 1)
}

// TestPartitionsFlagIsReadOnlyWithoutARecordedCount is what docs/api.md
// says of --partitions (issue 28 item 15: `ferry status --partitions 2` on
// a table of more partitions exited 0 while the docs said it is refused):
// once the partition map records a count, that count is used and the flag
// is not read; a table whose map records none (a deployed stack's before
// its reaper ran) with rows in partitions beyond the flag is refused,
// exit 2, naming the flag.
func TestPartitionsFlagIsReadOnlyWithoutARecordedCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	e, err := outbox.New(db, clk, outbox.NewRegistry(), outbox.Config{Table: "ferry", Partitions: 8})
	require.NoError(t, err)
	require.NoError(t, e.EnsureTable(ctx))
	s, err := NewSession(ctx, db, clk, Target{Table: "ferry", Partitions: 8})
	require.NoError(t, err)
	inTwo := false
	for i := 0; i < 64 && !inTwo; i++ {
		r, err := s.Engine.Enqueue(ctx, outbox.EnqueueParams{Kind: "webhook", WorkspaceID: "default",
			Payload: json.RawMessage(`{"url":"https://example.com/hook"}`)})
		require.NoError(t, err)
		inTwo = r.Action.Partition == 2
	}
	require.True(t, inTwo, "an action in partition 2")

	s, err = NewSession(ctx, db, clk, Target{Table: "ferry", Partitions: 2})
	require.NoError(t, err, "the map records 8: --partitions 2 is not read")
	layout, err := s.Engine.PartitionLayout(ctx)
	require.NoError(t, err)
	require.Equal(t, 8, layout.Count)

	_, err = db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("ferry"), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "M#partitions"}, "sk": &types.AttributeValueMemberS{Value: "M"}}})
	require.NoError(t, err)
	_, err = NewSession(ctx, db, clk, Target{Table: "ferry", Partitions: 2})
	var ex *Error
	require.ErrorAs(t, err, &ex)
	require.Equal(t, ExitUsage, ex.Code)
	require.ErrorContains(t, err, `table "ferry" has partitions beyond 2: pass the deployment's FERRY_PARTITIONS as --partitions`)
	_, err = NewSession(ctx, db, clk, Target{Table: "ferry", Partitions: 8})
	require.NoError(t, err, "the deployment's count opens it")
}
