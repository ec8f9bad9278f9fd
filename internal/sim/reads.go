package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

// The reads an API caller, an operator or a function makes (issue 27):
// listings (ActionList, ActionFind, page by page with their cursors),
// ActionGet, ActionNeighbours, DeliveryGet, SubjectWorkspaces, StatusGet,
// PartitionLayout, Ping and the engine's own accessors. Each runs as one
// step (nothing else runs between its pages) and is judged against the
// shadow:
//
//   - listing: every action the table holds for the listing, old enough
//     for the indexes to show it (their lag is at most the run's), is listed
//     exactly once, nothing else is, and a lane's listing is in lane order;
//   - get: a consistent read answers the row as it is.

// readStep makes one read, drawn from the seed.
func (w *world) readStep() {
	h := w.hosts[w.rng.IntN(3)]
	p := w.newProc("api", h)
	switch x := w.rng.IntN(10); {
	case x < 3:
		w.listStep(p, h)
	case x < 5:
		w.findStep(p, h)
	case x < 7:
		w.getStep(p, h)
	case x < 8:
		w.subjectStep(p, h)
	default:
		w.statusStep(p, h)
	}
}

// listed is one listing's answer: action labels in order.
type listed struct {
	what  string
	ids   []string
	start time.Time
}

// listStep pages through a workspace's listing (ActionList), or a lane's.
func (w *world) listStep(p *proc, h *host) {
	lp := outbox.ActionListParams{WorkspaceID: workspaces[w.rng.IntN(len(workspaces))], Limit: 1 + w.rng.IntN(12)}
	if w.rng.IntN(8) == 0 {
		// Instance-level actions (library mode, no workspace): a scan that
		// must leave every workspace's action out.
		lp.WorkspaceID = ""
	} else if w.rng.IntN(3) == 0 {
		lp.LaneKey = []string{"a", "b", "c", "z"}[w.rng.IntN(4)]
	}
	if w.rng.IntN(4) == 0 {
		lp.State = outbox.States()[w.rng.IntN(len(outbox.States()))]
	}
	l := listed{what: fmt.Sprintf("listing of %s lane=%q state=%q by %d", lp.WorkspaceID, lp.LaneKey, lp.State, lp.Limit), start: w.clk.Now()}
	for page := 0; ; page++ {
		w.called("ActionList")
		res, err := h.eng.ActionList(p.ctx(), lp)
		if err != nil {
			w.tracef(p, "%s: page %d: error %s", l.what, page, shortErr(err))
			return
		}
		for i := range res.Actions {
			l.ids = append(l.ids, keyID(&res.Actions[i]))
		}
		if res.NextCursor == "" {
			break
		}
		w.lastCursor = res.NextCursor
		lp.Cursor = res.NextCursor
	}
	w.res.Ops["read list"]++
	w.tracef(p, "%s: %d actions", l.what, len(l.ids))
	parts := w.lanePartitionsNow(lp.WorkspaceID, lp.LaneKey)
	w.judgeListing(l, func(r *row) bool {
		return str(r.item, "ws") == lp.WorkspaceID && (lp.LaneKey == "" || str(r.item, "lane") == lp.LaneKey && parts[partOf(r.item)]) &&
			(lp.State == "" || state(r.item) == lp.State)
	}, lp.LaneKey == "")
	if lp.LaneKey != "" && !w.stopped {
		w.judgeLaneOrder(l, lp.WorkspaceID+"/"+lp.LaneKey)
	}
}

