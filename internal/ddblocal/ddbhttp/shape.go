package ddbhttp

import (
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/schemas"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	smithy "github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
)

// The codec walks the SDK's own structs by reflection. A Go field's name is
// its wire name in every DynamoDB shape except a few members the model spells
// in lower case (errors' "message", ThrottlingReason's "reason"); for the
// shapes that have those, the SDK's schema is the authority on the spelling.

// field is one member of a struct shape as it appears on the wire.
type field struct {
	index int
	wire  string
}

// structShape lists the wire members of a Go struct type.
type structShape struct {
	fields []field
	byWire map[string]int // wire name -> position in fields
}

var (
	attributeValueType = reflect.TypeFor[types.AttributeValue]()
	timeType           = reflect.TypeFor[time.Time]()
	metadataType       = reflect.TypeFor[middleware.Metadata]()
	bytesType          = reflect.TypeFor[[]byte]()
)

var (
	shapeCache sync.Map // reflect.Type -> *structShape

	schemaByTypeOnce sync.Once
	schemaByType     map[reflect.Type]*smithy.Schema
)

// modeledSchemas maps the struct types whose wire names differ from their Go
// field names to their schemas: every modeled error (from the SDK's type
// registry) and ThrottlingReason.
func modeledSchemas() map[reflect.Type]*smithy.Schema {
	schemaByTypeOnce.Do(func() {
		m := map[reflect.Type]*smithy.Schema{
			reflect.TypeFor[types.ThrottlingReason](): schemas.ThrottlingReason,
		}
		for _, e := range dynamodb.TypeRegistry.Entries {
			if e == nil || e.New == nil || e.Schema == nil {
				continue
			}
			t := reflect.TypeOf(e.New())
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			m[t] = e.Schema
		}
		streamsSchemas(m)
		schemaByType = m
	})
	return schemaByType
}

// shapeOf returns the wire members of struct type t.
func shapeOf(t reflect.Type) *structShape {
	if s, ok := shapeCache.Load(t); ok {
		return s.(*structShape)
	}
	schema := modeledSchemas()[t]
	s := &structShape{byWire: make(map[string]int)}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Type == metadataType {
			continue
		}
		wire := f.Name
		if schema != nil {
			// Fields the model does not know (ErrorCodeOverride) are Go-only.
			wire = ""
			for name := range schema.Members() {
				if strings.EqualFold(name, f.Name) {
					wire = name
					break
				}
			}
			if wire == "" {
				continue
			}
		}
		s.byWire[wire] = len(s.fields)
		s.fields = append(s.fields, field{index: i, wire: wire})
	}
	actual, _ := shapeCache.LoadOrStore(t, s)
	return actual.(*structShape)
}
