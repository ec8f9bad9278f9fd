package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/ddblocal/expr"
	"github.com/ferryhq/ferry/internal/outbox"
)

const table = "ferry"

// Start is the simulated clocks' starting time.
var Start = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// claimStats is an outbox.Observer that counts claims.
type claimStats struct {
	outbox.NopObserver
	mu        sync.Mutex
	claims    int // claims that took at least one action
	claimed   int
	conflicts int
	short     int
	empty     int
}

func (c *claimStats) ClaimFinished(_ int, claimed, conflicts int, short bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if claimed > 0 {
		c.claims++
		c.claimed += claimed
	} else {
		c.empty++
	}
	c.conflicts += conflicts
	if short {
		c.short++
	}
}

// conflictCounter wraps the DynamoDB client and counts transactions
// cancelled for a TransactionConflict (DynamoDB's answer when two
// transactions touch one item at once) and TransactionConflictException.
type conflictCounter struct {
	outbox.DynamoDB
	mu        sync.Mutex
	conflicts int
}

func (c *conflictCounter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := c.DynamoDB.TransactWriteItems(ctx, in, o...)
	if err != nil && isConflict(err) {
		c.mu.Lock()
		c.conflicts++
		c.mu.Unlock()
	}
	return out, err
}

func isConflict(err error) bool {
	var tc *types.TransactionCanceledException
	if errors.As(err, &tc) {
		for _, r := range tc.CancellationReasons {
			if r.Code != nil && *r.Code == "TransactionConflict" {
				return true
			}
		}
		return false
	}
	var te *types.TransactionConflictException
	return errors.As(err, &te)
}

// env is one engine on one embedded DynamoDB, with the benchmark's kinds.
type env struct {
	db    *ddblocal.DB
	cc    *conflictCounter
	meter *meter
	eng   *outbox.Engine
	prov  *provider
	stats *claimStats
	clk   clock.Clock
	cfg   outbox.Config
}

type envOpts struct {
	clk       clock.Clock // engine and provider clock; default a Manual at Start
	dbClock   clock.Clock // the embedded DynamoDB's clock; default clk
	dbOpts    []ddblocal.Option
	cfg       outbox.Config
	sharedDB  *ddblocal.DB // a second engine on the same DB
	sharedCC  *conflictCounter
	sharedM   *meter
	sharedPrv *provider
	deferFor  time.Duration // KindDeferred's wait (default 1 h)
	unbooked  bool          // the meter books nothing and lets calls overlap (meter.unbooked)
}

func newEnv(ctx context.Context, o envOpts) (*env, error) {
	if o.clk == nil {
		o.clk = clock.NewManual(Start)
	}
	if o.dbClock == nil {
		o.dbClock = o.clk
	}
	if o.cfg.Table == "" {
		o.cfg.Table = table
	}
	e := &env{clk: o.clk, stats: &claimStats{}}
	if o.sharedDB != nil {
		e.db, e.cc, e.meter, e.prov = o.sharedDB, o.sharedCC, o.sharedM, o.sharedPrv
	} else {
		e.db = ddblocal.New(append([]ddblocal.Option{ddblocal.WithClock(o.dbClock)}, o.dbOpts...)...)
		e.meter = newMeter(e.db)
		e.meter.unbooked = o.unbooked
		e.cc = &conflictCounter{DynamoDB: e.meter}
		e.prov = newProvider(o.clk)
	}
	reg, err := registry(e.prov, o.deferFor)
	if err != nil {
		return nil, err
	}
	e.eng, err = outbox.New(e.cc, o.clk, reg, o.cfg, outbox.WithObserver(e.stats))
	if err != nil {
		return nil, err
	}
	e.cfg = e.eng.Config()
	if o.sharedDB == nil {
		if err := e.eng.EnsureTable(ctx); err != nil {
			return nil, err
		}
	}
	e.db.ResetCapacity()
	e.meter.reset()
	return e, nil
}

// payload returns a webhook-like JSON payload of exactly n bytes.
func payload(n int) json.RawMessage {
	const head = `{"url":"https://hooks.example.com/orders","body":{"order":"A-1042","note":"`
	const tail = `"}}`
	pad := n - len(head) - len(tail)
	if pad < 0 {
		pad = 0
	}
	return json.RawMessage(head + strings.Repeat("x", pad) + tail)
}

// PayloadFor returns the payload size that makes a keyless action's item
// (with every attribute an enqueue writes) itemBytes long: a "1 KB action"
// is an item of 1,024 bytes, so its put costs exactly one write unit.
func PayloadFor(ctx context.Context, itemBytes int) (int, error) {
	e, err := newEnv(ctx, envOpts{cfg: outbox.Config{Partitions: 1}})
	if err != nil {
		return 0, err
	}
	const probe = 200
	r, err := e.eng.Enqueue(ctx, outbox.EnqueueParams{Kind: KindWebhook, WorkspaceID: "ws-00001", Payload: payload(probe)})
	if err != nil {
		return 0, err
	}
	p, seq, _ := outbox.ParseActionID(r.Action.ID)
	_ = seq
	out, err := e.db.Scan(ctx, &dynamodb.ScanInput{TableName: strPtr(table)})
	if err != nil {
		return 0, err
	}
	for _, it := range out.Items {
		if sk, ok := it["sk"].(*types.AttributeValueMemberS); ok && strings.HasPrefix(sk.Value, "A#") {
			// The item is largest while executing with its write fence set:
			// add what a claim and the fence write (epoch, attempt, lease,
			// owner, write-started time).
			ms := &types.AttributeValueMemberN{Value: "1772442000000"}
			it["lx"], it["wsa"] = ms, ms
			it["ep"], it["att"] = &types.AttributeValueMemberN{Value: "1"}, &types.AttributeValueMemberN{Value: "1"}
			it["own"] = &types.AttributeValueMemberS{Value: "d-0123456789abcdef"}
			size := expr.ItemSize(it)
			// Ids, seqs and times grow by a few digits over a run: keep 32 bytes.
			return itemBytes - (size - probe) - 32, nil
		}
	}
	return 0, fmt.Errorf("bench: probe action of partition %d not found", p)
}

func strPtr(s string) *string { return &s }
