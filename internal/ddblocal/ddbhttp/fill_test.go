package ddbhttp_test

import (
	"fmt"
	"reflect"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// richItem holds one attribute of every DynamoDB type, nested, with the
// values most likely to trip a codec: non-ASCII and escaped strings, a
// 38-digit number, bytes that are not UTF-8, empty sets' neighbours.
func richItem() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"s":    &types.AttributeValueMemberS{Value: "héllo \"quoted\" \\ \n\t\u0001 \u2028 😀 <&>"},
		"n":    &types.AttributeValueMemberN{Value: "-12345678901234567890.123456789012345678"},
		"b":    &types.AttributeValueMemberB{Value: []byte{0, 1, 2, 0xfe, 0xff}},
		"bool": &types.AttributeValueMemberBOOL{Value: false},
		"null": &types.AttributeValueMemberNULL{Value: true},
		"ss":   &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns":   &types.AttributeValueMemberNS{Value: []string{"1", "2.5", "-3e10"}},
		"bs":   &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
		"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{
			&types.AttributeValueMemberS{Value: ""},
			&types.AttributeValueMemberL{Value: []types.AttributeValue{}},
			&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}},
		}},
		"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"deep": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
				"x": &types.AttributeValueMemberN{Value: "0"},
			}},
			"bool": &types.AttributeValueMemberBOOL{Value: true},
		}},
	}
}

// filler sets every wire member of an SDK struct to a non-zero value, so
// that a round trip through the wire proves each member's name and type.
type filler struct {
	n int
}

var (
	attributeValueType = reflect.TypeFor[types.AttributeValue]()
	timeType           = reflect.TypeFor[time.Time]()
	metadataType       = reflect.TypeFor[middleware.Metadata]()
)

// fill returns a pointer to a filled new value of the type ptr points to.
func fill[T any]() *T {
	v := new(T)
	(&filler{}).fill(reflect.ValueOf(v).Elem(), 0)
	return v
}

func (f *filler) next() int {
	f.n++
	return f.n
}

func (f *filler) fill(v reflect.Value, depth int) {
	t := v.Type()
	if t == attributeValueType {
		if depth < 6 {
			v.Set(reflect.ValueOf(&types.AttributeValueMemberM{Value: richItem()}))
		} else {
			v.Set(reflect.ValueOf(&types.AttributeValueMemberS{Value: "leaf"}))
		}
		return
	}
	if depth > 12 {
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		f.fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Struct:
		if t == timeType {
			v.Set(reflect.ValueOf(time.UnixMilli(1_700_000_000_123 + int64(f.next())).UTC()))
			return
		}
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() || sf.Type == metadataType || sf.Name == "ErrorCodeOverride" {
				continue
			}
			f.fill(v.Field(i), depth+1)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("%s-%d", t.Name(), f.next()))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(f.next()))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.next()) + 0.5)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte{0xff, 0, byte(f.next())})
			return
		}
		s := reflect.MakeSlice(t, 2, 2)
		for i := range 2 {
			f.fill(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(t)
		for i := range 2 {
			k := reflect.New(t.Key()).Elem()
			k.SetString(fmt.Sprintf("key%d", i))
			el := reflect.New(t.Elem()).Elem()
			f.fill(el, depth+1)
			m.SetMapIndex(k, el)
		}
		v.Set(m)
	}
}
