package ddblocal

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Item codec. Items are stored as compact bytes rather than as
// map[string]types.AttributeValue: a Go map of interface values costs several
// times the item's raw size, and decoding on every read also means no caller
// ever holds a reference into the store.
//
// item  := uvarint(count) { uvarint(len) name value }   (names sorted)
// value := tag payload

const (
	tagS byte = iota + 1
	tagN
	tagB
	tagTrue
	tagFalse
	tagNull
	tagM
	tagL
	tagSS
	tagNS
	tagBS
)

// Item is one DynamoDB item.
type Item = map[string]types.AttributeValue

func encodeItem(dst []byte, item Item) []byte {
	names := make([]string, 0, len(item))
	for k := range item {
		names = append(names, k)
	}
	sort.Strings(names)
	dst = binary.AppendUvarint(dst, uint64(len(names)))
	for _, n := range names {
		dst = appendString(dst, n)
		dst = encodeValue(dst, item[n])
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendBytes(dst []byte, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func encodeValue(dst []byte, v types.AttributeValue) []byte {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return appendString(append(dst, tagS), v.Value)
	case *types.AttributeValueMemberN:
		return appendString(append(dst, tagN), canonicalNumber(v.Value))
	case *types.AttributeValueMemberB:
		return appendBytes(append(dst, tagB), v.Value)
	case *types.AttributeValueMemberBOOL:
		if v.Value {
			return append(dst, tagTrue)
		}
		return append(dst, tagFalse)
	case *types.AttributeValueMemberNULL:
		return append(dst, tagNull)
	case *types.AttributeValueMemberM:
		return encodeItem(append(dst, tagM), v.Value)
	case *types.AttributeValueMemberL:
		dst = binary.AppendUvarint(append(dst, tagL), uint64(len(v.Value)))
		for _, e := range v.Value {
			dst = encodeValue(dst, e)
		}
		return dst
	case *types.AttributeValueMemberSS:
		dst = binary.AppendUvarint(append(dst, tagSS), uint64(len(v.Value)))
		for _, e := range v.Value {
			dst = appendString(dst, e)
		}
		return dst
	case *types.AttributeValueMemberNS:
		dst = binary.AppendUvarint(append(dst, tagNS), uint64(len(v.Value)))
		for _, e := range v.Value {
			dst = appendString(dst, canonicalNumber(e))
		}
		return dst
	case *types.AttributeValueMemberBS:
		dst = binary.AppendUvarint(append(dst, tagBS), uint64(len(v.Value)))
		for _, e := range v.Value {
			dst = appendBytes(dst, e)
		}
		return dst
	default:
		// Validation refuses unknown members before anything is stored.
		panic(fmt.Sprintf("ddblocal: cannot encode attribute value %T", v))
	}
}

// decoder reads an encoded item. The store only decodes what it encoded, so
// a malformed buffer is a bug and panics.
type decoder struct {
	buf []byte
	pos int
}

func decodeItem(buf []byte) Item {
	d := decoder{buf: buf}
	return d.item()
}

func (d *decoder) uvarint() int {
	v, n := binary.Uvarint(d.buf[d.pos:])
	if n <= 0 {
		panic("ddblocal: corrupt item encoding")
	}
	d.pos += n
	return int(v)
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	b := d.buf[d.pos : d.pos+n]
	d.pos += n
	return b
}

func (d *decoder) str() string { return string(d.bytes()) }

func (d *decoder) item() Item {
	n := d.uvarint()
	item := make(Item, n)
	for i := 0; i < n; i++ {
		name := d.str()
		item[name] = d.value()
	}
	return item
}

func (d *decoder) value() types.AttributeValue {
	tag := d.buf[d.pos]
	d.pos++
	switch tag {
	case tagS:
		return &types.AttributeValueMemberS{Value: d.str()}
	case tagN:
		return &types.AttributeValueMemberN{Value: d.str()}
	case tagB:
		return &types.AttributeValueMemberB{Value: append([]byte(nil), d.bytes()...)}
	case tagTrue:
		return &types.AttributeValueMemberBOOL{Value: true}
	case tagFalse:
		return &types.AttributeValueMemberBOOL{Value: false}
	case tagNull:
		return &types.AttributeValueMemberNULL{Value: true}
	case tagM:
		return &types.AttributeValueMemberM{Value: d.item()}
	case tagL:
		n := d.uvarint()
		l := make([]types.AttributeValue, n)
		for i := range l {
			l[i] = d.value()
		}
		return &types.AttributeValueMemberL{Value: l}
	case tagSS, tagNS:
		n := d.uvarint()
		l := make([]string, n)
		for i := range l {
			l[i] = d.str()
		}
		if tag == tagSS {
			return &types.AttributeValueMemberSS{Value: l}
		}
		return &types.AttributeValueMemberNS{Value: l}
	case tagBS:
		n := d.uvarint()
		l := make([][]byte, n)
		for i := range l {
			l[i] = append([]byte(nil), d.bytes()...)
		}
		return &types.AttributeValueMemberBS{Value: l}
	default:
		panic(fmt.Sprintf("ddblocal: corrupt item encoding (tag %d)", tag))
	}
}

// copyItem returns a deep copy of item, so values handed in by a caller are
// never shared with values handed out.
func copyItem(item Item) Item {
	if item == nil {
		return nil
	}
	return decodeItem(encodeItem(nil, item))
}

// canonicalNumber stores numbers as DynamoDB returns them ("1.50" -> "1.5").
// Values were validated before; an unparsable one is kept as given.
func canonicalNumber(s string) string {
	d, err := parseDecimal(s)
	if err != nil {
		return s
	}
	return d.canonical()
}
