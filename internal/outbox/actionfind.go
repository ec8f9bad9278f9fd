package outbox

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ActionFindParams filters an operator's listing. Unlike ActionListParams
// it may span every workspace (WorkspaceID empty), and it can follow a
// subject or select a kind. LaneKey and SubjectID need WorkspaceID (both
// are named within a workspace).
type ActionFindParams struct {
	WorkspaceID string // optional
	State       State  // optional
	LaneKey     string // optional; reads only the lane's partitions (each count's, ADR 0011)
	SubjectID   string // optional; reads the subject index
	Kind        string // optional
	// CreatedFrom and CreatedBefore, when set, keep the actions created in
	// [CreatedFrom, CreatedBefore). A workspace's listing reads only that
	// stretch of the workspace index (ids sort by creation time).
	CreatedFrom, CreatedBefore time.Time
	Limit                      int    // default 50, at most 1000
	Cursor                     string // from a previous result
	// MaxRows bounds the rows one call examines, matching or not (a
	// filtered scan may read many rows for few matches): the page comes
	// back short, with a cursor. Default DefaultFindRows.
	MaxRows int
}

// DefaultFindRows is ActionFindParams.MaxRows's default.
const DefaultFindRows = 10000

// ActionFindResult is one page of an operator's listing.
type ActionFindResult struct {
	Actions    []Action
	NextCursor string // empty when nothing is left
	// Examined counts the rows read for this page.
	Examined int
}

// findCursor is where a listing goes on: the source it reads and the last
// key it read there.
type findCursor struct {
	Source string            `json:"s"`
	Key    map[string]string `json:"k"`
	// Parts are a lane listing's partitions, in the order it reads them
	// (laneReadAt).
	Parts []int `json:"p,omitempty"`
}

// ActionFind lists actions for an operator: with a subject it reads the
// subject index (keys only) and the rows it names; with a lane it queries
// the lane's partition (lane order); with a workspace alone it reads the
// workspace index (keys only, oldest first) and the rows it names, as the
// API's listing does (design.md §3.11), so it costs what the workspace
// holds; only a listing of every workspace (or of a table without the
// workspace index) scans the table, in key order, which costs what the
// table holds. Erasure tombstones and rows whose TTL passed are left out.
func (e *Engine) ActionFind(ctx context.Context, p ActionFindParams) (*ActionFindResult, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	start, source, parts, err := decodeFindCursor(p.Cursor, p.source())
	if err != nil {
		return nil, err
	}
	res := &ActionFindResult{}
	now := e.clk.Now()
	for round := 0; len(res.Actions) < p.Limit && res.Examined < p.MaxRows; round++ {
		limit := int32(min(p.MaxRows-res.Examined, 1000))
		if source == findWorkspace && round == 0 {
			// The index's first round reads what the page needs; later
			// ones (a filter left some out) read a full batch.
			limit = min(limit, int32(p.Limit))
		}
		items, last, scanned, err := e.findPage(ctx, source, p, start, limit, &parts)
		if err != nil {
			return nil, err
		}
		res.Examined += scanned
		for i, it := range items {
			if a, ok := decodeAction(it); ok && has(it, attrKind) && !expiredByTTL(it, now) && p.matches(&a) {
				res.Actions = append(res.Actions, a)
			}
			if len(res.Actions) == p.Limit && i < len(items)-1 {
				last = findKey(source, it)
				break
			}
		}
		if last == nil {
			return res, nil
		}
		start = last
	}
	res.NextCursor = encodeFindCursor(source, start, parts)
	return res, nil
}

