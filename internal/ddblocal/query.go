package ddblocal

import (
	"bytes"
	"context"
	"hash/fnv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/btree"

	"github.com/ferryhq/ferry/internal/ddblocal/expr"
)

// Query and Scan follow
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Query.html
// and .../Scan.html: Limit counts items evaluated before the filter, a page
// stops at 1 MB of items read, LastEvaluatedKey names the last item
// evaluated, and reads are billed on the bytes read rounded up to 4 KB.

const maxPageBytes = 1024 * 1024

// target is what a Query or Scan reads: a table or one of its indexes.
type target struct {
	t    *table
	ix   *index // nil for the base table
	keys keySchema
}

func (tg target) tree() *btree.BTreeG[entry] {
	if tg.ix != nil {
		return tg.ix.tree
	}
	return tg.t.items
}

func (db *DB) target(t *table, indexName *string, consistent bool) (target, error) {
	if indexName == nil {
		return target{t: t, keys: t.schema.keys}, nil
	}
	name := aws.ToString(indexName)
	for _, ix := range t.indexes {
		if ix.schema.name == name {
			if ix.schema.global && consistent {
				return target{}, validationError(msgConsistentReadGSI)
			}
			if db.clock.Now().Before(ix.activeAt) {
				return target{}, backfillingError(name)
			}
			return target{t: t, ix: ix, keys: ix.schema.keys}, nil
		}
	}
	return target{}, validationError("The table does not have the specified index: %s", name)
}

// entryKeyOf encodes the stored key an item has in the target, for
// ExclusiveStartKey.
func (tg target) entryKeyOf(item Item) ([]byte, error) {
	bad := validationError("The provided starting key is invalid: The provided key element does not match the schema")
	s := tg.t.schema
	want := map[string]bool{}
	for _, n := range s.keys.names() {
		want[n] = true
	}
	if tg.ix != nil {
		for _, n := range tg.keys.names() {
			want[n] = true
		}
	}
	if len(item) != len(want) {
		return nil, bad
	}
	for n := range item {
		if !want[n] {
			return nil, bad
		}
	}
	base, err := s.keyOf(s.keyItem(item))
	if err != nil {
		return nil, bad
	}
	if tg.ix == nil {
		return base, nil
	}
	k, ok := s.indexKey(tg.ix.schema, item, base)
	if !ok {
		return nil, bad
	}
	return k, nil
}

// lastKey is the LastEvaluatedKey for an item read from the target.
func (tg target) lastKey(item Item) Item {
	out := Item{}
	names := tg.t.schema.keys.names()
	if tg.ix != nil {
		names = append(names, tg.keys.names()...)
	}
	for _, n := range names {
		if v, ok := item[n]; ok {
			out[n] = v
		}
	}
	return copyItem(out)
}

// walk visits the entries with lo <= key < hi (nil: unbounded) in order.
func walk(tree *btree.BTreeG[entry], lo, hi []byte, desc bool, fn func(entry) bool) {
	if !desc {
		switch {
		case lo == nil && hi == nil:
			tree.Ascend(fn)
		case hi == nil:
			tree.AscendGreaterOrEqual(probe(lo), fn)
		case lo == nil:
			tree.AscendLessThan(probe(hi), fn)
		default:
			tree.AscendRange(probe(lo), probe(hi), fn)
		}
		return
	}
	visit := func(e entry) bool {
		if hi != nil && bytes.Compare(e.key(), hi) >= 0 {
			return true
		}
		if lo != nil && bytes.Compare(e.key(), lo) < 0 {
			return false
		}
		return fn(e)
	}
	if hi == nil {
		tree.Descend(visit)
		return
	}
	tree.DescendLessOrEqual(probe(hi), visit)
}

// keyBounds turns a key condition into the range of stored keys it covers.
func keyBounds(kc *expr.KeyCondition, keys keySchema) (lo, hi []byte, err error) {
	p, err := appendKeyEquality(nil, keys.hash, kc.HashValue)
	if err != nil {
		return nil, nil, err
	}
	if kc.RangeName == "" {
		return p, prefixEnd(p), nil
	}
	return rangeBounds(p, keys.rng, kc.RangeOp, kc.RangeValues)
}

var errKeyTypeMismatch = validationError("One or more parameter values were invalid: Condition parameter type does not match schema type")

// appendKeyEquality appends the encoding of an equality condition's value on
// key attribute ka.
func appendKeyEquality(p []byte, ka keyAttr, v types.AttributeValue) ([]byte, error) {
	b, prob := appendKeyValue(p, ka, v)
	switch prob {
	case keyOK:
		return b, nil
	case keyEmpty:
		return nil, validationError("One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty %s value. Key: %s", emptyKind(ka), ka.name)
	}
	return nil, errKeyTypeMismatch
}

