package outbox

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Listing (design.md §3.8, §3.11). A workspace's listing reads the
// workspace index (HASH ws, RANGE id, KEYS_ONLY: its entry is written once,
// by the enqueue's put, and never updated) and then the rows it names, so
// it costs what the workspace holds, not what the table holds. A lane's
// listing reads the lane's partition, in lane order. Instance-level actions
// (no workspace) are listed by a scan: they are not in the index.

// ActionListParams filters a listing. WorkspaceID is required unless the
// caller lists instance-level actions (then it is empty on purpose).
type ActionListParams struct {
	WorkspaceID string
	State       State  // optional
	LaneKey     string // optional
	Limit       int    // default 50, max 500
	Cursor      string // from a previous result
	// MaxRows bounds the rows one call examines, matching or not (a state
	// filter may match few of them): the page comes back short, even
	// empty, with a cursor. Default DefaultListRows.
	MaxRows int
}

// DefaultListRows is ActionListParams.MaxRows's default: a call reads at
// most about this many rows (half a read unit each from the workspace
// index's listing), whatever the filter.
const DefaultListRows = 1000

// ActionListResult is one page of a listing.
type ActionListResult struct {
	Actions    []Action
	NextCursor string // empty on the last page
}

// listSource is where a listing reads its actions from.
type listSource string

const (
	listWorkspace listSource = "w" // the workspace index, in id (creation) order
	listLane      listSource = "l" // the lane's partition, in seq (lane) order
	listInstance  listSource = "i" // a scan: instance-level actions
)

// listPageMax is how many index entries one round reads: one BatchGetItem.
const listPageMax = 100

// listRun is one ActionList call: its parameters, where it reads, and what
// it found so far.
type listRun struct {
	p      ActionListParams
	src    listSource
	start  map[string]types.AttributeValue
	now    time.Time
	rounds int // index reads so far
	read   int // rows examined so far
	res    ActionListResult
	// parts are a lane listing's partitions in the order it reads them:
	// fixed by its first round, carried by its cursor (laneReadAt).
	parts []int
}

// listPage is one round's rows, in listing order, and where the next round
// starts (nil: the listing is complete).
type listPage struct {
	items []map[string]types.AttributeValue
	last  map[string]types.AttributeValue
	// examined counts the rows (or index entries) the round read,
	// matching or not.
	examined int
}

// ActionList lists a workspace's actions: by the workspace index (oldest
// first), or by lane (lane order) with a lane key. Its cursor is sealed
// with the table's cursor key and names the listing it continues: another
// workspace's, a forged or an altered cursor is a *ValidationError.
func (e *Engine) ActionList(ctx context.Context, p ActionListParams) (*ActionListResult, error) {
	p, err := checkListParams(p)
	if err != nil {
		return nil, err
	}
	r := &listRun{p: p, src: listSourceOf(p), now: e.clk.Now()}
	if r.start, err = e.openCursor(ctx, r); err != nil {
		return nil, err
	}
	for {
		pg, err := e.listPage(ctx, r)
		if err != nil {
			return nil, err
		}
		r.read += pg.examined
		next := r.collect(pg)
		switch {
		case next == nil:
			return &r.res, nil
		case len(r.res.Actions) == r.p.Limit || r.read >= r.p.MaxRows:
			r.res.NextCursor, err = e.sealCursor(ctx, r, next)
			return &r.res, err
		}
		r.start = next
	}
}

// checkListParams applies the defaults and refuses what cannot be listed.
func checkListParams(p ActionListParams) (ActionListParams, error) {
	if p.Limit == 0 {
		p.Limit = 50
	}
	if p.Limit < 0 || p.Limit > 500 {
		return p, &ValidationError{Field: "limit", Message: "must be between 1 and 500"}
	}
	if p.MaxRows <= 0 {
		p.MaxRows = DefaultListRows
	}
	if p.State != "" && !p.State.Valid() {
		return p, &ValidationError{Field: "state", Message: fmt.Sprintf("unknown state %q", p.State)}
	}
	return p, nil
}

