package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/ferryhq/ferry/internal/clock"
)

// Flusher writes buffered metrics (telemetry.Observer).
type Flusher interface {
	Flush() error
}

// DrainerHandler is the drainer function: EventBridge scheduled events sweep
// every partition (the backstop); DynamoDB Streams batches wake only the
// partitions their records' keys name, and report the records of partitions
// that could not be drained as batch item failures so Lambda retries them.
type DrainerHandler struct {
	Engine  Drainer
	Clock   clock.Clock
	Budget  Budget
	Log     *slog.Logger
	Metrics Flusher // flushed after every invocation; may be nil
	// WriteMargin is the engine's write margin: an invocation whose drain
	// deadline leaves less than it can start no attempt, which is logged
	// as a configuration error (the function's timeout is too short).
	WriteMargin time.Duration
	// StreamBudget is how long a stream batch's drains claim (default
	// DefaultStreamBudget); what they claimed runs to its end. The batch's
	// partitions are drained at once, each under its own claim fence, and
	// Lambda hands a shard's next batch (in a parallelized shard: the next
	// batch of the same records' keys) only when this invocation returns,
	// so a slow provider holds the records behind it for at most this
	// budget plus one attempt (design.md §6). Work left at the budget is
	// no failure: the scheduled sweep and the next wake-up take it.
	StreamBudget time.Duration
	// Parallel, when set, runs a stream batch's partition drains, f(0..n-1)
	// all at once (outbox.Parallel); nil: a goroutine each. The simulator
	// (internal/sim) sets it so that it interleaves them on its schedule.
	Parallel func(n, limit int, f func(i int, free func()))
}

// DefaultStreamBudget is DrainerHandler.StreamBudget's default.
const DefaultStreamBudget = 10 * time.Second

// SweepResponse answers a scheduled invocation.
type SweepResponse struct {
	Claimed  int  `json:"claimed"`
	Started  int  `json:"started"`
	Ended    int  `json:"ended"`
	Released int  `json:"released"`
	More     bool `json:"more"`
}

// ErrUnknownEvent is returned for an event that is neither a scheduled event
// nor a DynamoDB Streams batch.
var ErrUnknownEvent = errors.New("drainer: unknown event (want an EventBridge scheduled event or a DynamoDB Streams batch)")

