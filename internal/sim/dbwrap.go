package sim

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/ddblocal"
)

// simDB stands between the engines and the embedded DynamoDB: every call is
// a protocol point where the scheduler may switch processes or kill the
// caller; every committed change is read from the feed and judged with the
// caller's identity. Broken variants rewrite requests here.
type simDB struct {
	w  *world
	db *ddblocal.DB
}

func (d *simDB) enter(ctx context.Context, op, what string, in any) (*proc, error) {
	p := procOf(ctx)
	if p == nil {
		panic("sim: a DynamoDB call without a process")
	}
	if p.killed {
		return p, errKilled
	}
	if p.dieAfter > 0 {
		if p.calls >= p.dieAfter {
			p.killed = true
			d.w.res.Faults["enqueue.kill"]++
			d.w.tracef(p, "KILL before %s %s", op, what)
			return p, errKilled
		}
		p.calls++
	}
	if d.w.ex != nil {
		d.w.ex.pending(p, op, in)
	}
	p.yield(op + " " + what)
	if p.killed {
		return p, errKilled
	}
	p.ncalls++
	d.w.cur = p
	return p, nil
}

func (d *simDB) leave(p *proc, op string, out any, err error) {
	d.w.cur = nil
	if d.w.ex != nil {
		d.w.ex.answered(p, op, out, err)
	}
	if err != nil && p.co {
		d.w.tracef(p, "  %s: %s", op, shortErr(err))
	}
	d.w.readFeed(p)
	if err != nil {
		p.errs++ // after the feed: a debt this very call made counts it
		p.errCalls = append(p.errCalls, p.ncalls)
	}
}

func shortErr(err error) string {
	s := err.Error()
	if i := strings.Index(s, "api error "); i >= 0 {
		s = s[i+10:]
	}
	if len(s) > 90 {
		s = s[:90]
	}
	return s
}

func keyName(k map[string]types.AttributeValue) string {
	pk, sk := str(k, "pk"), str(k, "sk")
	if strings.HasPrefix(sk, "A#") {
		return pk + "/A#" + strings.TrimLeft(sk[2:], "0")
	}
	return pk + "/" + sk
}

func (d *simDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	p, err := d.enter(ctx, "GetItem", keyName(in.Key), in)
	if err != nil {
		return nil, err
	}
	if !aws.ToBool(in.ConsistentRead) && isTailKey(in.Key) && !d.w.checking {
		if item, stale := d.w.stale.read(in.Key, d.w.clk.Now()); stale {
			d.w.res.Faults["ddb.stale_tail_read"]++
			out := &dynamodb.GetItemOutput{Item: item}
			d.leave(p, "GetItem", out, nil)
			return out, nil
		}
	}
	out, err := d.db.GetItem(ctx, in, o...)
	if err == nil && d.w.opt.Broken&BreakReaperBlind != 0 && p.kind == "reaper" && str(in.Key, "sk") == "FENCE" {
		out.Item = nil // the in-flight map too (design.md §3.3)
	}
	d.leave(p, "GetItem", out, err)
	return out, err
}

func (d *simDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	p, err := d.enter(ctx, "PutItem", keyName(in.Item), in)
	if err != nil {
		return nil, err
	}
	if (d.w.opt.Broken&BreakDropPut != 0 && strings.HasPrefix(str(in.Item, "sk"), "A#")) ||
		(d.w.opt.Broken&BreakNoIdempotencyRecord != 0 && str(in.Item, "sk") == "K") {
		d.leave(p, "PutItem", nil, nil)
		return &dynamodb.PutItemOutput{}, nil
	}
	journal := strings.HasPrefix(str(in.Item, "sk"), "R#") || strings.HasPrefix(str(in.Item, "sk"), "H#") // H#: held rows' listings
	if d.w.opt.Broken&BreakDropJournal != 0 && journal {
		d.leave(p, "PutItem", nil, nil)
		return &dynamodb.PutItemOutput{}, nil
	}
	out, err := d.db.PutItem(ctx, in, o...)
	if err != nil && journal {
		p.journalLost = true
	}
	d.leave(p, "PutItem", out, err)
	return out, err
}

func (d *simDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	p, err := d.enter(ctx, "UpdateItem", keyName(in.Key)+" "+verb(in.UpdateExpression), in)
	if err != nil {
		return nil, err
	}
	in = d.w.breakUpdate(p, in)

	if pk := str(in.Key, "pk"); strings.HasPrefix(pk, "K#") && strings.Contains(aws.ToString(in.UpdateExpression), "REMOVE #pl") {
		if d.w.opt.Broken&BreakSkipRecordStrip != 0 {
			d.leave(p, "UpdateItem", nil, nil)
			return &dynamodb.UpdateItemOutput{}, nil
		}
		p.stripTried[pk] = true
	}
	out, err := d.db.UpdateItem(ctx, in, o...)
	if err == nil && str(in.Key, "sk") == "FENCE" {
		d.w.fenceSetsWritten(p, in)
	}
	d.leave(p, "UpdateItem", out, err)
	return out, err
}

func (d *simDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	p, err := d.enter(ctx, "DeleteItem", keyName(in.Key), in)
	if err != nil {
		return nil, err
	}
	if d.w.opt.Broken&BreakEvidenceKept != 0 && strings.HasPrefix(str(in.Key, "sk"), "V#") {
		out := &dynamodb.DeleteItemOutput{}
		d.leave(p, "DeleteItem", out, nil)
		return out, nil
	}
	out, err := d.db.DeleteItem(ctx, in, o...)
	d.leave(p, "DeleteItem", out, err)
	return out, err
}