func listSourceOf(p ActionListParams) listSource {
	switch {
	case p.LaneKey != "":
		return listLane
	case p.WorkspaceID == "":
		return listInstance
	}
	return listWorkspace
}

// collect keeps the page's rows that match, up to the limit. It returns
// the key the next round (or page) starts after: the last row taken when
// the limit cut the page short, else the page's own; nil when the listing
// is complete.
func (r *listRun) collect(pg listPage) map[string]types.AttributeValue {
	for i, it := range pg.items {
		a, ok := r.match(it)
		if !ok {
			continue
		}
		r.res.Actions = append(r.res.Actions, a)
		if len(r.res.Actions) < r.p.Limit {
			continue
		}
		if i < len(pg.items)-1 || pg.last != nil {
			return r.keyOf(it)
		}
		return nil
	}
	return pg.last
}

// match decodes a row and applies the filters the read did not.
func (r *listRun) match(it map[string]types.AttributeValue) (Action, bool) {
	if expiredByTTL(it, r.now) || getS(it, attrWorkspace) != r.p.WorkspaceID {
		return Action{}, false
	}
	a, ok := decodeAction(it)
	if !ok || (r.p.State != "" && a.State != r.p.State) || (r.p.LaneKey != "" && a.LaneKey != r.p.LaneKey) {
		return Action{}, false
	}
	return a, true
}

// keyOf is the start key of a read that goes on after the row it.
func (r *listRun) keyOf(it map[string]types.AttributeValue) map[string]types.AttributeValue {
	k := key(getS(it, attrPK), getS(it, attrSK))
	if r.src == listWorkspace {
		k[attrWorkspace], k[attrID] = avS(getS(it, attrWorkspace)), avS(getS(it, attrID))
	}
	return k
}

// listPage reads one round from the listing's source.
func (e *Engine) listPage(ctx context.Context, r *listRun) (listPage, error) {
	switch r.src {
	case listLane:
		return e.laneListPage(ctx, r)
	case listInstance:
		return e.scanListPage(ctx, r)
	}
	return e.workspaceListPage(ctx, r)
}

// workspaceListPage reads up to listPageMax entries of the workspace index
// and then their rows, in index order.
func (e *Engine) workspaceListPage(ctx context.Context, r *listRun) (listPage, error) {
	// The first round reads as many entries as the page needs; later ones
	// (a filter left some out) read a full batch.
	lim := min(listPageMax, r.p.MaxRows-r.read)
	if r.rounds == 0 {
		lim = min(lim, r.p.Limit-len(r.res.Actions))
	}
	r.rounds++
	out, err := e.db.Query(ctx, &dynamodb.QueryInput{
		TableName: e.table(), IndexName: aws.String(IndexWorkspace),
		KeyConditionExpression:    aws.String("#ws = :ws"),
		ExpressionAttributeNames:  map[string]string{"#ws": attrWorkspace},
		ExpressionAttributeValues: map[string]types.AttributeValue{":ws": avS(r.p.WorkspaceID)},
		ExclusiveStartKey:         r.start, Limit: aws.Int32(int32(lim)),
	})
	if err != nil {
		return listPage{}, fmt.Errorf("error listing actions: %w", err)
	}
	keys := make([]map[string]types.AttributeValue, 0, len(out.Items))
	for _, it := range out.Items {
		keys = append(keys, key(getS(it, attrPK), getS(it, attrSK)))
	}
	rows := map[string]map[string]types.AttributeValue{}
	// The index is eventually consistent, so are these reads (half a unit
	// per row of up to 4 KB).
	_, err = e.readRows(ctx, rowsRead{keys: keys, eventual: true}, func(_ int64, it map[string]types.AttributeValue) {
		rows[getS(it, attrPK)+"/"+getS(it, attrSK)] = it
	})
	if err != nil {
		return listPage{}, fmt.Errorf("error reading listed actions: %w", err)
	}
	pg := listPage{last: out.LastEvaluatedKey, examined: len(out.Items)}
	for _, it := range out.Items {
		// A row gone since the index was written (ended and deleted) or
		// reused under another id is left out.
		if row := rows[getS(it, attrPK)+"/"+getS(it, attrSK)]; row != nil && getS(row, attrID) == getS(it, attrID) {
			pg.items = append(pg.items, row)
		}
	}
	return pg, nil
}

