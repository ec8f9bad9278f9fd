package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

// ListingCost is what one listing call of a workspace costs when the table
// also holds another workspace's actions (issue 13, finding 3): the read
// units and DynamoDB calls of the first page.
type ListingCost struct {
	Listing string // which listing and how it read
	Others  int    // the other workspace's actions in the table (all delivered)
	Own     int    // the listed workspace's actions
	Page    int    // actions the page returned
	RRU     float64
	Calls   int64
}

// ListingOthers is how many actions of another workspace the listing
// workload puts in the table.
const ListingOthers = 3000

// Listings measures the first page of 50 of a workspace of 100 actions
// among ListingOthers of another workspace, all delivered: the API's
// listing (`GET /v1/actions?workspace_id=`, ActionList) and the operator's
// (`ferry actions list --workspace`, ActionFind), both through the
// workspace index (design.md §3.11).
func Listings(ctx context.Context, o CostOptions) ([]ListingCost, error) {
	o = o.withDefaults()
	var out []ListingCost
	db := ddblocal.New(ddblocal.WithClock(clock.NewManual(Start)))
	m := newMeter(db)
	e, err := newEnv(ctx, envOpts{sharedDB: db, sharedM: m, sharedCC: &conflictCounter{DynamoDB: m}, sharedPrv: newProvider(clock.NewManual(Start))})
	if err != nil {
		return nil, err
	}
	if err := e.eng.EnsureTable(ctx); err != nil {
		return nil, err
	}
	pl := payload(o.Payload)
	every := ListingOthers/100 + 1 // the listed workspace's 100, spread over the table
	for i := 0; i < ListingOthers+100; i++ {
		ws := "other-tenant"
		if i%every == every-1 {
			ws = "listed"
		}
		if _, err := e.eng.Enqueue(ctx, outbox.EnqueueParams{Kind: KindWebhook, WorkspaceID: ws, Payload: pl}); err != nil {
			return nil, err
		}
		e.advance(time.Millisecond)
		if (i+1)%200 == 0 {
			if err := e.sweepUntilIdle(ctx); err != nil {
				return nil, err
			}
		}
	}
	if err := e.sweepUntilIdle(ctx); err != nil {
		return nil, err
	}
	how := "workspace index + BatchGetItem"
	for _, l := range []struct {
		name string
		run  func() (int, error)
	}{
		{"`GET /v1/actions?workspace_id=` (ActionList)", func() (int, error) {
			r, err := e.eng.ActionList(ctx, outbox.ActionListParams{WorkspaceID: "listed", Limit: 50})
			if err != nil {
				return 0, err
			}
			return len(r.Actions), nil
		}},
		{"`ferry actions list --workspace` (ActionFind)", func() (int, error) {
			r, err := e.eng.ActionFind(ctx, outbox.ActionFindParams{WorkspaceID: "listed", Limit: 50})
			if err != nil {
				return 0, err
			}
			return len(r.Actions), nil
		}},
	} {
		db.ResetCapacity()
		n, err := l.run()
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", l.name, err)
		}
		st := db.Capacity(table)
		var calls int64
		for _, k := range st.Calls {
			calls += k
		}
		out = append(out, ListingCost{Listing: l.name + ", " + how, Others: ListingOthers, Own: 100, Page: n, RRU: st.TotalReadUnits(), Calls: calls})
	}
	return out, nil
}