// findStep pages through an operator's listing (ActionFind).
func (w *world) findStep(p *proc, h *host) {
	fp := outbox.ActionFindParams{Limit: 1 + w.rng.IntN(20), MaxRows: 1 + w.rng.IntN(60)}
	if w.rng.IntN(3) > 0 {
		fp.WorkspaceID = workspaces[w.rng.IntN(len(workspaces))]
		switch w.rng.IntN(3) {
		case 0:
			fp.LaneKey = []string{"a", "b", "c", "z"}[w.rng.IntN(4)]
		case 1:
			fp.SubjectID = subjects[w.rng.IntN(len(subjects))]
		}
	}
	if w.rng.IntN(3) == 0 {
		fp.Kind = []string{kindRB, kindIdem, kindAMO, kindFuture}[w.rng.IntN(4)]
	}
	if w.rng.IntN(4) == 0 {
		fp.State = outbox.States()[w.rng.IntN(len(outbox.States()))]
	}
	if w.srng.IntN(3) == 0 {
		// A stretch of creation times, open at either end or not: an
		// hour of the run up to now, from a whole second.
		now := h.now()
		from := now.Add(-randDur(w.srng, 0, 2*time.Hour)).Truncate(time.Second)
		switch w.srng.IntN(3) {
		case 0:
			fp.CreatedFrom = from
		case 1:
			fp.CreatedBefore = from.Add(randDur(w.srng, time.Second, time.Hour))
		default:
			fp.CreatedFrom, fp.CreatedBefore = from, from.Add(randDur(w.srng, time.Second, time.Hour))
		}
	}
	l := listed{what: fmt.Sprintf("find ws=%q lane=%q subject=%q kind=%q state=%q created [%s, %s) by %d (rows %d)", fp.WorkspaceID, fp.LaneKey, fp.SubjectID, fp.Kind, fp.State,
		fmtCreated(fp.CreatedFrom), fmtCreated(fp.CreatedBefore), fp.Limit, fp.MaxRows), start: w.clk.Now()}
	for page := 0; page < 500; page++ {
		w.called("ActionFind")
		res, err := h.eng.ActionFind(p.ctx(), fp)
		if err != nil {
			w.tracef(p, "%s: page %d: error %s", l.what, page, shortErr(err))
			return
		}
		for i := range res.Actions {
			l.ids = append(l.ids, keyID(&res.Actions[i]))
		}
		if res.NextCursor == "" {
			parts := w.lanePartitionsNow(fp.WorkspaceID, fp.LaneKey)
			w.res.Ops["read find"]++
			w.tracef(p, "%s: %d actions in %d pages", l.what, len(l.ids), page+1)
			w.judgeListing(l, func(r *row) bool {
				return (fp.WorkspaceID == "" || str(r.item, "ws") == fp.WorkspaceID) && (fp.LaneKey == "" || str(r.item, "lane") == fp.LaneKey && parts[partOf(r.item)]) &&
					(fp.SubjectID == "" || str(r.item, "subj") == fp.SubjectID) && (fp.Kind == "" || str(r.item, "kind") == fp.Kind) &&
					(fp.State == "" || state(r.item) == fp.State) &&
					(fp.CreatedFrom.IsZero() || !msTime(r.item, "ca").Before(fp.CreatedFrom)) && (fp.CreatedBefore.IsZero() || msTime(r.item, "ca").Before(fp.CreatedBefore))
			}, fp.LaneKey == "" && (fp.WorkspaceID != "" || fp.SubjectID != ""))
			return
		}
		fp.Cursor = res.NextCursor
	}
	w.violate("listing", nil, "%s did not end in 500 pages", l.what)
}

// lanePartitionsNow are the partitions a lane's listing reads (outbox
// lanePartitions): the lane's partition under each count the partition
// map's history keeps, its tail's, and the count's. A member left in a
// partition of a count the history no longer keeps is not listed (docs/api.md:
// the last 8 counts). Read straight from the table, outside the faults.
func (w *world) lanePartitionsNow(ws, lane string) map[int]bool {
	if lane == "" {
		return nil
	}
	m := w.getItem("M#partitions", "M")
	out := map[int]bool{}
	counts := []int{w.cfg.Partitions}
	if n := int(num(m, "n")); n > 0 {
		counts = []int{n}
	}
	if l, ok := m["hist"].(*types.AttributeValueMemberL); ok {
		for _, v := range l.Value {
			if n, ok := v.(*types.AttributeValueMemberN); ok {
				c, _ := strconv.Atoi(n.Value)
				counts = append(counts, c)
			}
		}
	}
	for _, c := range counts {
		out[outbox.LanePartition(ws, lane, c)] = true
	}
	if t := w.getItem("L#"+ws+"#"+lane, "L"); t != nil {
		out[int(num(t, "p"))] = true
	}
	return out
}

// getItem reads an item straight from the table, outside the faults.
func (w *world) getItem(pk, sk string) map[string]types.AttributeValue {
	out, err := w.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(w.cfg.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": avStr(pk), "sk": avStr(sk)},
	})
	if err != nil {
		panic(fmt.Sprintf("sim: reading %s/%s: %v", pk, sk, err))
	}
	return out.Item
}