// multiKeyBounds turns a condition on a multi-attribute key into the range
// of stored keys it covers: the equalities make a prefix, the last RANGE
// condition bounds what follows.
func multiKeyBounds(mk *expr.MultiKeyCondition, keys keySchema) (lo, hi []byte, err error) {
	var p []byte
	for i, ka := range keys.hashAttrs() {
		if p, err = appendKeyEquality(p, ka, mk.HashValues[i]); err != nil {
			return nil, nil, err
		}
	}
	ranges := keys.rangeAttrs()
	for i, v := range mk.RangeEquals {
		if p, err = appendKeyEquality(p, ranges[i], v); err != nil {
			return nil, nil, err
		}
	}
	if mk.LastOp == "" {
		return p, prefixEnd(p), nil
	}
	return rangeBounds(p, ranges[len(mk.RangeEquals)], mk.LastOp, mk.LastValues)
}

// rangeBounds bounds the keys that start with p by a condition on the RANGE
// attribute rng that comes next.
func rangeBounds(p []byte, rng keyAttr, op string, values []types.AttributeValue) (lo, hi []byte, err error) {
	mismatch := errKeyTypeMismatch
	enc := func(v types.AttributeValue) ([]byte, error) {
		return appendKeyEquality(append([]byte(nil), p...), rng, v)
	}
	v0, err := enc(values[0])
	if err != nil {
		return nil, nil, err
	}
	switch op {
	case "=":
		return v0, prefixEnd(v0), nil
	case "<":
		return p, v0, nil
	case "<=":
		return p, prefixEnd(v0), nil
	case ">":
		return prefixEnd(v0), prefixEnd(p), nil
	case ">=":
		return v0, prefixEnd(p), nil
	case "BETWEEN":
		v1, err := enc(values[1])
		if err != nil {
			return nil, nil, err
		}
		if bytes.Compare(v0, v1) > 0 {
			return nil, nil, validationError("Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: {%s:%s}, upper bound operand: AttributeValue: {%s:%s}", typeName(values[0]), scalarText(values[0]), typeName(values[1]), scalarText(values[1]))
		}
		return v0, prefixEnd(v1), nil
	case "begins_with":
		var raw []byte
		switch v := values[0].(type) {
		case *types.AttributeValueMemberS:
			raw = []byte(v.Value)
		case *types.AttributeValueMemberB:
			raw = v.Value
		default:
			return nil, nil, validationError("Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: %s", typeName(values[0]))
		}
		if rng.typ == types.ScalarAttributeTypeN || typeName(values[0]) != string(rng.typ) {
			return nil, nil, mismatch
		}
		pre := appendEscaped(append([]byte(nil), p...), raw)
		return pre, prefixEnd(pre), nil
	}
	return nil, nil, validationError("Invalid KeyConditionExpression: unsupported operator %s", op)
}

func scalarText(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	}
	return ""
}

// readSpec is what a Query or Scan returns of each item.
type readSpec struct {
	selectKind types.Select
	proj       *projector
	filter     *expr.Condition
	fetchBase  bool // LSI read of ALL_ATTRIBUTES: read the base item
}

func (db *DB) readSpec(tg target, sel types.Select, projS *string, proj *projector, filter *expr.Condition) (readSpec, error) {
	rs := readSpec{selectKind: sel, proj: proj, filter: filter}
	if rs.selectKind == "" {
		switch {
		case projS != nil:
			rs.selectKind = types.SelectSpecificAttributes
		case tg.ix != nil:
			rs.selectKind = types.SelectAllProjectedAttributes
		default:
			rs.selectKind = types.SelectAllAttributes
		}
	}
	switch rs.selectKind {
	case types.SelectAllAttributes:
		if projS != nil {
			return rs, validationError("Cannot specify the ProjectionExpression when choosing to get ALL_ATTRIBUTES")
		}
		if tg.ix != nil && tg.ix.schema.projection != types.ProjectionTypeAll {
			if tg.ix.schema.global {
				return rs, validationError("One or more parameter values were invalid: Select type ALL_ATTRIBUTES is not supported for global secondary index %s because its projection type is not ALL", tg.ix.schema.name)
			}
			rs.fetchBase = true
		}
	case types.SelectAllProjectedAttributes:
		if tg.ix == nil {
			return rs, validationError("ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName")
		}
		if projS != nil {
			return rs, validationError("Cannot specify the ProjectionExpression when choosing to get ALL_PROJECTED_ATTRIBUTES")
		}
	case types.SelectCount:
		if projS != nil {
			return rs, validationError("Cannot specify the ProjectionExpression when choosing to get only the COUNT")
		}
	case types.SelectSpecificAttributes:
		if projS == nil {
			return rs, validationError("Must specify the ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES")
		}
	default:
		return rs, validationError("1 validation error detected: Value '%s' at 'select' failed to satisfy constraint: Member must satisfy enum value set: [SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]", rs.selectKind)
	}
	return rs, nil
}