func (p *ActionFindParams) validate() error {
	if p.Limit == 0 {
		p.Limit = 50
	}
	if p.MaxRows == 0 {
		p.MaxRows = DefaultFindRows
	}
	switch {
	case p.Limit < 0 || p.Limit > 1000:
		return &ValidationError{Field: "limit", Message: "must be between 1 and 1000"}
	case p.MaxRows < 0:
		return &ValidationError{Field: "max_rows", Message: "must be positive"}
	case p.State != "" && !p.State.Valid():
		return &ValidationError{Field: "state", Message: fmt.Sprintf("unknown state %q", p.State)}
	case !p.CreatedFrom.IsZero() && !p.CreatedBefore.IsZero() && !p.CreatedFrom.Before(p.CreatedBefore):
		return &ValidationError{Field: "created_before", Message: "must be later than created_from"}
	case (p.LaneKey != "" || p.SubjectID != "") && p.WorkspaceID == "":
		return &ValidationError{Field: "workspace_id", Message: "a lane or a subject is named within a workspace: name the workspace too"}
	}
	return nil
}

func (p *ActionFindParams) matches(a *Action) bool {
	return (p.WorkspaceID == "" || a.WorkspaceID == p.WorkspaceID) && (p.State == "" || a.State == p.State) &&
		(p.LaneKey == "" || a.LaneKey == p.LaneKey) && (p.SubjectID == "" || a.SubjectID == p.SubjectID) &&
		(p.Kind == "" || a.Kind == p.Kind) && (p.CreatedFrom.IsZero() || !a.CreatedAt.Before(p.CreatedFrom)) &&
		(p.CreatedBefore.IsZero() || a.CreatedAt.Before(p.CreatedBefore))
}

// idRange is the key condition on the workspace index's range key (`id`)
// that keeps a listing within its creation times, with its names and
// values: ids start with their creation time (ident.go), and no id is
// as short as that prefix, so `id BETWEEN from AND before` holds exactly
// the ids created in [from, before) (legacy ids, `<partition>-<seq>`,
// are not in time order: such a listing may miss them).
func (p *ActionFindParams) idRange(names map[string]string, vals map[string]types.AttributeValue) string {
	if p.CreatedFrom.IsZero() && p.CreatedBefore.IsZero() {
		return ""
	}
	names["#id"] = attrID
	from, before := idTimePrefix(p.CreatedFrom), idTimePrefix(p.CreatedBefore)
	switch {
	case p.CreatedBefore.IsZero():
		vals[":idlo"] = avS(from)
		return " AND #id >= :idlo"
	case p.CreatedFrom.IsZero():
		vals[":idhi"] = avS(before)
		return " AND #id < :idhi"
	}
	vals[":idlo"], vals[":idhi"] = avS(from), avS(before)
	return " AND #id BETWEEN :idlo AND :idhi"
}

// findKey is the key a listing of source goes on from after item it.
func findKey(source string, it map[string]types.AttributeValue) map[string]types.AttributeValue {
	k := key(getS(it, attrPK), getS(it, attrSK))
	switch source {
	case findSubject:
		k[attrSubPK] = avS(getS(it, attrSubPK))
	case findWorkspace:
		k[attrWorkspace], k[attrID] = avS(getS(it, attrWorkspace)), avS(getS(it, attrID))
	}
	return k
}

