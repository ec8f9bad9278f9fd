package ddbhttp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// requestError is a request DynamoDB refuses before any operation runs: a
// body that does not deserialize into the operation's input
// (SerializationException) or an AttributeValue that names no type or
// several (ValidationException).
type requestError struct {
	code    string
	message string
}

func (e *requestError) Error() string { return e.code + ": " + e.message }

func serializationError(format string, args ...any) *requestError {
	return &requestError{code: codeSerialization, message: fmt.Sprintf(format, args...)}
}

func validationError(message string) *requestError {
	return &requestError{code: codeValidation, message: message}
}

// Messages DynamoDB answers for an AttributeValue with no type, or several.
const (
	msgEmptyAttributeValue    = "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes"
	msgMultipleAttributeTypes = "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes"
)

// decodeRequest decodes a JSON request body into in, a pointer to an SDK
// input struct. Unknown members are ignored, as DynamoDB ignores them, so a
// newer SDK's extra fields do not break older servers; null means absent. An
// empty body is an empty input. Errors are *requestError.
func decodeRequest(body []byte, in any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return serializationError("malformed JSON request body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return serializationError("malformed JSON request body: data after the top-level object")
	}
	if _, ok := raw.(map[string]any); !ok {
		return serializationError("the request body must be a JSON object, found %s", jsonKind(raw))
	}
	d := &decoder{}
	if err := d.assign(reflect.ValueOf(in).Elem(), raw, ""); err != nil {
		return err
	}
	// DynamoDB deserializes the whole body before it validates anything, so a
	// type error anywhere wins over an empty AttributeValue.
	if d.invalid != nil {
		return d.invalid
	}
	return nil
}

// decoder assigns a generic JSON value (from encoding/json with UseNumber) to
// an SDK struct by reflection.
type decoder struct {
	invalid *requestError // first validation error seen
}

func (d *decoder) assign(v reflect.Value, raw any, path string) error {
	if raw == nil {
		return nil
	}
	t := v.Type()
	if t == attributeValueType {
		av, err := d.attributeValue(raw, path)
		if err != nil {
			return err
		}
		if av != nil {
			v.Set(reflect.ValueOf(av))
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		if err := d.assign(p.Elem(), raw, path); err != nil {
			return err
		}
		v.Set(p)
	case reflect.Struct:
		if t == timeType {
			n, err := number(raw, path, "a timestamp")
			if err != nil {
				return err
			}
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil || math.IsInf(f, 0) || math.Abs(f) > 1e15 {
				return serializationError("%s: %s is not a timestamp in epoch seconds", pathName(path), n)
			}
			v.Set(reflect.ValueOf(time.UnixMilli(int64(math.Round(f * 1e3))).UTC()))
			return nil
		}
		obj, ok := raw.(map[string]any)
		if !ok {
			return typeMismatch(path, "an object", raw)
		}
		shape := shapeOf(t)
		for _, k := range sortedKeys(obj) {
			i, known := shape.byWire[k]
			if !known {
				continue
			}
			f := shape.fields[i]
			if err := d.assign(v.Field(f.index), obj[k], join(path, f.wire)); err != nil {
				return err
			}
		}
	case reflect.String:
		s, ok := raw.(string)
		if !ok {
			return typeMismatch(path, "a string", raw)
		}
		v.SetString(s)
	case reflect.Bool:
		b, ok := raw.(bool)
		if !ok {
			return typeMismatch(path, "a boolean", raw)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := number(raw, path, "an integer")
		if err != nil {
			return err
		}
		i, err := strconv.ParseInt(string(n), 10, t.Bits())
		if err != nil {
			return serializationError("%s: %s is not an integer of %d bits", pathName(path), n, t.Bits())
		}
		v.SetInt(i)
	case reflect.Float32, reflect.Float64:
		n, err := number(raw, path, "a number")
		if err != nil {
			return err
		}
		f, err := strconv.ParseFloat(string(n), t.Bits())
		if err != nil {
			return serializationError("%s: %s is out of range", pathName(path), n)
		}
		v.SetFloat(f)
	case reflect.Slice:
		if t == bytesType {
			b, err := blob(raw, path)
			if err != nil {
				return err
			}
			v.SetBytes(b)
			return nil
		}
		arr, ok := raw.([]any)
		if !ok {
			return typeMismatch(path, "a list", raw)
		}
		out := reflect.MakeSlice(t, len(arr), len(arr))
		for i, el := range arr {
			p := fmt.Sprintf("%s[%d]", path, i)
			if el == nil {
				return serializationError("%s: null is not allowed in a list", pathName(p))
			}
			if err := d.assign(out.Index(i), el, p); err != nil {
				return err
			}
		}
		v.Set(out)
	case reflect.Map:
		obj, ok := raw.(map[string]any)
		if !ok {
			return typeMismatch(path, "an object", raw)
		}
		out := reflect.MakeMapWithSize(t, len(obj))
		for _, k := range sortedKeys(obj) {
			el := reflect.New(t.Elem()).Elem()
			p := join(path, k)
			if obj[k] == nil && t.Elem() == attributeValueType {
				d.invalidate(validationError(msgEmptyAttributeValue))
			}
			if err := d.assign(el, obj[k], p); err != nil {
				return err
			}
			out.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), el)
		}
		v.Set(out)
	default:
		return serializationError("%s: unsupported member type %s", pathName(path), t)
	}
	return nil
}

