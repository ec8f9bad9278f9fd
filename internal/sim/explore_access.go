package sim

import (
	"encoding/binary"
	"hash/maphash"

	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/ddblocal"
)

// What a step of a process touches, for the explorer's partial-order
// reduction (explore.go): two steps of different processes commute when
// neither writes what the other touches. A key is an item collection
// (a partition key): the checkers judge a write to an action row against
// the partition's fence row and the lane's other rows, all of them under
// the same partition key, so rows of one partition are one key. An index
// query or a scan reads every key ("*"); a clock move writes every key.
// Provider calls touch "prov" (the calls in flight, the providers' stores)
// and read their action's partition (the lane checker reads its rows).

// accessKey is one key a step reads or writes.
type accessKey struct {
	key   string
	write bool
}

// access is what one step touches.
type access []accessKey

const anyKey = "*"

func (a access) add(key string, write bool) access {
	for i, k := range a {
		if k.key == key {
			a[i].write = a[i].write || write
			return a
		}
	}
	return append(a, accessKey{key, write})
}

// conflicts reports whether two steps do not commute.
func (a access) conflicts(b access) bool {
	for _, x := range a {
		for _, y := range b {
			if (x.write || y.write) && (x.key == y.key || x.key == anyKey || y.key == anyKey) {
				return true
			}
		}
	}
	return false
}

func pkOf(k map[string]types.AttributeValue) string { return str(k, "pk") }

// accessOf is what a DynamoDB call touches.
func accessOf(op string, in any) access {
	var a access
	switch in := in.(type) {
	case *dynamodb.GetItemInput:
		a = a.add(pkOf(in.Key), false)
	case *dynamodb.PutItemInput:
		a = a.add(pkOf(in.Item), true)
	case *dynamodb.UpdateItemInput:
		a = a.add(pkOf(in.Key), true)
	case *dynamodb.DeleteItemInput:
		a = a.add(pkOf(in.Key), true)
	case *dynamodb.QueryInput:
		pk, ok := in.ExpressionAttributeValues[":pk"].(*types.AttributeValueMemberS)
		if in.IndexName != nil || !ok {
			return access{{anyKey, false}}
		}
		a = a.add(pk.Value, false)
	case *dynamodb.BatchGetItemInput:
		for _, ka := range in.RequestItems {
			for _, k := range ka.Keys {
				a = a.add(pkOf(k), false)
			}
		}
	case *dynamodb.BatchWriteItemInput:
		for _, rs := range in.RequestItems {
			for _, r := range rs {
				if r.PutRequest != nil {
					a = a.add(pkOf(r.PutRequest.Item), true)
				}
				if r.DeleteRequest != nil {
					a = a.add(pkOf(r.DeleteRequest.Key), true)
				}
			}
		}
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				a = a.add(pkOf(it.Put.Item), true)
			case it.Update != nil:
				a = a.add(pkOf(it.Update.Key), true)
			case it.Delete != nil:
				a = a.add(pkOf(it.Delete.Key), true)
			case it.ConditionCheck != nil:
				a = a.add(pkOf(it.ConditionCheck.Key), false)
			}
		}
	case *dynamodb.TransactGetItemsInput:
		for _, it := range in.TransactItems {
			if it.Get != nil {
				a = a.add(pkOf(it.Get.Key), false)
			}
		}
	default:
		// Scan, DescribeTable (the item count), table administration.
		return access{{anyKey, strings.HasPrefix(op, "Create") || strings.HasPrefix(op, "Update")}}
	}
	return a
}

// The explorer's state hashes: an item, a call's answer, a table.

var hashSeed = maphash.MakeSeed()

type hasher struct{ h maphash.Hash }

func newHasher() *hasher {
	x := &hasher{}
	x.h.SetSeed(hashSeed)
	return x
}

func (x *hasher) str(s string) {
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(s)))
	x.h.Write(n[:])
	x.h.WriteString(s)
}

func (x *hasher) u64(v uint64) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], v)
	x.h.Write(n[:])
}

func (x *hasher) sum() uint64 { return x.h.Sum64() }

