package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// Layout is the table layout this build creates (design.md §3.10): the
// version whatever creates a table records on its marker item (`M#table`,
// attribute `lv`). A build accepts a table of layout LayoutMin to Layout:
// both are 1, the layout of v0.1.0, until a new layout is introduced as
// design.md §15 says (its expand release accepts the layout before it).
const (
	Layout    = 1
	LayoutMin = 1
)

// attrLayout is the marker item's layout version (N).
const attrLayout = "lv"

// LayoutDocs is the section of the docs a refused table's error names.
const LayoutDocs = "docs/deploy.md#the-table-layout"

// ErrLayout is what every *LayoutError is (errors.Is): the table is not one
// this build may write.
var ErrLayout = errors.New("outbox: table layout refused")

// LayoutError refuses a table whose layout this build does not know: no
// marker item at all (not a Ferry table), a marker without a layout
// version (a table created before v0.1.0), or a version below LayoutMin or
// above Layout.
type LayoutError struct {
	Table     string
	OtherKeys bool // the table's key schema is not Ferry's: no marker can be in it
	Marker    bool // the table has a marker item (M#table)
	Versioned bool // the marker has a layout version
	Found     int  // the marker's layout version
}

// Is makes every LayoutError ErrLayout.
func (e *LayoutError) Is(target error) bool { return target == ErrLayout }

func (e *LayoutError) Error() string {
	switch {
	case e.OtherKeys:
		return fmt.Sprintf("table %s is not a Ferry table: its key schema is not Ferry's (string pk and sk), so it holds no layout marker; "+
			"this build (layout %d) writes only into a table Ferry created (ferry table create, ferry dev, the stack); see %s", e.Table, Layout, LayoutDocs)
	case !e.Marker:
		return fmt.Sprintf("table %s is not a Ferry table: it has no layout marker (item M#table); this build (layout %d) writes only into a table "+
			"Ferry created (ferry table create, ferry dev, the stack); see %s", e.Table, Layout, LayoutDocs)
	case !e.Versioned:
		return fmt.Sprintf("table %s has no layout version: it was created before v0.1.0, and this build knows layout %d only; "+
			"create a new table and drain this one with the build that wrote it; see %s", e.Table, Layout, LayoutDocs)
	case e.Found < LayoutMin:
		return fmt.Sprintf("table %s has layout %d, older than layout %d of this build: upgrade it with the releases between "+
			"(each layout change takes its own release), or create a new table; see %s", e.Table, e.Found, LayoutMin, LayoutDocs)
	}
	return fmt.Sprintf("table %s has layout %d, newer than layout %d of this build: run a build that knows layout %d; see %s",
		e.Table, e.Found, Layout, e.Found, LayoutDocs)
}

// layoutState is what an engine knows of its table's layout: checked once,
// before the engine's first call, by layoutGate. No lock is held across
// the read: callers that find it unchecked at once read the marker each
// (a simulator steps them one at a time, so a caller waiting on a lock
// held across a call would never be stepped).
type layoutState struct {
	ok atomic.Bool
}

// layoutGate is the engine's DynamoDB client: every call first makes sure
// the table's layout was checked (checkLayout), so no build writes into a
// table it does not know, whichever of its paths writes first. A refused
// table answers every call with the *LayoutError; the check is made again
// at the next call (a table made again meanwhile is accepted).
type layoutGate struct {
	db DynamoDB
	e  *Engine
}

// gatedDB is what the engine calls through its layoutGate: DynamoDB but
// for what it never calls (BatchWriteItem, TransactGetItems) and
// CreateTable, which EnsureTable sends on the raw client (the table has
// no layout marker yet). A call of another operation added to the
// engine must be added here, and so to the gate.
type gatedDB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

var _ gatedDB = layoutGate{}

func (g layoutGate) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if err := g.e.LayoutCheck(ctx); err != nil {
		return nil, err
	}
	return g.db.GetItem(ctx, in, o...)
}

func (g layoutGate) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := g.e.LayoutCheck(ctx); err != nil {
		return nil, err
	}
	return g.db.PutItem(ctx, in, o...)
}

func (g layoutGate) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if err := g.e.LayoutCheck(ctx); err != nil {
		return nil, err
	}
	return g.db.UpdateItem(ctx, in, o...)
}

