package outbox

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Action ids (design.md §3.10). An id is minted once, at enqueue, stored in
// the row (`id`) and never changes. It is globally unique and time ordered,
// and it still locates its row, so a read by id is one GetItem:
//
//	<created ms: 10><table id: 8><partition: 3><seq: 1 or more>
//
// in lower-case Crockford base32 (0-9, a-z without i, l, o, u). The
// created time comes first, so ids sort by creation time (to the
// millisecond). The table id is a random 40-bit number drawn once per table
// and kept in the table's identity item: two tables, two stacks, two runs
// of `ferry dev` on fresh tables, or a restored table (whose later actions
// are created later) never hand out the same id. Partition and seq are the
// row's key.

// idAlphabet is Crockford's base32 alphabet, lower case: its characters sort
// in the order of their values, so the encoded time prefix sorts as the
// time does.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// Field widths of an id, in characters (5 bits each).
const (
	idTimeChars      = 10 // 50 bits of Unix milliseconds
	idTableChars     = 8  // 40 random bits
	idPartitionChars = 3  // 15 bits: partitions are at most 4096
	idFixedChars     = idTimeChars + idTableChars + idPartitionChars
	idMaxChars       = idFixedChars + 13 // a seq is at most 63 bits
)

var idValues = func() (v [256]int8) {
	for i := range v {
		v[i] = -1
	}
	for i := 0; i < len(idAlphabet); i++ {
		v[idAlphabet[i]] = int8(i)
	}
	return v
}()

// appendBase32 appends n in base 32, in exactly width characters (width 0:
// as few as it takes).
func appendBase32(b []byte, n uint64, width int) []byte {
	var buf [13]byte
	i := len(buf)
	for n > 0 || (width == 0 && i == len(buf)) || len(buf)-i < width {
		i--
		buf[i] = idAlphabet[n&31]
		n >>= 5
	}
	return append(b, buf[i:]...)
}

func parseBase32(s string) (uint64, bool) {
	var n uint64
	for i := 0; i < len(s); i++ {
		v := idValues[s[i]]
		if v < 0 || n>>59 != 0 {
			return 0, false
		}
		n = n<<5 | uint64(v)
	}
	return n, true
}

// NewActionID formats the id of the action created at created, at
// (partition, seq) of the table whose table id is tableID (40 bits).
func NewActionID(created time.Time, tableID uint64, partition int, seq int64) string {
	ms := max(created.UnixMilli(), 0)
	b := make([]byte, 0, idMaxChars)
	b = appendBase32(b, uint64(ms), idTimeChars)
	b = appendBase32(b, tableID&(1<<40-1), idTableChars)
	b = appendBase32(b, uint64(partition), idPartitionChars)
	b = appendBase32(b, uint64(seq), 0)
	return string(b)
}

// keyLabel names an action row by its key in messages, where its id is not
// known: "partition 3 seq 42".
func keyLabel(partition int, seq int64) string {
	return "partition " + strconv.Itoa(partition) + " seq " + strconv.FormatInt(seq, 10)
}

// idTimePrefix is the start of the ids created at t: every id created
// before t sorts below it, every id created at t or later above it.
func idTimePrefix(t time.Time) string {
	return string(appendBase32(nil, uint64(max(t.UnixMilli(), 0)), idTimeChars))
}

// ParseActionID returns the key an id names: its partition and seq. It
// takes only the canonical spelling. An id that parses still names an
// action only if its row holds that very id (ActionGet checks).
func ParseActionID(id string) (partition int, seq int64, err error) {
	bad := fmt.Errorf("action id %q: not an action id", id)
	if len(id) <= idFixedChars || len(id) > idMaxChars || id[idFixedChars] == '0' {
		return 0, 0, bad
	}
	_, okT := parseBase32(id[:idTimeChars])
	_, okI := parseBase32(id[idTimeChars : idTimeChars+idTableChars])
	if !okT || !okI {
		return 0, 0, bad
	}
	p, ok1 := parseBase32(id[idTimeChars+idTableChars : idFixedChars])
	s, ok2 := parseBase32(id[idFixedChars:])
	if !ok1 || !ok2 || s < 1 || s > 1<<63-1 {
		return 0, 0, bad
	}
	return int(p), int64(s), nil
}

// Label names the action in messages: its id, or its key when the id is not
// known (an action read from the due index, which does not project it).
func (a *Action) Label() string {
	if a.ID != "" {
		return a.ID
	}
	return keyLabel(a.Partition, a.Seq)
}

// The table's marker item (design.md §3.10): its layout version
// (layout.go), written by whatever created the table, and its identity,
// written with it by a creator that can draw it (EnsureTable) or else by the
// first engine that needs it; never changed after.
const (
	pkIdentity      = "M#table"
	skIdentity      = "M"
	attrTableID     = "tid" // N: the table id of action ids (40 bits)
	attrCursorKey   = "ck"  // B: the key that signs list cursors (32 bytes)
	cursorKeyLength = 32
)

