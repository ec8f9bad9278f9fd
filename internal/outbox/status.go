package outbox

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// StatusParams bounds what Status reads, so that its cost does not grow
// with the table.
type StatusParams struct {
	// EndedSince starts the count of ended actions (zero: none counted).
	EndedSince time.Time
	// MaxDuePages bounds the due-index pages read per partition (a page
	// holds up to 1 MB, thousands of rows); 0: DefaultStatusDuePages.
	MaxDuePages int
	// MaxEndedRows bounds the ended rows read per partition; 0:
	// DefaultStatusEndedRows.
	MaxEndedRows int
	// Concurrency is how many partitions are read at once (0 or 1: one
	// after another); the reads of a partition stay sequential.
	Concurrency int
	// Workspaces, when set, counts only the actions of these workspaces
	// (a tenant's view: the reads are the same). The claim fences'
	// in-flight entries are the partition's, whatever their workspace, and
	// erasure tombstones, which keep no workspace, are left out.
	Workspaces []string
}

// counts reports whether the status counts an action of workspace ws.
func (p *StatusParams) counts(ws string) bool {
	return p.Workspaces == nil || slices.Contains(p.Workspaces, ws)
}

// The defaults of StatusParams.
const (
	DefaultStatusDuePages  = 4
	DefaultStatusEndedRows = 5000
)

// PartitionStatus is one partition's status: the reaper's gauges (due
// depth, claimed depth, stuck lane heads, oldest due age) and what else an
// operator asks first.
type PartitionStatus struct {
	PartitionGauges
	// Waiting counts ADMITTED actions not due yet (a retry's backoff, a
	// deferral, a later next_attempt_at).
	Waiting int
	// LeaseExpired counts EXECUTING actions whose lease ran out: a reclaim
	// or the reaper takes them. They are in DueDepth (or BlockedDepth) too.
	LeaseExpired int
	// Inflight counts the entries of the claim fence's in-flight map.
	Inflight int
	// Ended counts the actions ended since StatusParams.EndedSince, by
	// state; erasure tombstones count as "ERASED".
	Ended map[string]int
	// Truncated: a bound of StatusParams stopped a read, so the counts are
	// lower bounds.
	Truncated bool
}

// Status is the outbox's status, per partition and in total (the oldest
// due age of the total is the oldest of all).
type Status struct {
	At         time.Time
	EndedSince time.Time
	Partitions []PartitionStatus
	Total      PartitionStatus
}

// StatusGet reads, without writing anything, what the reaper's gauges compute
// for every partition and in total, plus the waiting and lease-expired
// actions, the claim fences' in-flight entries and the
// actions ended since p.EndedSince by state. Unlike the reaper it counts
// every row, whatever its kind. Its reads are bounded per partition: the
// due index's first p.MaxDuePages pages, the fence item, at most 1,000
// in-flight rows (ten BatchGetItem calls), and the retention journal's
// items (design.md §3.6) of the endings since p.EndedSince with at most
// p.MaxEndedRows of their rows. The ended count relies on the engine's
// Retention matching the deployment's: a longer one misses endings (their
// journal items expire before the range read), a shorter one reads more.
func (e *Engine) StatusGet(ctx context.Context, p StatusParams) (*Status, error) {
	if p.MaxDuePages <= 0 {
		p.MaxDuePages = DefaultStatusDuePages
	}
	if p.MaxEndedRows <= 0 {
		p.MaxEndedRows = DefaultStatusEndedRows
	}
	now := e.clk.Now().UTC()
	st := &Status{At: now, EndedSince: p.EndedSince, Total: PartitionStatus{Ended: map[string]int{}}}
	kept, err := e.keptPartitions(ctx)
	if err != nil {
		return nil, err
	}
	st.Partitions = make([]PartitionStatus, kept)
	errs := make([]error, kept)
	next := make(chan int, kept)
	for part := range kept {
		next <- part
	}
	close(next)
	var wg sync.WaitGroup
	for range max(1, min(p.Concurrency, kept)) {
		wg.Go(func() {
			for part := range next {
				st.Partitions[part], errs[part] = e.partitionStatus(ctx, part, p, now)
			}
		})
	}
	wg.Wait()
	for part, ps := range st.Partitions {
		if errs[part] != nil {
			return nil, fmt.Errorf("error reading the status of partition %d: %w", part, errs[part])
		}
		st.Total.add(ps)
	}
	return st, nil
}

func (t *PartitionStatus) add(ps PartitionStatus) {
	t.DueDepth += ps.DueDepth
	t.BlockedDepth += ps.BlockedDepth
	t.OldestBlockedAge = max(t.OldestBlockedAge, ps.OldestBlockedAge)
	t.ClaimedDepth += ps.ClaimedDepth
	t.StuckLaneHeads += ps.StuckLaneHeads
	t.OldestDueAge = max(t.OldestDueAge, ps.OldestDueAge)
	t.InflightUnread += ps.InflightUnread
	t.Waiting += ps.Waiting
	t.LeaseExpired += ps.LeaseExpired
	t.Inflight += ps.Inflight
	for k, n := range ps.Ended {
		t.Ended[k] += n
	}
	t.Truncated = t.Truncated || ps.Truncated
}

