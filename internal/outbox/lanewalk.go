package outbox

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// maxLaneWalk bounds how many ended lane members a claim looks past to find
// a live earlier one; beyond it the lane waits (safe, and the walk resumes
// from the same place at the next claim).
const maxLaneWalk = 32

// ancestorsLive follows lane chains back from predecessors that have ended.
// A lane member can end out of order (cancelled by its caller, expired)
// while members ahead of it are still live; its successor must still wait
// for them (design.md §11, invariant 3), so a claim looks past ended predecessors to the
// first live one. next maps a head's predecessor seq to the seq before it;
// the result holds the predecessors whose lanes are blocked. A member that
// is gone (erased, or deleted by retention) ends the walk.
func (e *Engine) ancestorsLive(ctx context.Context, p int, next map[int64]int64) (map[int64]bool, error) {
	live := map[int64]bool{}
	now := e.clk.Now()
	for hop := 0; len(next) > 0; hop++ {
		froms := make([]int64, 0, len(next))
		for f := range next {
			froms = append(froms, f)
		}
		slices.Sort(froms)
		if hop >= maxLaneWalk {
			for _, f := range froms {
				live[f] = true
			}
			break
		}
		var keys []map[string]types.AttributeValue
		want := map[int64]bool{}
		for _, f := range froms {
			if a := next[f]; !want[a] {
				want[a] = true
				keys = append(keys, actionKey(p, a))
			}
		}
		got := map[int64]map[string]types.AttributeValue{}
		_, err := e.readRows(ctx, rowsRead{
			keys:       keys,
			projection: "sk, #st, #ttl, #prev",
			names:      map[string]string{"#st": attrState, "#ttl": attrTTL, "#prev": attrPrev},
		}, func(seq int64, it map[string]types.AttributeValue) { got[seq] = it })
		if err != nil {
			return nil, fmt.Errorf("error reading earlier lane members of partition %d: %w", p, err)
		}
		nn := map[int64]int64{}
		for _, f := range froms {
			it, ok := got[next[f]]
			if !ok {
				continue
			}
			if st := State(getS(it, attrState)); !st.Ended() && !expiredByTTL(it, now) {
				live[f] = true
				continue
			}
			if pv := getN(it, attrPrev); pv != 0 {
				nn[f] = pv
			}
		}
		next = nn
	}
	return live, nil
}