func (d *simDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	idx := "base"
	if in.IndexName != nil {
		idx = *in.IndexName
	}
	p, err := d.enter(ctx, "Query", idx, in)
	if err != nil {
		return nil, err
	}
	out, err := d.db.Query(ctx, in, o...)
	if err == nil && d.w.opt.Broken&BreakListingSkips != 0 && idx == "workspace" && out.LastEvaluatedKey != nil && len(out.Items) > 1 {
		out.Items, out.Count = out.Items[:len(out.Items)-1], out.Count-1
	}
	if err == nil && d.w.opt.Broken&BreakReaperBlind != 0 && p.kind == "reaper" && idx == "due" {
		out.Items, out.Count, out.LastEvaluatedKey = nil, 0, nil
	}
	if err == nil && d.w.opt.Broken&BreakRetireKeptBlind != 0 && p.kind == "reaper" && has(in.ExpressionAttributeValues, ":a") &&
		aws.ToString(in.ProjectionExpression) == "pk" && aws.ToInt32(in.Limit) == 1 {
		// Retirement's look for any action row or journal item left
		// (partmap.go noRow) finds none.
		out.Items, out.Count, out.LastEvaluatedKey = nil, 0, nil
	}
	d.leave(p, "Query", out, err)
	return out, err
}

func (d *simDB) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	p, err := d.enter(ctx, "Scan", "", in)
	if err != nil {
		return nil, err
	}
	out, err := d.db.Scan(ctx, in, o...)
	d.leave(p, "Scan", out, err)
	return out, err
}

func (d *simDB) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	p, err := d.enter(ctx, "BatchGetItem", "", in)
	if err != nil {
		return nil, err
	}
	out, err := d.db.BatchGetItem(ctx, in, o...)
	if err == nil && d.w.opt.Broken&BreakPredecessorCheck != 0 && in.RequestItems[d.w.cfg.Table].ProjectionExpression != nil {
		// Blind the claim's read of lane predecessors (its prefetch, the
		// one read with a projection).
		out.Responses = map[string][]map[string]types.AttributeValue{}
		out.UnprocessedKeys = nil
	}
	d.leave(p, "BatchGetItem", out, err)
	return out, err
}

func (d *simDB) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	p, err := d.enter(ctx, "BatchWriteItem", "", in)
	if err != nil {
		return nil, err
	}
	out, err := d.db.BatchWriteItem(ctx, in, o...)
	d.leave(p, "BatchWriteItem", out, err)
	return out, err
}

func (d *simDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	p, err := d.enter(ctx, "TransactWriteItems", txWhat(in.TransactItems), in)
	if err != nil {
		return nil, err
	}
	in = d.w.breakTransact(in)
	d.w.stormFault(in)
	d.w.hotLaneFault(p, in)
	out, err := d.db.TransactWriteItems(ctx, in, o...)
	d.leave(p, "TransactWriteItems", out, err)
	return out, err
}

func (d *simDB) TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error) {
	p, err := d.enter(ctx, "TransactGetItems", "", in)
	if err != nil {
		return nil, err
	}
	out, err := d.db.TransactGetItems(ctx, in, o...)
	d.leave(p, "TransactGetItems", out, err)
	return out, err
}

func (d *simDB) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	p, err := d.enter(ctx, "CreateTable", "", in)
	if err != nil {
		return nil, err
	}
	out, err := d.db.CreateTable(ctx, in, o...)
	d.leave(p, "CreateTable", out, err)
	return out, err
}

func (d *simDB) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	p, err := d.enter(ctx, "DescribeTable", "", in)
	if err != nil {
		return nil, err
	}
	out, err := d.db.DescribeTable(ctx, in, o...)
	d.leave(p, "DescribeTable", out, err)
	return out, err
}

func (d *simDB) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	p, err := d.enter(ctx, "UpdateTimeToLive", "", in)
	if err != nil {
		return nil, err
	}
	out, err := d.db.UpdateTimeToLive(ctx, in, o...)
	d.leave(p, "UpdateTimeToLive", out, err)
	return out, err
}

func verb(upd *string) string {
	if upd == nil {
		return ""
	}
	s := *upd
	switch {
	case strings.Contains(s, "#sr = :sr"):
		return "end"
	case strings.Contains(s, "#wsa = :now"):
		return "write-fence"
	case strings.Contains(s, "#cv = if_not_exists"):
		return "fence-take"
	case strings.HasPrefix(s, "SET #olx = :until"):
		return "fence-extend"
	case strings.HasPrefix(s, "SET #olx = :now"):
		return "fence-release"
	case strings.Contains(s, "ADD #n"):
		return "seq-block"
	case strings.Contains(s, "#st = :adm, #nat = :now, #dsk = :dsk, #att = #att - :one"):
		return "release"
	case strings.Contains(s, "#st = :adm"):
		return "retry/defer"
	case strings.HasPrefix(s, "SET #lx = :at"):
		return "reread-wait"
	case strings.HasPrefix(s, "SET #lx = :lx"):
		return "lease-renew"
	case strings.HasPrefix(s, "SET #lx = :now"):
		return "release-fenced"
	}
	return ""
}

func txWhat(items []types.TransactWriteItem) string {
	var parts []string
	for _, it := range items {
		switch {
		case it.Put != nil:
			parts = append(parts, "put "+keyName(it.Put.Item))
		case it.Update != nil:
			parts = append(parts, "upd "+keyName(it.Update.Key))
		case it.Delete != nil:
			parts = append(parts, "del "+keyName(it.Delete.Key))
		case it.ConditionCheck != nil:
			parts = append(parts, "chk "+keyName(it.ConditionCheck.Key))
		}
	}
	s := strings.Join(parts, ", ")
	if len(s) > 160 {
		s = s[:160] + fmt.Sprintf("... (%d items)", len(items))
	}
	return s
}