// partOf is an action row's partition.
func partOf(it ddblocal.Item) int {
	p, _ := strconv.Atoi(strings.TrimPrefix(str(it, "pk"), "P#"))
	return p
}

// judgeListing holds a listing to the shadow: keep says which rows it
// lists; indexed says it reads a global index (whose lag may hide rows
// written less than the run's lag before it).
func (w *world) judgeListing(l listed, keep func(r *row) bool, indexed bool) {
	seen := map[string]bool{}
	for _, id := range l.ids {
		r := w.rows[id]
		switch {
		case seen[id]:
			w.violate("listing", []string{id}, "%s listed %s twice", l.what, id)
			return
		case r == nil || r.gone != "":
			w.violate("listing", []string{id}, "%s listed %s, which is not in the table", l.what, id)
			return
		case !keep(r):
			w.violate("listing", []string{id}, "%s listed %s (%s), which it does not select", l.what, id, rowState(r.item))
			return
		}
		seen[id] = true
	}
	for _, id := range sortedKeys(w.rows) {
		r := w.rows[id]
		if seen[id] || r.gone != "" || r.tok == nil || !keep(r) || w.nearTTL(r) {
			continue
		}
		if indexed && r.createdAt.Add(w.maxLag).After(l.start.Add(-time.Millisecond)) {
			continue // the index may not show it yet
		}
		w.violate("listing", []string{id}, "%s left out %s (%s)", l.what, id, rowState(r.item))
		return
	}
}

// nearTTL says whether a row's TTL is so close that a host's clock may
// take it for expired (reads leave out rows past their TTL).
func (w *world) nearTTL(r *row) bool {
	return has(r.item, "ttl") && num(r.item, "ttl") <= w.clk.Now().Add(2*w.cfg.ClockSkew).Unix()+1
}

// judgeLaneOrder requires a lane's listing in its lane's order: a member
// listed after a later one must have ended before that one was enqueued
// (a lane that drained starts again, at whatever seq its enqueue reserves).
func (w *world) judgeLaneOrder(l listed, lane string) {
	pos := map[string]int{}
	for i, id := range w.lanes[lane] {
		pos[id] = i
	}
	for i := 1; i < len(l.ids); i++ {
		a, b := w.rows[l.ids[i-1]], w.rows[l.ids[i]]
		if pos[b.id] < pos[a.id] && (b.endedSeq == 0 || b.endedSeq > a.createdSeq) {
			w.violate("listing", []string{l.ids[i-1], l.ids[i]}, "%s listed %s before %s, against lane order", l.what, l.ids[i-1], l.ids[i])
			return
		}
	}
}

// getStep reads one action (ActionGet, consistent) and what goes with it:
// its lane neighbours, its delivery evidence.
func (w *world) getStep(p *proc, h *host) {
	ids := sortedKeys(w.rows)
	if len(ids) == 0 {
		return
	}
	r := w.rows[ids[w.rng.IntN(len(ids))]]
	id := str(r.item, "id")
	if id == "" {
		return
	}
	w.called("ActionGet")
	a, err := h.eng.ActionGet(p.ctx(), id)
	switch {
	case errors.Is(err, outbox.ErrNotFound):
		if r.gone == "" && !w.nearTTL(r) && r.tok != nil {
			w.violate("get", []string{r.id}, "%s: ActionGet of %s answered not found; it is %s", p.name, r.id, rowState(r.item))
		}
		return
	case err != nil:
		w.tracef(p, "get %s: error %s", r.id, shortErr(err))
		return
	}
	w.res.Ops["read get"]++
	if r.gone != "" || a.State != state(r.item) || a.Epoch != num(r.item, "ep") {
		w.violate("get", []string{r.id}, "%s: ActionGet of %s answered %s epoch %d; it is %s (gone: %q)", p.name, r.id, a.State, a.Epoch, rowState(r.item), r.gone)
		return
	}
	w.called("ActionNeighbours")
	if n, err := h.eng.ActionNeighbours(p.ctx(), a); err == nil {
		w.judgeNeighbours(p, r, a, n)
	}
	w.called("DeliveryGet")
	if d, err := h.eng.DeliveryGet(p.ctx(), a); err == nil && d != nil {
		w.tracef(p, "get %s: delivery evidence %s (%d events)", r.id, d.Status, len(d.Events))
	}
}

