package ddbhttp

import (
	"encoding/base64"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// encoder writes SDK structs as DynamoDB's JSON. It never fails: every value
// an SDK struct can hold has a wire form.
type encoder struct {
	buf []byte
}

// encodeShape returns the wire JSON of v, an SDK output struct (or pointer
// to one). A nil pointer encodes as {}.
func encodeShape(v any) []byte {
	e := &encoder{buf: make([]byte, 0, 256)}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return []byte("{}")
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return []byte("{}")
	}
	e.structBody(rv, "")
	return e.buf
}

// structBody writes the members of struct v as an object; a non-empty
// typeName is written first as "__type" (error bodies).
func (e *encoder) structBody(v reflect.Value, typeName string) {
	e.buf = append(e.buf, '{')
	first := true
	if typeName != "" {
		e.buf = append(e.buf, `"__type":`...)
		e.str(typeName)
		first = false
	}
	for _, f := range shapeOf(v.Type()).fields {
		fv := v.Field(f.index)
		if omitted(fv) {
			continue
		}
		if !first {
			e.buf = append(e.buf, ',')
		}
		first = false
		e.str(f.wire)
		e.buf = append(e.buf, ':')
		e.value(fv)
	}
	e.buf = append(e.buf, '}')
}

// omitted reports whether a struct member is absent on the wire. Optional
// members are pointers, slices, maps or interfaces (absent when nil) and
// enums (absent when empty); plain numbers and booleans are always sent,
// as DynamoDB always sends Count and ScannedCount.
func omitted(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return v.IsNil()
	case reflect.String:
		return v.Len() == 0
	}
	return false
}

func (e *encoder) value(v reflect.Value) {
	switch v.Type() {
	case attributeValueType:
		e.attributeValue(v)
		return
	case streamsAttributeValueType:
		e.streamsAttributeValue(v)
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			e.buf = append(e.buf, "null"...)
			return
		}
		e.value(v.Elem())
	case reflect.Struct:
		if v.Type() == timeType {
			e.float(epochSeconds(v.Interface().(time.Time)))
			return
		}
		e.structBody(v, "")
	case reflect.String:
		e.str(v.String())
	case reflect.Bool:
		e.buf = strconv.AppendBool(e.buf, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.buf = strconv.AppendInt(e.buf, v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		e.buf = strconv.AppendUint(e.buf, v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		e.float(v.Float())
	case reflect.Slice:
		if v.Type() == bytesType {
			e.blob(v.Bytes())
			return
		}
		e.buf = append(e.buf, '[')
		for i := range v.Len() {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.value(v.Index(i))
		}
		e.buf = append(e.buf, ']')
	case reflect.Map:
		// Sorted keys make a response's bytes, and so its CRC32, a function of
		// its content.
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int {
			switch {
			case a.String() < b.String():
				return -1
			case a.String() > b.String():
				return 1
			}
			return 0
		})
		e.buf = append(e.buf, '{')
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.str(k.String())
			e.buf = append(e.buf, ':')
			e.value(v.MapIndex(k))
		}
		e.buf = append(e.buf, '}')
	default:
		// Channels, funcs and the like are not in any SDK shape.
		e.buf = append(e.buf, "null"...)
	}
}

// attributeValue writes the AttributeValue union as a one-member object.
func (e *encoder) attributeValue(v reflect.Value) {
	if v.IsNil() {
		e.buf = append(e.buf, "null"...)
		return
	}
	switch av := v.Interface().(type) {
	case *types.AttributeValueMemberS:
		e.buf = append(e.buf, `{"S":`...)
		e.str(av.Value)
	case *types.AttributeValueMemberN:
		e.buf = append(e.buf, `{"N":`...)
		e.str(av.Value)
	case *types.AttributeValueMemberB:
		e.buf = append(e.buf, `{"B":`...)
		e.blob(av.Value)
	case *types.AttributeValueMemberBOOL:
		e.buf = append(e.buf, `{"BOOL":`...)
		e.buf = strconv.AppendBool(e.buf, av.Value)
	case *types.AttributeValueMemberNULL:
		e.buf = append(e.buf, `{"NULL":`...)
		e.buf = strconv.AppendBool(e.buf, av.Value)
	case *types.AttributeValueMemberM:
		e.buf = append(e.buf, `{"M":`...)
		e.value(reflect.ValueOf(av.Value))
	case *types.AttributeValueMemberL:
		e.buf = append(e.buf, `{"L":`...)
		e.value(reflect.ValueOf(av.Value))
	case *types.AttributeValueMemberSS:
		e.buf = append(e.buf, `{"SS":`...)
		e.value(reflect.ValueOf(av.Value))
	case *types.AttributeValueMemberNS:
		e.buf = append(e.buf, `{"NS":`...)
		e.value(reflect.ValueOf(av.Value))
	case *types.AttributeValueMemberBS:
		e.buf = append(e.buf, `{"BS":`...)
		e.value(reflect.ValueOf(av.Value))
	default:
		// An unknown member (or a nil member pointer) has no wire form.
		e.buf = append(e.buf, "{}"...)
		return
	}
	e.buf = append(e.buf, '}')
}

// blob writes b as standard base64, DynamoDB's form for B, BS and every
// other blob member.
func (e *encoder) blob(b []byte) {
	e.buf = append(e.buf, '"')
	e.buf = base64.StdEncoding.AppendEncode(e.buf, b)
	e.buf = append(e.buf, '"')
}

func (e *encoder) float(f float64) {
	switch {
	case math.IsNaN(f):
		e.buf = append(e.buf, `"NaN"`...)
	case math.IsInf(f, 1):
		e.buf = append(e.buf, `"Infinity"`...)
	case math.IsInf(f, -1):
		e.buf = append(e.buf, `"-Infinity"`...)
	case f == 0 || (math.Abs(f) >= 1e-6 && math.Abs(f) < 1e21):
		e.buf = strconv.AppendFloat(e.buf, f, 'f', -1, 64)
	default:
		e.buf = strconv.AppendFloat(e.buf, f, 'g', -1, 64)
	}
}

// epochSeconds is the wire form of a timestamp: seconds since the epoch with
// millisecond precision, as the SDK parses it.
func epochSeconds(t time.Time) float64 {
	return float64(t.UnixMilli()) / 1e3
}

const hexDigits = "0123456789abcdef"

// str writes s as a JSON string. Invalid UTF-8 becomes U+FFFD, as the
// standard library's encoder does, so the output is always valid JSON.
func (e *encoder) str(s string) {
	e.buf = append(e.buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			e.buf = append(e.buf, s[start:i]...)
			switch c {
			case '"', '\\':
				e.buf = append(e.buf, '\\', c)
			case '\n':
				e.buf = append(e.buf, `\n`...)
			case '\r':
				e.buf = append(e.buf, `\r`...)
			case '\t':
				e.buf = append(e.buf, `\t`...)
			default:
				e.buf = append(e.buf, `\u00`...)
				e.buf = append(e.buf, hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			e.buf = append(e.buf, s[start:i]...)
			e.buf = append(e.buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	e.buf = append(e.buf, s[start:]...)
	e.buf = append(e.buf, '"')
}