// page is the result of reading a range.
type page struct {
	items   []Item
	count   int32
	scanned int32
	last    Item
	bytes   int
}

// read evaluates entries of the target from lo to hi until limit items or
// 1 MB were evaluated.
func (tg target) read(rs readSpec, lo, hi []byte, desc bool, limit int32, keep func(Item) bool) (page, error) {
	var pg page
	var ferr error
	walk(tg.tree(), lo, hi, desc, func(e entry) bool {
		item := e.item()
		if keep != nil && !keep(item) {
			return true
		}
		if rs.fetchBase {
			if be, ok := tg.t.get(e.key()[len(e.key())-baseKeyLen(tg, item):]); ok {
				item = be.item()
			}
		}
		pg.scanned++
		pg.bytes += int(e.size)
		ok, err := holds(rs.filter, item)
		if err != nil {
			ferr = err
			return false
		}
		if ok {
			pg.count++
			if rs.selectKind != types.SelectCount {
				pg.items = append(pg.items, rs.proj.apply(item))
			}
		}
		if (limit > 0 && pg.scanned >= limit) || pg.bytes >= maxPageBytes {
			pg.last = tg.lastKey(item)
			return false
		}
		return true
	})
	return pg, ferr
}

func baseKeyLen(tg target, item Item) int {
	k, err := tg.t.schema.keyOf(tg.t.schema.keyItem(item))
	if err != nil {
		return 0
	}
	return len(k)
}

func checkLimit(limit *int32) error {
	if limit != nil && *limit < 1 {
		return validationError("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", *limit)
	}
	return nil
}

// Query reads the items of one partition key, in sort key order.
func (db *DB) Query(ctx context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c, err := db.begin(ctx, "Query", aws.ToString(in.TableName))
	if err != nil {
		return nil, err
	}
	out, err := db.query(in)
	return finish(c, out, err)
}