func (e *Engine) partitionStatus(ctx context.Context, part int, p StatusParams, now time.Time) (PartitionStatus, error) {
	ps := PartitionStatus{PartitionGauges: PartitionGauges{Partition: part}, Ended: map[string]int{}}
	bl, err := e.readBacklog(ctx, part, p.MaxDuePages)
	if err != nil {
		return ps, err
	}
	ps.InflightUnread, ps.Inflight, ps.Truncated = bl.unread, bl.inflight, bl.truncated
	due := newDueGauges(bl, now, e.cfg.StuckAfter)
	for i := range bl.rows {
		a := &bl.rows[i]
		if !p.counts(a.WorkspaceID) {
			continue
		}
		switch {
		case a.State == StateADMITTED && a.NextAttemptAt.After(now):
			ps.Waiting++
		case a.State == StateADMITTED:
			due.add(a, &ps.PartitionGauges)
		case a.State == StateEXECUTING && a.LeaseExpiresAt.After(now):
			ps.ClaimedDepth++
		case a.State == StateEXECUTING:
			ps.LeaseExpired++
			due.add(a, &ps.PartitionGauges)
		}
	}
	due.finish(&ps.PartitionGauges)
	if p.EndedSince.IsZero() {
		return ps, nil
	}
	truncated, err := e.countEnded(ctx, part, p, ps.Ended)
	ps.Truncated = ps.Truncated || truncated
	return ps, err
}

// countEnded counts, by state, partition part's actions ended since
// `since`. The retention journal lists every ending under its expiry (end
// plus retention, which kinds can only lengthen), so the items with an
// expiry from since+Retention on name them all. Their rows are then read by
// Queries of the seq ranges they cluster in (billed on the bytes read, about
// a tenth of a read unit for a small ended row, where reading rows one by
// one costs half a unit each); every row of a range that ended since
// `since` counts, listed or not (an ending whose journal write was lost
// included).
func (e *Engine) countEnded(ctx context.Context, part int, p StatusParams, into map[string]int) (bool, error) {
	since := p.EndedSince
	seqs, truncated, err := e.journaledSince(ctx, part, since, p.MaxEndedRows)
	if err != nil {
		return truncated, err
	}
	now := e.clk.Now()
	for _, r := range seqRanges(seqs, endedRangeGap) {
		var start map[string]types.AttributeValue
		for {
			q, err := e.db.Query(ctx, &dynamodb.QueryInput{
				TableName:                aws.String(e.cfg.Table),
				KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
				FilterExpression:         aws.String("#ea >= :since"),
				ProjectionExpression:     aws.String("#st, #sr, #ea, #ttl, #ws"),
				ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#sk": attrSK, "#st": attrState, "#sr": attrStop, "#ea": attrEnded, "#ttl": attrTTL, "#ws": attrWorkspace},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":pk": avS(partitionPK(part)), ":lo": avS(actionSK(r[0])), ":hi": avS(actionSK(r[1])), ":since": avMs(since),
				},
				ExclusiveStartKey: start,
			})
			if err != nil {
				return truncated, fmt.Errorf("error reading ended rows: %w", err)
			}
			for _, it := range q.Items {
				st := State(getS(it, attrState))
				switch {
				case !st.Ended() || expiredByTTL(it, now) || !p.counts(getS(it, attrWorkspace)):
				case StopReason(getS(it, attrStop)) == StopErased:
					into[string(StopErased)]++
				default:
					into[string(st)]++
				}
			}
			if q.LastEvaluatedKey == nil {
				break
			}
			start = q.LastEvaluatedKey
		}
	}
	return truncated, nil
}

// endedRangeGap is the widest gap of seqs a range read of ended rows
// bridges: the rows in a gap are read for nothing, but one Query per
// isolated ending would cost more.
const endedRangeGap = 32

// journaledSince returns, sorted and at most maxRows of them, the seqs of
// partition part the retention journal lists with an expiry from
// since+Retention on, and whether it left some out.
func (e *Engine) journaledSince(ctx context.Context, part int, since time.Time, maxRows int) ([]int64, bool, error) {
	seen := map[int64]bool{}
	var seqs []int64
	var start map[string]types.AttributeValue
	for {
		q, err := e.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                aws.String(e.cfg.Table),
			KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
			ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#sk": attrSK},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": avS(partitionPK(part)), ":lo": avS(journalUpTo(since.Add(e.cfg.Retention))), ":hi": avS(journalPrefix + "~"),
			},
			ExclusiveStartKey: start,
		})
		if err != nil {
			return nil, false, fmt.Errorf("error reading retention journal: %w", err)
		}
		for _, it := range q.Items {
			for _, seq := range decodeJournal(part, it).seqs {
				if seen[seq] {
					continue
				}
				if len(seqs) == maxRows {
					slices.Sort(seqs)
					return seqs, true, nil
				}
				seen[seq] = true
				seqs = append(seqs, seq)
			}
		}
		if q.LastEvaluatedKey == nil {
			slices.Sort(seqs)
			return seqs, false, nil
		}
		start = q.LastEvaluatedKey
	}
}

// seqRanges groups sorted seqs into [first, last] ranges whose members are
// at most gap apart.
func seqRanges(seqs []int64, gap int64) [][2]int64 {
	var out [][2]int64
	for _, s := range seqs {
		if n := len(out); n > 0 && s-out[n-1][1] <= gap {
			out[n-1][1] = s
			continue
		}
		out = append(out, [2]int64{s, s})
	}
	return out
}