func (g layoutGate) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if err := g.e.LayoutCheck(ctx); err != nil {
		return nil, err
	}
	return g.db.DeleteItem(ctx, in, o...)
}

func (g layoutGate) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if err := g.e.LayoutCheck(ctx); err != nil {
		return nil, err
	}
	return g.db.Query(ctx, in, o...)
}

func (g layoutGate) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if err := g.e.LayoutCheck(ctx); err != nil {
		return nil, err
	}
	return g.db.Scan(ctx, in, o...)
}

func (g layoutGate) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	if err := g.e.LayoutCheck(ctx); err != nil {
		return nil, err
	}
	return g.db.BatchGetItem(ctx, in, o...)
}

func (g layoutGate) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if err := g.e.LayoutCheck(ctx); err != nil {
		return nil, err
	}
	return g.db.TransactWriteItems(ctx, in, o...)
}

func (g layoutGate) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	if err := g.e.LayoutCheck(ctx); err != nil {
		return nil, err
	}
	return g.db.DescribeTable(ctx, in, o...)
}

func (g layoutGate) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	if err := g.e.LayoutCheck(ctx); err != nil {
		return nil, err
	}
	return g.db.UpdateTimeToLive(ctx, in, o...)
}

// LayoutCheck reads the table's marker item (once per engine: one
// consistent GetItem) and refuses, with a *LayoutError, a table whose
// layout is not Layout (design.md §3.10). Every call of the engine makes it
// first; a function's cold start, `ferry dev` and the operator commands
// make it before anything else, so they fail at once, writing nothing.
func (e *Engine) LayoutCheck(ctx context.Context) error {
	if e.layout.ok.Load() {
		return nil
	}
	out, err := e.raw.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: e.table(), Key: key(pkIdentity, skIdentity), ConsistentRead: aws.Bool(true),
	})
	if otherKeys(err) {
		return &LayoutError{Table: e.cfg.Table, OtherKeys: true}
	}
	if err != nil {
		return fmt.Errorf("error reading the layout of table %s: %w", e.cfg.Table, err)
	}
	if err := layoutOf(e.cfg.Table, out.Item); err != nil {
		return err
	}
	// The identity comes with the marker once written (ident.go).
	if id, err := identityOf(out.Item); err == nil && id != nil {
		e.ident.mu.Lock()
		e.ident.id = id
		e.ident.mu.Unlock()
	}
	e.layout.ok.Store(true)
	return nil
}

// otherKeys reports whether err is DynamoDB refusing the marker's key
// because the table's key schema is another (a table that is not Ferry's,
// e.g. one keyed by `id` alone).
func otherKeys(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "ValidationException" &&
		strings.Contains(api.ErrorMessage(), "key element does not match the schema")
}

// layoutOf checks the marker item it of table (nil: none).
func layoutOf(table string, it map[string]types.AttributeValue) error {
	if len(it) == 0 {
		return &LayoutError{Table: table}
	}
	if lv := int(getN(it, attrLayout)); !has(it, attrLayout) || lv < LayoutMin || lv > Layout {
		return &LayoutError{Table: table, Marker: true, Versioned: has(it, attrLayout), Found: lv}
	}
	return nil
}

// TableLayout returns the layout version of the engine's table (a
// consistent read of its marker, after LayoutCheck).
func (e *Engine) TableLayout(ctx context.Context) (int, error) {
	if err := e.LayoutCheck(ctx); err != nil {
		return 0, err
	}
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: e.table(), Key: key(pkIdentity, skIdentity), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, fmt.Errorf("error reading the layout of table %s: %w", e.cfg.Table, err)
	}
	if err := layoutOf(e.cfg.Table, out.Item); err != nil {
		return 0, err
	}
	return int(getN(out.Item, attrLayout)), nil
}

// LayoutMarker is the marker item that a table's creator writes when it
// cannot draw the table's identity (the CDK stack's custom resource: a
// template holds no secret), with the condition that no marker exists: the
// layout version only. The first engine that needs the identity adds it
// (ident.go).
func LayoutMarker() map[string]types.AttributeValue {
	it := key(pkIdentity, skIdentity)
	it[attrLayout] = avN(Layout)
	return it
}