// tableIdentity is what the identity item holds.
type tableIdentity struct {
	tableID   uint64
	cursorKey []byte
}

// identityCache holds the table's identity once read: at most one read (and,
// for the first engine of a table the CDK stack created, one write) per
// process; the read is LayoutCheck's.
type identityCache struct {
	mu sync.Mutex
	id *tableIdentity
}

// identity returns the table's identity, adding it to the marker when the
// table has none yet. A failure is not remembered: the next call tries
// again.
func (e *Engine) identity(ctx context.Context) (*tableIdentity, error) {
	if err := e.LayoutCheck(ctx); err != nil {
		return nil, err
	}
	e.ident.mu.Lock()
	defer e.ident.mu.Unlock()
	if e.ident.id != nil {
		return e.ident.id, nil
	}
	for try := 0; try < 3; try++ {
		id, err := e.readIdentity(ctx)
		if err != nil {
			return nil, err
		}
		if id == nil {
			id, err = e.addIdentity(ctx)
		}
		if err != nil {
			return nil, err
		}
		if id != nil {
			e.ident.id = id
			return id, nil
		}
	}
	return nil, errors.New("outbox: the table's identity keeps changing")
}

func (e *Engine) readIdentity(ctx context.Context) (*tableIdentity, error) {
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: e.table(), Key: key(pkIdentity, skIdentity), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("error reading the table's identity: %w", err)
	}
	return identityOf(out.Item)
}

// identityOf is the identity the marker item it holds (nil: none yet).
func identityOf(it map[string]types.AttributeValue) (*tableIdentity, error) {
	if !has(it, attrTableID) && !has(it, attrCursorKey) {
		return nil, nil
	}
	ck, _ := it[attrCursorKey].(*types.AttributeValueMemberB)
	if !has(it, attrTableID) || ck == nil || len(ck.Value) != cursorKeyLength {
		return nil, fmt.Errorf("outbox: the table's identity item (%s) is malformed", pkIdentity)
	}
	return &tableIdentity{tableID: uint64(getN(it, attrTableID)), cursorKey: ck.Value}, nil
}

// drawIdentity draws a fresh identity from the engine's identity source.
func (e *Engine) drawIdentity() (*tableIdentity, error) {
	var b [5 + cursorKeyLength]byte
	if _, err := io.ReadFull(e.idRand, b[:]); err != nil {
		return nil, fmt.Errorf("error drawing the table's identity: %w", err)
	}
	var tid uint64
	for _, c := range b[:5] {
		tid = tid<<8 | uint64(c)
	}
	return &tableIdentity{tableID: tid, cursorKey: b[5:]}, nil
}

// addIdentity adds a fresh identity to a marker that has none (another
// engine may be adding its own at the same moment: the first one stands).
// It returns the identity it wrote, or nil when another was there first.
func (e *Engine) addIdentity(ctx context.Context) (*tableIdentity, error) {
	id, err := e.drawIdentity()
	if err != nil {
		return nil, err
	}
	_, err = e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: e.table(), Key: key(pkIdentity, skIdentity),
		UpdateExpression:         aws.String("SET #t = :t, #k = :k"),
		ConditionExpression:      aws.String("attribute_exists(#lv) AND attribute_not_exists(#t)"),
		ExpressionAttributeNames: map[string]string{"#t": attrTableID, "#k": attrCursorKey, "#lv": attrLayout},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":t": avN(int64(id.tableID)), ":k": &types.AttributeValueMemberB{Value: id.cursorKey},
		},
	})
	switch {
	case isCondFailed(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("error writing the table's identity: %w", err)
	}
	return id, nil
}

// createMarker writes the marker item of a table this engine just created:
// its layout and a fresh identity (condition: no marker yet). It returns
// whether it wrote it: false when another creator's stands.
func (e *Engine) createMarker(ctx context.Context) (bool, error) {
	id, err := e.drawIdentity()
	if err != nil {
		return false, err
	}
	it := LayoutMarker()
	it[attrTableID] = avN(int64(id.tableID))
	it[attrCursorKey] = &types.AttributeValueMemberB{Value: id.cursorKey}
	_, err = e.raw.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: e.table(), Item: it, ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	switch {
	case isCondFailed(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("error writing the marker of table %s: %w", e.cfg.Table, err)
	}
	// A table made again under this engine (ferry dev's in-memory
	// DynamoDB came back empty) has a new identity: take it.
	e.ident.mu.Lock()
	e.ident.id = id
	e.ident.mu.Unlock()
	return true, nil
}

// osRandom is the default source of the table's identity: it must differ
// between tables, whatever seed a simulator gives the engine.
var osRandom io.Reader = crand.Reader