// laneListPage reads the lane's partitions (lanePartitions) one after the
// other, each with a consistent Query in seq order; the lane filter goes in
// the read. A page that ends one partition with another to go ends at the
// next one's start (laneListFrom).
func (e *Engine) laneListPage(ctx context.Context, r *listRun) (listPage, error) {
	part, after, parts, err := e.laneReadAt(ctx, laneID{r.p.WorkspaceID, r.p.LaneKey}, r.start, r.parts)
	if err != nil {
		return listPage{}, err
	}
	r.parts = parts
	out, err := e.db.Query(ctx, &dynamodb.QueryInput{
		TableName: e.table(), KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :a)"),
		FilterExpression:         aws.String("#ws = :ws AND #lane = :lane"),
		ExpressionAttributeNames: map[string]string{"#ws": attrWorkspace, "#lane": attrLane},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": avS(partitionPK(part)), ":a": avS("A#"), ":ws": avS(r.p.WorkspaceID), ":lane": avS(r.p.LaneKey),
		},
		ExclusiveStartKey: r.start, Limit: aws.Int32(int32(min(4*r.p.Limit, 1000, r.p.MaxRows-r.read))), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return listPage{}, fmt.Errorf("error listing actions: %w", err)
	}
	pg := listPage{items: out.Items, last: out.LastEvaluatedKey, examined: int(out.ScannedCount)}
	if pg.last == nil {
		pg.last = after
	}
	return pg, nil
}

// laneReadAt is where a read of a lane's actions goes on from start (nil:
// the beginning): the partition, among the listing's partitions, that
// start names (the first one without), and the start key of the next
// one's read once this one is read to its end (nil: the last). The
// listing's partitions are those it read so far (carried, in their order)
// and then the lane's partitions (lanePartitions) not among them: the
// order of a listing's partitions never changes under it, or a count
// change, a map read again or a tail moved between two of its pages would
// make it read a partition twice or skip one.
func (e *Engine) laneReadAt(ctx context.Context, lid laneID, start map[string]types.AttributeValue, carried []int) (int, map[string]types.AttributeValue, []int, error) {
	fresh, err := e.lanePartitions(ctx, lid)
	if err != nil {
		return 0, nil, nil, err
	}
	parts := append([]int(nil), carried...)
	for _, p := range fresh {
		if !slices.Contains(parts, p) {
			parts = append(parts, p)
		}
	}
	i := 0
	if pk := getS(start, attrPK); pk != "" {
		i = slices.IndexFunc(parts, func(p int) bool { return partitionPK(p) == pk })
		if i < 0 {
			// A partition no longer among them (a cursor of a build that
			// carried none, and the history dropped it): read it to its
			// end, then stop.
			return partitionOfPK(pk), nil, parts, nil
		}
	}
	if i+1 < len(parts) {
		return parts[i], laneListFrom(parts[i+1]), parts, nil
	}
	return parts[i], nil, parts, nil
}

// validLaneParts checks the partitions a cursor carries: each a partition
// an id may name, each once, no more than a lane listing reads.
func validLaneParts(parts []int) bool {
	if len(parts) > mapHistMax+2 {
		return false
	}
	for i, p := range parts {
		if p < 0 || p >= MaxPartitions || slices.Contains(parts[:i], p) {
			return false
		}
	}
	return true
}

// laneListFrom is the start key of a read from partition p's first action
// (seq 0 is never used).
func laneListFrom(p int) map[string]types.AttributeValue {
	return key(partitionPK(p), actionSK(0))
}