// judgeNeighbours requires ActionNeighbours to name the nearest members of
// the action's lane in its partition that the table holds. A member whose
// TTL is so close that a host's clock may take it for expired (nearTTL)
// may be skipped or named: the answer on each side is one of the members
// from the action outwards up to the first that is surely not expired.
func (w *world) judgeNeighbours(p *proc, r *row, a *outbox.Action, n *outbox.LaneNeighbours) {
	if a.LaneKey == "" {
		if n.Prev != nil || n.Next != nil {
			w.violate("get", []string{r.id}, "%s: %s is in no lane and has neighbours", p.name, r.id)
		}
		return
	}
	var before, after []string // nearest first
	for _, id := range w.lanes[a.WorkspaceID+"/"+a.LaneKey] {
		o := w.rows[id]
		// Erasure tombstones and sealed slots keep no lane: a row gone
		// in any way is not read.
		if o.gone != "" || str(o.item, "pk") != str(r.item, "pk") {
			continue
		}
		switch s := seqOf(o.item); {
		case s < a.Seq:
			before = append(before, id)
		case s > a.Seq:
			after = append(after, id)
		}
	}
	slices.SortFunc(before, func(x, y string) int { return cmp.Compare(seqOf(w.rows[y].item), seqOf(w.rows[x].item)) })
	slices.SortFunc(after, func(x, y string) int { return cmp.Compare(seqOf(w.rows[x].item), seqOf(w.rows[y].item)) })
	judge := func(side string, got *outbox.Action, members []string) {
		if got == nil {
			return // none within the rows it reads
		}
		g := keyID(got)
		for _, id := range members {
			if id == g {
				return
			}
			if !w.nearTTL(w.rows[id]) {
				break
			}
		}
		want := ""
		for _, id := range members {
			if !w.nearTTL(w.rows[id]) {
				want = id
				break
			}
		}
		w.violate("get", []string{r.id, g}, "%s: %s's lane neighbour %s is %s, not %q", p.name, r.id, side, g, want)
	}
	judge("before", n.Prev, before)
	judge("after", n.Next, after)
}

// judgeClaimFences holds the console's read of the claim fences to the
// table: one per partition from 0, none claiming a version the fence has
// not reached (the reads are eventually consistent: older is allowed).
func (w *world) judgeClaimFences(p *proc, fs []outbox.ClaimFence) {
	for i, f := range fs {
		cur := w.getItem(fmt.Sprintf("P#%d", i), "FENCE")
		switch {
		case f.Partition != i:
			w.violate("get", nil, "%s: claim fence %d of the read names partition %d", p.name, i, f.Partition)
			return
		case f.Version > num(cur, "cv") || f.Inflight < 0:
			w.violate("get", nil, "%s: claim fence of partition %d read at version %d with %d in flight; it is at %d", p.name, i, f.Version, f.Inflight, num(cur, "cv"))
			return
		}
	}
	w.tracef(p, "claim fences: %d partitions", len(fs))
}

// seqOf is an action row's seq.
func seqOf(it ddblocal.Item) int64 {
	s, _ := strconv.ParseInt(strings.TrimPrefix(str(it, "sk"), "A#"), 10, 64)
	return s
}

// subjectStep finds the workspaces holding a subject (SubjectWorkspaces):
// every workspace with an action of the subject old enough for the index
// to show it must be among them.
func (w *world) subjectStep(p *proc, h *host) {
	subj := subjects[w.rng.IntN(len(subjects))]
	start := w.clk.Now()
	w.called("SubjectWorkspaces")
	res, err := h.eng.SubjectWorkspaces(p.ctx(), subj)
	if err != nil {
		w.tracef(p, "subject %s: error %s", subj, shortErr(err))
		return
	}
	w.res.Ops["read subject"]++
	for _, id := range sortedKeys(w.rows) {
		r := w.rows[id]
		if r.gone != "" || r.tok == nil || str(r.item, "subj") != subj || w.nearTTL(r) || r.createdAt.Add(w.maxLag).After(start.Add(-time.Millisecond)) {
			continue
		}
		if !slices.Contains(res.Workspaces, str(r.item, "ws")) {
			w.violate("listing", []string{id}, "%s: the workspaces of subject %s (%v) leave out %s, which holds %s", p.name, subj, res.Workspaces, str(r.item, "ws"), id)
			return
		}
	}
}

