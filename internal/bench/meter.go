package bench

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

// meter is the benchmark's unit breakdown: it wraps the embedded DynamoDB
// and books every call's units (the DB's own capacity counters, read before
// and after the call under one lock, so refused writes and cancelled
// transactions count what they cost) to a label that says what the call
// was: the request, the row it names (action, lane tail, fence, ...) and,
// for an update, what it sets. A transaction's label lists its items.
type meter struct {
	outbox.DynamoDB
	db *ddblocal.DB

	mu  sync.Mutex
	per map[string]*Units
	// unbooked passes calls through without booking them: the booking
	// holds mu across the call (to read the counters before and after it),
	// which makes concurrent calls wait for each other. Runs that time
	// real-time calls (ThroughputRun) set it.
	unbooked bool
}

// Units is what one kind of call cost in total.
type Units struct {
	Calls           int
	WRU, DueWRU     float64 // all write units, and the due index's share
	RRU, DueRRU     float64
	TxItems, TxRuns int // transactions: their items, and how many
}

func newMeter(db *ddblocal.DB) *meter {
	return &meter{DynamoDB: db, db: db, per: map[string]*Units{}}
}

// book runs call and books its units to label.
func (m *meter) book(label string, call func() error) error {
	if m.unbooked {
		return call()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	before := m.db.Capacity(table)
	err := call()
	after := m.db.Capacity(table)
	u := m.per[label]
	if u == nil {
		u = &Units{}
		m.per[label] = u
	}
	u.Calls++
	u.WRU += after.TotalWriteUnits() - before.TotalWriteUnits()
	u.RRU += after.TotalReadUnits() - before.TotalReadUnits()
	u.DueWRU += after.Indexes[outbox.IndexDue].WriteUnits - before.Indexes[outbox.IndexDue].WriteUnits
	u.DueRRU += after.Indexes[outbox.IndexDue].ReadUnits - before.Indexes[outbox.IndexDue].ReadUnits
	return err
}

// reset forgets what was booked (after a workload's setup).
func (m *meter) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.per = map[string]*Units{}
}

// Breakdown is the meter's booking per label, per delivered action.
type Breakdown struct {
	Label           string
	Calls           float64
	WRU, DueWRU     float64
	RRU, DueRRU     float64
	ItemsPerTx      float64 // transactions only
	CallsPerAction  float64
	SharePercentWRU float64
}

func (m *meter) breakdown(delivered int) []Breakdown {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := float64(max(delivered, 1))
	var total float64
	for _, u := range m.per {
		total += u.WRU
	}
	out := make([]Breakdown, 0, len(m.per))
	for l, u := range m.per {
		b := Breakdown{Label: l, Calls: float64(u.Calls), WRU: u.WRU / n, DueWRU: u.DueWRU / n, RRU: u.RRU / n, DueRRU: u.DueRRU / n, CallsPerAction: float64(u.Calls) / n}
		if u.TxRuns > 0 {
			b.ItemsPerTx = float64(u.TxItems) / float64(u.TxRuns)
		}
		if total > 0 {
			b.SharePercentWRU = 100 * u.WRU / total
		}
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].WRU != out[j].WRU {
			return out[i].WRU > out[j].WRU
		}
		if out[i].RRU != out[j].RRU {
			return out[i].RRU > out[j].RRU
		}
		return out[i].Label < out[j].Label
	})
	return out
}

// rowOf names the row a key addresses.
func rowOf(k map[string]types.AttributeValue) string {
	pk, sk := avStr(k["pk"]), avStr(k["sk"])
	switch {
	case strings.HasPrefix(pk, "K#"):
		return "idempotency record"
	case strings.HasPrefix(sk, "A#"):
		return "action"
	case strings.HasPrefix(pk, "L#"), strings.HasPrefix(sk, "L#"):
		return "lane tail"
	case strings.HasPrefix(sk, "R#"), strings.HasPrefix(sk, "H#"):
		return "journal"
	case sk == "FENCE":
		return "fence"
	case sk == "SEQ":
		return "seq counter"
	}
	return "row " + sk
}