func (db *DB) query(in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
	in, legacy, err := legacyQuery(in)
	if err != nil {
		return nil, err
	}
	if in.KeyConditionExpression == nil {
		return nil, validationError("Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.")
	}
	if err := checkLimit(in.Limit); err != nil {
		return nil, err
	}
	x, err := newExprs(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	if err != nil {
		return nil, err
	}
	kc, err := expr.ParseKeyCondition(*in.KeyConditionExpression, x.usage)
	if err != nil {
		return nil, asValidation(err)
	}
	filter, err := x.filter(in.FilterExpression)
	if err != nil {
		return nil, err
	}
	proj, err := x.projection(in.ProjectionExpression)
	if err != nil {
		return nil, err
	}
	if err := x.done(); err != nil {
		return nil, err
	}
	name := aws.ToString(in.TableName)
	db.lockRead(name)
	defer db.mu.RUnlock()
	t, err := db.table(name)
	if err != nil {
		return nil, err
	}
	consistent := aws.ToBool(in.ConsistentRead)
	tg, err := db.target(t, in.IndexName, consistent)
	if err != nil {
		return nil, err
	}
	var mk *expr.MultiKeyCondition
	if tg.keys.multi() {
		var hashes, ranges []string
		for _, ka := range tg.keys.hashAttrs() {
			hashes = append(hashes, ka.name)
		}
		for _, ka := range tg.keys.rangeAttrs() {
			ranges = append(ranges, ka.name)
		}
		if mk, err = kc.ForMultiKey(hashes, ranges); err != nil {
			return nil, asValidation(err)
		}
	} else if kc, err = kc.ForSchema(tg.keys.hash.name, tg.keys.rng.name); err != nil {
		return nil, asValidation(err)
	}
	rs, err := db.readSpec(tg, in.Select, in.ProjectionExpression, proj, filter)
	if err != nil {
		return nil, err
	}
	if in.FilterExpression != nil {
		if k := filterKeyAttribute(*in.FilterExpression, in.ExpressionAttributeNames, tg.keys.names()); k != "" {
			if legacy.queryFilter {
				return nil, validationError("QueryFilter can only contain non-key attributes: Primary key attribute: %s", k)
			}
			return nil, validationError("Filter Expression can only contain non-primary key attributes: Primary key attribute: %s", k)
		}
	}
	var lo, hi []byte
	if mk != nil {
		lo, hi, err = multiKeyBounds(mk, tg.keys)
	} else {
		lo, hi, err = keyBounds(kc, tg.keys)
	}
	if err != nil {
		return nil, err
	}
	desc := in.ScanIndexForward != nil && !*in.ScanIndexForward
	if in.ExclusiveStartKey != nil {
		k, err := tg.entryKeyOf(in.ExclusiveStartKey)
		if err != nil {
			return nil, err
		}
		if desc {
			if bytes.Compare(k, hi) < 0 {
				hi = k
			}
		} else if succ := append(k, 0x00); bytes.Compare(succ, lo) > 0 {
			lo = succ
		}
	}
	pg, err := tg.read(rs, lo, hi, desc, aws.ToInt32(in.Limit), nil)
	if err != nil {
		return nil, err
	}
	var u usage
	defer db.record(&u)
	tg.bookRead(&u, pg.bytes, consistent)
	out := &dynamodb.QueryOutput{
		Items:            pg.items,
		Count:            pg.count,
		ScannedCount:     pg.scanned,
		LastEvaluatedKey: pg.last,
		ConsumedCapacity: u.single(in.ReturnConsumedCapacity),
	}
	if out.Items == nil && rs.selectKind != types.SelectCount {
		out.Items = []Item{}
	}
	return out, nil
}

func (tg target) bookRead(u *usage, size int, consistent bool) {
	units := readUnits(size, consistent)
	if tg.ix == nil {
		u.of(tg.t).read += units
		return
	}
	u.of(tg.t).index(tg.ix.schema.name).ReadUnits += units
}

// Scan reads every item of a table or index, optionally one segment of a
// parallel scan.
func (db *DB) Scan(ctx context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	c, err := db.begin(ctx, "Scan", aws.ToString(in.TableName))
	if err != nil {
		return nil, err
	}
	out, err := db.scan(in)
	return finish(c, out, err)
}

func (db *DB) scan(in *dynamodb.ScanInput) (*dynamodb.ScanOutput, error) {
	in, err := legacyScan(in)
	if err != nil {
		return nil, err
	}
	if err := checkLimit(in.Limit); err != nil {
		return nil, err
	}
	segment, total := aws.ToInt32(in.Segment), aws.ToInt32(in.TotalSegments)
	switch {
	case in.Segment != nil && in.TotalSegments == nil:
		return nil, validationError("The TotalSegments parameter is required but was not present in the request when Segment parameter is present")
	case in.Segment == nil && in.TotalSegments != nil:
		return nil, validationError("The Segment parameter is required but was not present in the request when parameter TotalSegments is present")
	case in.TotalSegments != nil && (total < 1 || total > 1000000):
		return nil, validationError("1 validation error detected: Value '%d' at 'totalSegments' failed to satisfy constraint: Member must have value less than or equal to 1000000", total)
	case in.Segment != nil && (segment < 0 || segment >= total):
		return nil, validationError("The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: %d is not less than TotalSegments: %d", segment, total)
	}
	x, err := newExprs(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	if err != nil {
		return nil, err
	}
	filter, err := x.filter(in.FilterExpression)
	if err != nil {
		return nil, err
	}
	proj, err := x.projection(in.ProjectionExpression)
	if err != nil {
		return nil, err
	}
	if err := x.done(); err != nil {
		return nil, err
	}
	name := aws.ToString(in.TableName)
	db.lockRead(name)
	defer db.mu.RUnlock()
	t, err := db.table(name)
	if err != nil {
		return nil, err
	}
	consistent := aws.ToBool(in.ConsistentRead)
	tg, err := db.target(t, in.IndexName, consistent)
	if err != nil {
		return nil, err
	}
	rs, err := db.readSpec(tg, in.Select, in.ProjectionExpression, proj, filter)
	if err != nil {
		return nil, err
	}
	var lo []byte
	if in.ExclusiveStartKey != nil {
		k, err := tg.entryKeyOf(in.ExclusiveStartKey)
		if err != nil {
			return nil, err
		}
		lo = append(k, 0x00)
	}
	var keep func(Item) bool
	if total > 1 {
		keep = func(item Item) bool {
			h, _ := appendKeyValue(nil, tg.keys.hash, item[tg.keys.hash.name])
			f := fnv.New32a()
			f.Write(h)
			return int32(f.Sum32()%uint32(total)) == segment
		}
		if in.ExclusiveStartKey != nil && !keep(in.ExclusiveStartKey) {
			return nil, validationError("The provided Exclusive start key does not map to the provided Segment and TotalSegments values.")
		}
	}
	pg, err := tg.read(rs, lo, nil, false, aws.ToInt32(in.Limit), keep)
	if err != nil {
		return nil, err
	}
	var u usage
	defer db.record(&u)
	tg.bookRead(&u, pg.bytes, consistent)
	out := &dynamodb.ScanOutput{
		Items:            pg.items,
		Count:            pg.count,
		ScannedCount:     pg.scanned,
		LastEvaluatedKey: pg.last,
		ConsumedCapacity: u.single(in.ReturnConsumedCapacity),
	}
	if out.Items == nil && rs.selectKind != types.SelectCount {
		out.Items = []Item{}
	}
	return out, nil
}