// statusStep reads the status (StatusGet) and the engine's accessors.
func (w *world) statusStep(p *proc, h *host) {
	w.called("StatusGet")
	sp := outbox.StatusParams{EndedSince: w.clk.Now().Add(-time.Hour), MaxDuePages: 1 + w.rng.IntN(4), MaxEndedRows: 1 + w.rng.IntN(50)}
	if w.srng.IntN(4) == 0 {
		sp = outbox.StatusParams{} // every default: the console's first look
	} else if w.srng.IntN(3) == 0 {
		sp.Workspaces = []string{workspaces[w.srng.IntN(len(workspaces))]}
	}
	st, err := h.eng.StatusGet(p.ctx(), sp)
	if err != nil {
		w.tracef(p, "status: error %s", shortErr(err))
		return
	}
	w.res.Ops["read status"]++
	w.tracef(p, "status: %d partitions, due %d claimed %d waiting %d in flight %d", len(st.Partitions), st.Total.DueDepth, st.Total.ClaimedDepth, st.Total.Waiting, st.Total.Inflight)
	w.called("Ping")
	if err := h.eng.Ping(p.ctx()); err != nil {
		w.tracef(p, "ping: error %s", shortErr(err))
	}
	w.called("PartitionLayout")
	layout, err := h.eng.PartitionLayout(p.ctx())
	if err != nil {
		w.tracef(p, "partition layout: error %s", shortErr(err))
	} else if tool, err := outbox.New(w.wrap, h.clk, h.reg, outbox.Config{Table: w.cfg.Table}, outbox.WithSleeper(noSleep), outbox.WithParallel(w.parallel)); err != nil {
		w.violate("get", nil, "%s: an engine with every default but the table: %v", p.name, err)
	} else if l, err := tool.PartitionLayout(p.ctx()); err == nil && !reflect.DeepEqual(l, layout) {
		// An operator's tool (every Config default but the table) reads
		// the same layout: the map, not its own settings, decides.
		w.violate("get", nil, "%s: the layout read with the defaults is %+v, not %+v", p.name, l, layout)
	}
	// An operator command's first look (a new engine): the table's layout
	// is this build's.
	w.called("LayoutCheck")
	w.called("TableLayout")
	if tool, err := outbox.New(w.wrap, h.clk, h.reg, outbox.Config{Table: w.cfg.Table}, outbox.WithSleeper(noSleep), outbox.WithParallel(w.parallel)); err == nil {
		if err := tool.LayoutCheck(p.ctx()); err != nil {
			w.tracef(p, "layout check: error %s", shortErr(err))
		} else if v, err := tool.TableLayout(p.ctx()); err == nil && v != outbox.Layout {
			w.violate("get", nil, "%s: the table's layout reads %d, not %d", p.name, v, outbox.Layout)
		}
	}
	w.called("ClaimFencesGet") // the console's drainers page
	if fs, err := h.eng.ClaimFencesGet(p.ctx()); err != nil {
		w.tracef(p, "claim fences: error %s", shortErr(err))
	} else {
		w.judgeClaimFences(p, fs)
	}
	w.called("LivePartitions") // ferry dev's drain loop
	if n, err := h.eng.LivePartitions(p.ctx()); err != nil {
		w.tracef(p, "live partitions: error %s", shortErr(err))
	} else if n < 1 || n > outbox.MaxPartitions {
		w.violate("get", nil, "%s: LivePartitions = %d, outside [1, %d]", p.name, n, outbox.MaxPartitions)
	}
	w.called("Config")
	w.called("Registry")
	w.called("Partitions")
	w.called("PartitionOf")
	if h.eng.Config().Partitions != h.eng.Partitions() || len(h.eng.Registry().Kinds()) == 0 {
		w.violate("get", nil, "%s: the engine's accessors disagree", p.name)
	}
	if part, ok := h.eng.PartitionOf(fmt.Sprintf("P#%d", h.parts-1)); !ok || part != h.parts-1 {
		w.violate("get", nil, "%s: PartitionOf(P#%d) = %d, %v", p.name, h.parts-1, part, ok)
	}
}

// fmtCreated shows one end of a find's creation times ("" when open).
func fmtCreated(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return fmtDur(t.Sub(epoch0))
}