func avStr(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// updateWhat says what an update expression writes, in the words of
// design.md: the attributes it sets or removes, named by the table's
// attribute names.
func updateWhat(row, expr string, names map[string]string) string {
	resolve := func(tok string) string {
		tok = strings.TrimRight(tok, ",")
		var parts []string
		for _, p := range strings.Split(tok, ".") {
			if n, ok := names[p]; ok {
				p = n
			}
			parts = append(parts, p)
		}
		if len(parts) > 1 && parts[0] == "inf" {
			return "inf.*"
		}
		return strings.Join(parts, ".")
	}
	clause := ""
	set := map[string]map[string]bool{}
	for _, f := range strings.Fields(expr) {
		switch strings.ToUpper(f) {
		case "SET", "REMOVE", "ADD", "DELETE":
			clause = strings.ToUpper(f)
			continue
		}
		if strings.HasPrefix(f, "#") {
			// The target of an assignment (SET #a = ...) or a removal.
			if set[clause] == nil {
				set[clause] = map[string]bool{}
			}
			set[clause][resolve(f)] = true
		}
	}
	var b strings.Builder
	for _, c := range []string{"SET", "ADD", "REMOVE", "DELETE"} {
		if len(set[c]) == 0 {
			continue
		}
		ks := make([]string, 0, len(set[c]))
		for k := range set[c] {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		fmt.Fprintf(&b, " %s %s", c, strings.Join(ks, ","))
	}
	return friendly(row, strings.TrimSpace(b.String()))
}

// friendly gives the common writes the names design.md uses.
func friendly(row, what string) string {
	has := func(s string) bool { return strings.Contains(" "+what+" ", s) }
	switch row {
	case "action":
		switch {
		case has("sr,") || has(",sr") || strings.Contains(what, "SET ea") || strings.Contains(what, ",ea,"):
			if strings.Contains(what, "pl") && !strings.Contains(what, "kind") {
				return "action end"
			}
			return "action tombstone"
		case strings.Contains(what, "ep,") && strings.Contains(what, "own"):
			return "action claim"
		case what == "SET wsa":
			return "action write fence"
		case what == "SET lx":
			return "action lease renewal"
		case what == "SET prev":
			return "action lane link (" + what + ")"
		}
		return "action " + what
	case "fence":
		switch {
		case strings.Contains(what, "cv"):
			return "fence take"
		case strings.HasPrefix(what, "SET olx"):
			return "fence release"
		case strings.Contains(what, "inf.*"):
			return "fence in-flight update"
		}
	case "seq counter":
		return "seq block"
	case "lane tail":
		return "lane tail " + what
	}
	return row + " " + what
}

func (m *meter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.GetItemOutput, err error) {
	l := "get " + rowOf(in.Key)
	if aws.ToBool(in.ConsistentRead) {
		l += " (consistent)"
	}
	err = m.book(l, func() error { out, err = m.DynamoDB.GetItem(ctx, in, o...); return err })
	return out, err
}

func (m *meter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.PutItemOutput, err error) {
	err = m.book("put "+rowOf(in.Item), func() error { out, err = m.DynamoDB.PutItem(ctx, in, o...); return err })
	return out, err
}

func (m *meter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.UpdateItemOutput, err error) {
	l := "update " + updateWhat(rowOf(in.Key), aws.ToString(in.UpdateExpression), in.ExpressionAttributeNames)
	err = m.book(l, func() error { out, err = m.DynamoDB.UpdateItem(ctx, in, o...); return err })
	return out, err
}

func (m *meter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.DeleteItemOutput, err error) {
	err = m.book("delete "+rowOf(in.Key), func() error { out, err = m.DynamoDB.DeleteItem(ctx, in, o...); return err })
	return out, err
}

func (m *meter) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (out *dynamodb.QueryOutput, err error) {
	l := "query table"
	if in.IndexName != nil {
		l = "query index " + aws.ToString(in.IndexName)
	} else if v, ok := in.ExpressionAttributeValues[":lo"]; ok && strings.HasPrefix(avStr(v), "A#") {
		l = "query table (action rows)"
	}
	err = m.book(l, func() error { out, err = m.DynamoDB.Query(ctx, in, o...); return err })
	return out, err
}

func (m *meter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.BatchGetItemOutput, err error) {
	l := "batch get"
	for _, ka := range in.RequestItems {
		if len(ka.Keys) > 0 {
			l += " " + rowOf(ka.Keys[0]) + " rows"
		}
		if aws.ToBool(ka.ConsistentRead) {
			l += " (consistent)"
		}
	}
	err = m.book(l, func() error { out, err = m.DynamoDB.BatchGetItem(ctx, in, o...); return err })
	return out, err
}

func (m *meter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (out *dynamodb.TransactWriteItemsOutput, err error) {
	kinds := map[string]bool{}
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			kinds["put "+rowOf(it.Put.Item)] = true
		case it.Update != nil:
			kinds["update "+updateWhat(rowOf(it.Update.Key), aws.ToString(it.Update.UpdateExpression), it.Update.ExpressionAttributeNames)] = true
		case it.Delete != nil:
			kinds["delete "+rowOf(it.Delete.Key)] = true
		case it.ConditionCheck != nil:
			kinds["check "+rowOf(it.ConditionCheck.Key)] = true
		}
	}
	ks := make([]string, 0, len(kinds))
	for k := range kinds {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	l := "tx{" + strings.Join(ks, "; ") + "}"
	err = m.book(l, func() error { out, err = m.DynamoDB.TransactWriteItems(ctx, in, o...); return err })
	m.mu.Lock()
	if u := m.per[l]; u != nil {
		u.TxItems += len(in.TransactItems)
		u.TxRuns++
	}
	m.mu.Unlock()
	return out, err
}