// scanListPage scans the table: instance-level actions (no workspace; not
// in the workspace index), or any listing on a table without the index.
func (e *Engine) scanListPage(ctx context.Context, r *listRun) (listPage, error) {
	filter := "begins_with(sk, :a) AND #ws = :ws"
	names := map[string]string{"#ws": attrWorkspace}
	vals := map[string]types.AttributeValue{":a": avS("A#"), ":ws": avS(r.p.WorkspaceID)}
	if r.p.WorkspaceID == "" {
		filter = "begins_with(sk, :a) AND attribute_not_exists(#ws) AND attribute_exists(#kind)"
		names["#kind"] = attrKind
		delete(vals, ":ws")
	}
	out, err := e.db.Scan(ctx, &dynamodb.ScanInput{
		TableName: e.table(), FilterExpression: aws.String(filter), ExpressionAttributeNames: names,
		ExpressionAttributeValues: vals, ExclusiveStartKey: r.start, Limit: aws.Int32(int32(min(4*r.p.Limit, 1000, r.p.MaxRows-r.read))),
	})
	if err != nil {
		return listPage{}, fmt.Errorf("error listing actions: %w", err)
	}
	return listPage{items: out.Items, last: out.LastEvaluatedKey, examined: int(out.ScannedCount)}, nil
}

// listCursor is what a cursor carries: the listing it continues and the key
// it starts after. It travels sealed (design.md §3.11): base64url of its
// JSON, a dot, and base64url of the first 16 bytes of its HMAC-SHA256 under
// the table's cursor key.
type listCursor struct {
	V     int               `json:"v"`
	Src   listSource        `json:"src"`
	WS    string            `json:"ws"`
	State State             `json:"st,omitempty"`
	Lane  string            `json:"lane,omitempty"`
	Key   map[string]string `json:"k"`
	// Parts are a lane listing's partitions, in the order it reads them
	// (laneReadAt).
	Parts []int `json:"p,omitempty"`
}

const cursorMACBytes = 16

var errBadCursor = &ValidationError{Field: "cursor", Message: "not a cursor of this listing: pass next_cursor from the previous page of the same listing unchanged"}

// sealCursor makes the cursor that goes on after key next.
func (e *Engine) sealCursor(ctx context.Context, r *listRun, next map[string]types.AttributeValue) (string, error) {
	id, err := e.identity(ctx)
	if err != nil {
		return "", err
	}
	c := listCursor{V: 1, Src: r.src, WS: r.p.WorkspaceID, State: r.p.State, Lane: r.p.LaneKey, Key: map[string]string{}, Parts: r.parts}
	for k := range next {
		c.Key[k] = getS(next, k)
	}
	body, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(cursorMAC(id.cursorKey, body)), nil
}

// openCursor checks the run's cursor and returns the key it starts after
// (nil without a cursor). A cursor that does not carry the table's seal,
// or that another listing made, is a *ValidationError.
func (e *Engine) openCursor(ctx context.Context, r *listRun) (map[string]types.AttributeValue, error) {
	if r.p.Cursor == "" {
		return nil, nil
	}
	b64, m64, ok := strings.Cut(r.p.Cursor, ".")
	body, err1 := base64.RawURLEncoding.DecodeString(b64)
	mac, err2 := base64.RawURLEncoding.DecodeString(m64)
	if !ok || err1 != nil || err2 != nil {
		return nil, errBadCursor
	}
	id, err := e.identity(ctx)
	if err != nil {
		return nil, err
	}
	var c listCursor
	if !hmac.Equal(mac, cursorMAC(id.cursorKey, body)) || json.Unmarshal(body, &c) != nil {
		return nil, errBadCursor
	}
	if c.V != 1 || c.WS != r.p.WorkspaceID || c.State != r.p.State || c.Lane != r.p.LaneKey || c.Key[attrPK] == "" || c.Key[attrSK] == "" {
		return nil, errBadCursor
	}
	if c.Src != r.src || !validLaneParts(c.Parts) {
		return nil, errBadCursor
	}
	r.parts = c.Parts
	start := key(c.Key[attrPK], c.Key[attrSK])
	if c.Src == listWorkspace {
		start[attrWorkspace], start[attrID] = avS(c.Key[attrWorkspace]), avS(c.Key[attrID])
	}
	return start, nil
}

func cursorMAC(k, body []byte) []byte {
	h := hmac.New(sha256.New, k)
	h.Write([]byte("ferry list cursor v1\n"))
	h.Write(body)
	return h.Sum(nil)[:cursorMACBytes]
}