// findPage reads one page of source: up to limit rows from start, the key
// to go on from (nil at the end) and how many rows it examined. A lane's
// listing reads its partitions in the order parts keeps (laneReadAt).
func (e *Engine) findPage(ctx context.Context, source string, p ActionFindParams, start map[string]types.AttributeValue, limit int32, parts *[]int) ([]map[string]types.AttributeValue, map[string]types.AttributeValue, int, error) {
	switch source {
	case findSubject:
		return e.findSubjectPage(ctx, p, start, limit)
	case findWorkspace:
		return e.findWorkspacePage(ctx, p, start, limit)
	case findLane:
		part, after, ps, err := e.laneReadAt(ctx, laneID{p.WorkspaceID, p.LaneKey}, start, *parts)
		if err != nil {
			return nil, nil, 0, err
		}
		*parts = ps
		q, err := e.db.Query(ctx, &dynamodb.QueryInput{
			TableName: e.table(), KeyConditionExpression: aws.String("#pk = :pk AND begins_with(#sk, :a)"),
			FilterExpression:          aws.String("#lane = :lane AND #ws = :ws"),
			ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK, "#lane": attrLane, "#ws": attrWorkspace},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avS(partitionPK(part)), ":a": avS("A#"), ":lane": avS(p.LaneKey), ":ws": avS(p.WorkspaceID)},
			ExclusiveStartKey:         start, Limit: aws.Int32(limit),
		})
		if err != nil {
			return nil, nil, 0, fmt.Errorf("error listing the lane's actions: %w", err)
		}
		if q.LastEvaluatedKey == nil {
			q.LastEvaluatedKey = after // the lane's next partition
		}
		return q.Items, q.LastEvaluatedKey, int(q.ScannedCount), nil
	}
	filter := "begins_with(#sk, :a) AND attribute_exists(#kind)"
	names := map[string]string{"#sk": attrSK, "#kind": attrKind}
	vals := map[string]types.AttributeValue{":a": avS("A#")}
	for _, f := range []struct{ attr, val string }{{attrWorkspace, p.WorkspaceID}, {attrState, string(p.State)}, {attrKind, p.Kind}} {
		if f.val != "" {
			filter += fmt.Sprintf(" AND #f%d = :f%d", len(vals), len(vals))
			names[fmt.Sprintf("#f%d", len(vals))] = f.attr
			vals[fmt.Sprintf(":f%d", len(vals))] = avS(f.val)
		}
	}
	if !p.CreatedFrom.IsZero() {
		filter += " AND #ca >= :cafrom"
		names["#ca"], vals[":cafrom"] = attrCreated, avMs(p.CreatedFrom)
	}
	if !p.CreatedBefore.IsZero() {
		filter += " AND #ca < :cabefore"
		names["#ca"], vals[":cabefore"] = attrCreated, avMs(p.CreatedBefore)
	}
	s, err := e.db.Scan(ctx, &dynamodb.ScanInput{
		TableName: e.table(), FilterExpression: aws.String(filter), ExpressionAttributeNames: names,
		ExpressionAttributeValues: vals, ExclusiveStartKey: start, Limit: aws.Int32(limit),
	})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("error scanning for actions: %w", err)
	}
	return s.Items, s.LastEvaluatedKey, int(s.ScannedCount), nil
}

// findWorkspacePage reads up to limit entries (at most one BatchGetItem's
// worth) of the workspace index and the rows they name, in index order.
// Examined counts the index entries read.
func (e *Engine) findWorkspacePage(ctx context.Context, p ActionFindParams, start map[string]types.AttributeValue, limit int32) ([]map[string]types.AttributeValue, map[string]types.AttributeValue, int, error) {
	names := map[string]string{"#ws": attrWorkspace}
	vals := map[string]types.AttributeValue{":ws": avS(p.WorkspaceID)}
	q, err := e.db.Query(ctx, &dynamodb.QueryInput{
		TableName: e.table(), IndexName: aws.String(IndexWorkspace),
		KeyConditionExpression:    aws.String("#ws = :ws" + p.idRange(names, vals)),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
		ExclusiveStartKey:         start, Limit: aws.Int32(min(limit, listPageMax)),
	})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("error reading the workspace index: %w", err)
	}
	keys := make([]map[string]types.AttributeValue, 0, len(q.Items))
	for _, it := range q.Items {
		keys = append(keys, key(getS(it, attrPK), getS(it, attrSK)))
	}
	rows := map[string]map[string]types.AttributeValue{}
	// The index is eventually consistent, so are these reads.
	if _, err := e.readRows(ctx, rowsRead{keys: keys, eventual: true}, func(_ int64, it map[string]types.AttributeValue) {
		rows[getS(it, attrPK)+"/"+getS(it, attrSK)] = it
	}); err != nil {
		return nil, nil, 0, fmt.Errorf("error reading the workspace's actions: %w", err)
	}
	var out []map[string]types.AttributeValue
	for _, it := range q.Items {
		// A row gone since (deleted) or reused under another id is left out.
		if row := rows[getS(it, attrPK)+"/"+getS(it, attrSK)]; row != nil && getS(row, attrID) == getS(it, attrID) {
			out = append(out, row)
		}
	}
	return out, q.LastEvaluatedKey, int(q.ScannedCount), nil
}