// Invoke handles one invocation. The answer is a SweepResponse for a
// scheduled event and an events.DynamoDBEventResponse for a stream batch.
func (h *DrainerHandler) Invoke(ctx context.Context, raw json.RawMessage) (any, error) {
	defer h.flush()
	var probe struct {
		Records    []json.RawMessage `json:"Records"`
		DetailType *string           `json:"detail-type"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("drainer: decoding event: %w", err)
	}
	switch {
	case probe.Records != nil:
		var ev events.DynamoDBEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("drainer: decoding DynamoDB Streams batch: %w", err)
		}
		return h.HandleStream(ctx, ev)
	case probe.DetailType != nil && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")):
		var ev events.EventBridgeEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("drainer: decoding scheduled event: %w", err)
		}
		return h.HandleSchedule(ctx, ev)
	}
	return nil, ErrUnknownEvent
}

// HandleSchedule sweeps every partition until nothing is due or the claim
// deadline passes.
func (h *DrainerHandler) HandleSchedule(ctx context.Context, ev events.EventBridgeEvent) (*SweepResponse, error) {
	until := h.claimUntil(ctx)
	var resp SweepResponse
	for {
		st, err := h.Engine.Sweep(ctx, until)
		resp.add(st)
		if err != nil {
			h.Log.ErrorContext(ctx, "sweep failed", slog.String("event.id", ev.ID), slog.Any("error", err))
			return &resp, fmt.Errorf("drainer: sweep: %w", err)
		}
		if !st.More || st.Claimed == 0 || !h.Clock.Now().Before(until) || ctx.Err() != nil {
			break
		}
	}
	h.Log.InfoContext(ctx, "sweep finished", slog.String("event.id", ev.ID),
		slog.Int("claimed", resp.Claimed), slog.Int("ended", resp.Ended),
		slog.Int("released", resp.Released), slog.Bool("more", resp.More))
	return &resp, nil
}

// HandleStream drains the partitions named by the batch's records (their
// "pk" key, "P#<n>"), all at once, claiming for at most StreamBudget.
// Records that name no partition (idempotency records, other items) need
// nothing. The records of a partition whose drain failed or could not
// start before the claim deadline are reported as failures.
func (h *DrainerHandler) HandleStream(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	until := h.claimUntil(ctx)
	budget := h.StreamBudget
	if budget <= 0 {
		budget = DefaultStreamBudget
	}
	w := DrainWindow{Deadline: until, ClaimUntil: h.Clock.Now().Add(budget)}
	if w.ClaimUntil.After(until) {
		w.ClaimUntil = until
	}
	byPartition := map[int][]string{} // partition -> sequence numbers
	for _, r := range ev.Records {
		pk, ok := r.Change.Keys["pk"]
		if !ok || pk.DataType() != events.DataTypeString {
			continue
		}
		p, ok := h.Engine.PartitionOf(pk.String())
		if !ok {
			continue
		}
		byPartition[p] = append(byPartition[p], r.Change.SequenceNumber)
	}
	partitions := make([]int, 0, len(byPartition))
	for p := range byPartition {
		partitions = append(partitions, p)
	}
	sort.Ints(partitions)

	resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	var total SweepResponse
	failed := make([]bool, len(partitions))
	var mu sync.Mutex // guards total
	h.allAtOnce(len(partitions), func(i int) {
		p := partitions[i]
		var mine SweepResponse
		err := h.drainPartition(ctx, p, w, &mine)
		mu.Lock()
		total.addResponse(mine)
		mu.Unlock()
		if err != nil {
			h.Log.WarnContext(ctx, "partition not drained; its records will be retried",
				slog.Int("partition", p), slog.Any("error", err))
			failed[i] = true
		}
	})
	for i, p := range partitions { // failures in partition order
		if !failed[i] {
			continue
		}
		for _, seq := range byPartition[p] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: seq})
		}
	}
	h.Log.InfoContext(ctx, "stream batch drained", slog.Int("records", len(ev.Records)),
		slog.Int("partitions", len(partitions)), slog.Int("failed_records", len(resp.BatchItemFailures)),
		slog.Int("claimed", total.Claimed), slog.Int("ended", total.Ended))
	return resp, nil
}

// allAtOnce calls f(0..n-1) at once (Parallel, or a goroutine each) and
// returns when every call has returned.
func (h *DrainerHandler) allAtOnce(n int, f func(i int)) {
	if h.Parallel != nil {
		h.Parallel(n, n, func(i int, _ func()) { f(i) })
		return
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { f(i) })
	}
	wg.Wait()
}

func (h *DrainerHandler) claimUntil(ctx context.Context) time.Time {
	until := h.Budget.ClaimUntil(ctx, h.Clock)
	if left := until.Sub(h.Clock.Now()); h.WriteMargin > 0 && left <= h.WriteMargin {
		h.Log.ErrorContext(ctx, "the invocation is too short to start any attempt: raise the function's timeout above the write margin",
			slog.Duration("time_left", left), slog.Duration("write_margin", h.WriteMargin))
	}
	return until
}

var errOutOfTime = errors.New("claim deadline reached before the partition was drained")

// drainPartition drains p until nothing is due there or w's claim bound
// passes. Leftover work after it is not a failure: the scheduled sweep and
// the next wake-up take it.
func (h *DrainerHandler) drainPartition(ctx context.Context, p int, w DrainWindow, total *SweepResponse) error {
	if !h.Clock.Now().Before(w.Deadline) {
		return errOutOfTime
	}
	for {
		st, err := h.Engine.DrainPartition(ctx, p, w)
		total.add(st)
		if err != nil {
			return fmt.Errorf("draining partition %d: %w", p, err)
		}
		if !st.More || st.Claimed == 0 || !h.Clock.Now().Before(w.ClaimUntil) || ctx.Err() != nil {
			return nil
		}
	}
}

func (h *DrainerHandler) flush() {
	if h.Metrics == nil {
		return
	}
	if err := h.Metrics.Flush(); err != nil {
		h.Log.Error("flushing metrics failed", slog.Any("error", err))
	}
}

// addResponse adds another response's counts; More is true if either's is.
func (r *SweepResponse) addResponse(o SweepResponse) {
	r.Claimed += o.Claimed
	r.Started += o.Started
	r.Ended += o.Ended
	r.Released += o.Released
	r.More = r.More || o.More
}

func (r *SweepResponse) add(st DrainStats) {
	r.Claimed += st.Claimed
	r.Started += st.Started
	r.Ended += st.Ended
	r.Released += st.Released
	r.More = st.More
}