// item writes an item canonically: attributes sorted by name, sets sorted.
func (x *hasher) item(it map[string]types.AttributeValue) {
	if it == nil {
		x.str("\x00nil")
		return
	}
	names := make([]string, 0, len(it))
	for k := range it {
		names = append(names, k)
	}
	sort.Strings(names)
	x.u64(uint64(len(names)))
	for _, k := range names {
		x.str(k)
		x.value(it[k])
	}
}

func (x *hasher) value(v types.AttributeValue) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		x.str("S")
		x.str(v.Value)
	case *types.AttributeValueMemberN:
		x.str("N")
		x.str(v.Value)
	case *types.AttributeValueMemberB:
		x.str("B")
		x.str(string(v.Value))
	case *types.AttributeValueMemberBOOL:
		x.str("BOOL")
		if v.Value {
			x.u64(1)
		} else {
			x.u64(0)
		}
	case *types.AttributeValueMemberNULL:
		x.str("NULL")
	case *types.AttributeValueMemberM:
		x.str("M")
		x.item(v.Value)
	case *types.AttributeValueMemberL:
		x.str("L")
		x.u64(uint64(len(v.Value)))
		for _, e := range v.Value {
			x.value(e)
		}
	case *types.AttributeValueMemberSS:
		x.str("SS")
		x.strs(v.Value)
	case *types.AttributeValueMemberNS:
		x.str("NS")
		x.strs(v.Value)
	case *types.AttributeValueMemberBS:
		x.str("BS")
		var ss []string
		for _, b := range v.Value {
			ss = append(ss, string(b))
		}
		x.strs(ss)
	default:
		x.str("?")
	}
}

func (x *hasher) strs(ss []string) {
	s := append([]string(nil), ss...)
	sort.Strings(s)
	x.u64(uint64(len(s)))
	for _, e := range s {
		x.str(e)
	}
}

func (x *hasher) items(its []map[string]types.AttributeValue) {
	x.u64(uint64(len(its)))
	for _, it := range its {
		x.item(it)
	}
}

// answerDigest is what a process learnt from one call: the items it read
// or got back, and its error.
func answerDigest(op string, out any, err error) uint64 {
	x := newHasher()
	x.str(op)
	if err != nil {
		x.str("err")
		x.str(err.Error())
		return x.sum()
	}
	switch o := out.(type) {
	case *dynamodb.GetItemOutput:
		if o != nil {
			x.item(o.Item)
		}
	case *dynamodb.PutItemOutput:
		if o != nil {
			x.item(o.Attributes)
		}
	case *dynamodb.UpdateItemOutput:
		if o != nil {
			x.item(o.Attributes)
		}
	case *dynamodb.DeleteItemOutput:
		if o != nil {
			x.item(o.Attributes)
		}
	case *dynamodb.QueryOutput:
		if o != nil {
			x.items(o.Items)
			x.item(o.LastEvaluatedKey)
		}
	case *dynamodb.ScanOutput:
		if o != nil {
			x.items(o.Items)
			x.item(o.LastEvaluatedKey)
		}
	case *dynamodb.BatchGetItemOutput:
		if o != nil {
			tables := make([]string, 0, len(o.Responses))
			for t := range o.Responses {
				tables = append(tables, t)
			}
			sort.Strings(tables)
			for _, t := range tables {
				x.str(t)
				// The rows in the order they came: callers may depend on it.
				x.items(o.Responses[t])
			}
			for _, ka := range o.UnprocessedKeys {
				x.items(ka.Keys)
			}
		}
	case *dynamodb.TransactGetItemsOutput:
		if o != nil {
			for _, r := range o.Responses {
				x.item(r.Item)
			}
		}
	case *dynamodb.DescribeTableOutput:
		if o != nil && o.Table != nil {
			x.u64(uint64(aws.ToInt64(o.Table.ItemCount)))
		}
	}
	return x.sum()
}

// keyHash is the part of the table hash one item contributes (0: absent).
func keyHash(key string, img ddblocal.Item) uint64 {
	if img == nil {
		return 0
	}
	x := newHasher()
	x.str(key)
	x.item(img)
	return x.sum()
}

// mix folds v into h (order matters).
func mix(h, v uint64) uint64 {
	h ^= v + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
	return h * 0xbf58476d1ce4e5b9
}

func mixStr(h uint64, s string) uint64 {
	x := newHasher()
	x.str(s)
	return mix(h, x.sum())
}