// findSubjectPage reads a page of the subject's index entries and the
// action rows they name (records and tombstones are skipped).
func (e *Engine) findSubjectPage(ctx context.Context, p ActionFindParams, start map[string]types.AttributeValue, limit int32) ([]map[string]types.AttributeValue, map[string]types.AttributeValue, int, error) {
	q, err := e.db.Query(ctx, &dynamodb.QueryInput{
		TableName: e.table(), IndexName: aws.String(IndexSubject),
		KeyConditionExpression:    aws.String("#spk = :spk"),
		ExpressionAttributeNames:  map[string]string{"#spk": attrSubPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":spk": avS(subPK(p.WorkspaceID, p.SubjectID))},
		ExclusiveStartKey:         start, Limit: aws.Int32(limit),
	})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("error reading subject index: %w", err)
	}
	var keys []map[string]types.AttributeValue
	for _, it := range q.Items {
		if _, ok := seqFromActionSK(getS(it, attrSK)); ok {
			keys = append(keys, key(getS(it, attrPK), getS(it, attrSK)))
		}
	}
	rows := map[string]map[string]types.AttributeValue{}
	for len(keys) > 0 {
		n := min(len(keys), 100)
		r, err := e.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{e.cfg.Table: {Keys: keys[:n]}},
		})
		if err != nil {
			return nil, nil, 0, fmt.Errorf("error reading the subject's actions: %w", err)
		}
		for _, it := range r.Responses[e.cfg.Table] {
			rows[getS(it, attrPK)+"/"+getS(it, attrSK)] = it
		}
		keys = keys[n:]
		if un, ok := r.UnprocessedKeys[e.cfg.Table]; ok {
			keys = append(keys, un.Keys...)
		}
	}
	// In index order; each row carries its index key, so a page that stops
	// within it goes on from there.
	var out []map[string]types.AttributeValue
	for _, it := range q.Items {
		if row := rows[getS(it, attrPK)+"/"+getS(it, attrSK)]; row != nil {
			out = append(out, row)
		}
	}
	return out, q.LastEvaluatedKey, int(q.ScannedCount), nil
}

// Where a find reads (a cursor names it).
const (
	findSubject   = "subject"   // the subject index
	findLane      = "lane"      // the lane's partition
	findWorkspace = "workspace" // the workspace index
	findScan      = "scan"      // the table: every workspace
)

// source is where a find reads.
func (p ActionFindParams) source() string {
	switch {
	case p.SubjectID != "":
		return findSubject
	case p.LaneKey != "":
		return findLane
	case p.WorkspaceID != "":
		return findWorkspace
	}
	return findScan
}

// decodeFindCursor reads a find's cursor (nil start when there is none) and
// the source it goes on reading; a cursor of another source is refused.
func decodeFindCursor(cursor, source string) (map[string]types.AttributeValue, string, []int, error) {
	if cursor == "" {
		return nil, source, nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	var c findCursor
	if err == nil {
		err = json.Unmarshal(raw, &c)
	}
	if err != nil || c.Source != source || len(c.Key) == 0 || !validLaneParts(c.Parts) {
		return nil, "", nil, &ValidationError{Field: "cursor", Message: "malformed cursor, or one of another listing"}
	}
	start := map[string]types.AttributeValue{}
	for k, v := range c.Key {
		start[k] = avS(v)
	}
	return start, c.Source, c.Parts, nil
}

// encodeFindCursor is the cursor that resumes a find of source at start.
func encodeFindCursor(source string, start map[string]types.AttributeValue, parts []int) string {
	c := findCursor{Source: source, Key: map[string]string{}, Parts: parts}
	for k, v := range start {
		c.Key[k] = getS(map[string]types.AttributeValue{k: v}, k)
	}
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}