func (d *decoder) invalidate(err *requestError) {
	if d.invalid == nil {
		d.invalid = err
	}
}

// attributeValue decodes DynamoDB's AttributeValue union. It returns nil (and
// records a validation error) when the object names no type or several.
func (d *decoder) attributeValue(raw any, path string) (types.AttributeValue, error) {
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, typeMismatch(path, "an AttributeValue object", raw)
	}
	// Every member is decoded, even when there are several, so that a type
	// error is reported whatever else is wrong.
	var (
		av types.AttributeValue
		n  int
	)
	for _, k := range sortedKeys(obj) {
		if obj[k] == nil || !isAttributeTag(k) {
			continue
		}
		got, err := d.attributeMember(k, obj[k], join(path, k))
		if err != nil {
			return nil, err
		}
		av = got
		n++
	}
	switch {
	case n == 0:
		d.invalidate(validationError(msgEmptyAttributeValue))
		return nil, nil
	case n > 1:
		d.invalidate(validationError(msgMultipleAttributeTypes))
		return nil, nil
	}
	return av, nil
}

func isAttributeTag(k string) bool {
	switch k {
	case "S", "N", "B", "BOOL", "NULL", "M", "L", "SS", "NS", "BS":
		return true
	}
	return false
}

func (d *decoder) attributeMember(tag string, raw any, path string) (types.AttributeValue, error) {
	switch tag {
	case "S", "N":
		s, ok := raw.(string)
		if !ok {
			return nil, typeMismatch(path, "a string", raw)
		}
		if tag == "S" {
			return &types.AttributeValueMemberS{Value: s}, nil
		}
		return &types.AttributeValueMemberN{Value: s}, nil
	case "B":
		b, err := blob(raw, path)
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberB{Value: b}, nil
	case "BOOL", "NULL":
		b, ok := raw.(bool)
		if !ok {
			return nil, typeMismatch(path, "a boolean", raw)
		}
		if tag == "BOOL" {
			return &types.AttributeValueMemberBOOL{Value: b}, nil
		}
		return &types.AttributeValueMemberNULL{Value: b}, nil
	case "M":
		m := map[string]types.AttributeValue{}
		if err := d.assign(reflect.ValueOf(&m).Elem(), raw, path); err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	case "L":
		l := []types.AttributeValue{}
		if err := d.assign(reflect.ValueOf(&l).Elem(), raw, path); err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	case "SS", "NS":
		ss := []string{}
		if err := d.assign(reflect.ValueOf(&ss).Elem(), raw, path); err != nil {
			return nil, err
		}
		if tag == "SS" {
			return &types.AttributeValueMemberSS{Value: ss}, nil
		}
		return &types.AttributeValueMemberNS{Value: ss}, nil
	default: // "BS"
		bs := [][]byte{}
		if err := d.assign(reflect.ValueOf(&bs).Elem(), raw, path); err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberBS{Value: bs}, nil
	}
}

func number(raw any, path, want string) (json.Number, error) {
	n, ok := raw.(json.Number)
	if !ok {
		return "", typeMismatch(path, want, raw)
	}
	return n, nil
}

func blob(raw any, path string) ([]byte, error) {
	s, ok := raw.(string)
	if !ok {
		return nil, typeMismatch(path, "a base64 string", raw)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, serializationError("%s: invalid base64: %v", pathName(path), err)
	}
	return b, nil
}

func typeMismatch(path, want string, raw any) *requestError {
	return serializationError("%s: expected %s, found %s", pathName(path), want, jsonKind(raw))
}

func jsonKind(raw any) string {
	switch raw.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", raw)
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func pathName(path string) string {
	if path == "" {
		return "request body"
	}
	return path
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
