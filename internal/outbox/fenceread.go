package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// ClaimFence is what a partition's claim fence row (design.md §3.3) says
// of the drainers' sweeps there: how many claims took it, who took it
// last and until when, and what it tracks.
type ClaimFence struct {
	Partition int
	Version   int64     // claim version: rises by one at every take (0: never taken)
	Owner     string    // the drainer that took it last ("" when released or never taken)
	HeldUntil time.Time // the last holder's lease on it (zero when released or never taken)
	Inflight  int       // entries of its in-flight map: claimed actions out of due
	// BlockedUntil: the front of the partition's due index is a blocked
	// lane run until then (ADR 0012 part 3); zero when none.
	BlockedUntil time.Time
}

// ClaimFencesGet reads the claim fence of every partition that may hold a
// row (one eventually consistent GetItem each), for an operator's view of
// the drainers; it writes nothing.
func (e *Engine) ClaimFencesGet(ctx context.Context) ([]ClaimFence, error) {
	kept, err := e.keptPartitions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ClaimFence, 0, kept)
	for p := 0; p < kept; p++ {
		r, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: e.table(), Key: key(partitionPK(p), skFence)})
		if err != nil {
			return nil, fmt.Errorf("error reading claim fence of partition %d: %w", p, err)
		}
		it := r.Item
		f := ClaimFence{Partition: p, Version: getN(it, attrClaimVersion), Owner: getS(it, attrFenceOwner),
			HeldUntil: getMs(it, attrFenceLease), Inflight: len(decodeInflight(it)), BlockedUntil: decodeBlocked(it).until}
		out = append(out, f)
	}
	return out, nil
}
