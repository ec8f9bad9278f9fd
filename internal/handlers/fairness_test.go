package handlers_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/handlers"
	"github.com/ferryhq/ferry/internal/outbox"
)

// blockingAdapter's calls with the payload {"slow":true} block until
// release is closed; others end Done at once. It counts the slow calls
// that returned.
type blockingAdapter struct {
	release chan struct{}

	mu       sync.Mutex
	returned int
}

func (*blockingAdapter) Spec() outbox.KindSpec {
	return outbox.KindSpec{Name: "b", Class: outbox.IdempotentReceiver}
}
func (*blockingAdapter) Validate(string, json.RawMessage) error { return nil }

func (b *blockingAdapter) Execute(ctx context.Context, att *outbox.Attempt) outbox.Result {
	var p struct{ Slow bool }
	_ = json.Unmarshal(att.Action.Payload, &p)
	if !p.Slow {
		return outbox.Done("")
	}
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	b.mu.Lock()
	b.returned++
	b.mu.Unlock()
	return outbox.Done("")
}

// laneIn is a lane key of workspace ws that starts in partition p of n.
func laneIn(ws string, p, n int, prefix string) string {
	for i := 0; ; i++ {
		if k := prefix + strconv.Itoa(i); outbox.LanePartition(ws, k, n) == p {
			return k
		}
	}
}

// TestSlowProviderDelaysNoOtherPartition is issue 28, item 4 in the drainer
// function: a stream batch naming six partitions, five of them with a
// provider call that never answers (and one with five such calls ahead of
// a quick action in the same batch), ends the other workspace's actions
// while every slow call is still blocked: the batch's partitions are
// drained at once, and every lane group of a claimed batch runs at once.
func TestSlowProviderDelaysNoOtherPartition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	slow := &blockingAdapter{release: make(chan struct{})}
	reg := outbox.NewRegistry()
	require.NoError(t, reg.Register(slow))
	eng, err := outbox.New(ddblocal.New(ddblocal.WithClock(clk)), clk, reg, outbox.Config{Table: "ferry", Partitions: 8})
	require.NoError(t, err)
	require.NoError(t, eng.EnsureTable(ctx))
	enqueue := func(ws, lane string, isSlow bool) outbox.Action {
		r, err := eng.Enqueue(ctx, outbox.EnqueueParams{Kind: "b", WorkspaceID: ws, LaneKey: lane,
			Payload: json.RawMessage(`{"slow":` + strconv.FormatBool(isSlow) + `}`)})
		require.NoError(t, err)
		return r.Action
	}
	// wsA: one slow webhook in each of partitions 0 to 4, five more in 5.
	for p := range 5 {
		enqueue("wsA", laneIn("wsA", p, 8, "a"), true)
	}
	for i := range 5 {
		enqueue("wsA", laneIn("wsA", 5, 8, "a5-"+strconv.Itoa(i)+"-"), true)
	}
	// wsB: one quick action behind them in partition 5, one in 6.
	quick := []outbox.Action{enqueue("wsB", laneIn("wsB", 5, 8, "b"), false), enqueue("wsB", laneIn("wsB", 6, 8, "b"), false)}

	var ev events.DynamoDBEvent
	for i, p := range []int{0, 1, 2, 3, 4, 5, 6} {
		ev.Records = append(ev.Records, events.DynamoDBEventRecord{Change: events.DynamoDBStreamRecord{
			Keys: map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute("P#" + strconv.Itoa(p))}, SequenceNumber: strconv.Itoa(i + 1)}})
	}
	h := &handlers.DrainerHandler{Engine: handlers.EnginePorts{Engine: eng}, Clock: clk, Log: slog.New(slog.DiscardHandler),
		Budget: handlers.Budget{Fallback: 10 * time.Minute}} // room for the 60 s write margin
	done := make(chan error, 1)
	go func() {
		resp, err := h.HandleStream(ctx, ev)
		if err == nil && len(resp.BatchItemFailures) > 0 {
			err = errFailures
		}
		done <- err
	}()
	stop := time.After(time.Minute) // a watchdog: it never decides a passing run
	for _, a := range quick {
		for {
			got, err := eng.ActionGet(ctx, a.ID)
			require.NoError(t, err)
			if got.State == outbox.StateDONE {
				break
			}
			select {
			case <-stop:
				t.Fatalf("wsB's action in partition %d did not end while wsA's calls were blocked (%s)", a.Partition, got.State)
			case <-time.After(time.Millisecond):
			}
		}
	}
	slow.mu.Lock()
	require.Zero(t, slow.returned, "no slow call had returned: nothing waited for one")
	slow.mu.Unlock()
	close(slow.release)
	require.NoError(t, <-done)
}

var errFailures = errorString("the stream batch reported failures")

type errorString string

func (e errorString) Error() string { return string(e) }
