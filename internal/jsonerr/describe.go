package jsonerr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
)

// Problem is one decoding error in plain English.
type Problem struct {
	// Field is the dotted path of the field at fault ("headers",
	// "sub.a"); empty when the document as a whole is at fault.
	Field string
	// Message says what is wrong without naming the field: "must be a
	// string, not a number", "unknown field", "is not valid JSON: …".
	Message string
}

// Describe explains err, an error of json.Unmarshal or of a json.Decoder
// decoding into target (a pointer to the value decoded, used to tell a
// mistyped field from a mistyped element of an array or object). Errors
// that are not encoding/json's come back with their own text.
func Describe(err error, target any) Problem {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	var pe *time.ParseError
	switch {
	case errors.As(err, &te):
		return describeType(te, target)
	case errors.As(err, &se):
		return Problem{Message: fmt.Sprintf("is not valid JSON (at byte %d): %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))}
	case errors.As(err, &pe):
		return Problem{Message: "holds a time that is not an RFC 3339 time such as 2026-12-01T00:00:00Z"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Problem{Message: "is not valid JSON: it ends too early"}
	case errors.Is(err, io.EOF):
		return Problem{Message: "is empty"}
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return Problem{Field: strings.Trim(name, `"`), Message: "unknown field"}
	}
	return Problem{Message: strings.TrimPrefix(err.Error(), "json: ")}
}

func describeType(te *json.UnmarshalTypeError, target any) Problem {
	got := describeValue(te.Value)
	if te.Field == "" {
		return Problem{Message: fmt.Sprintf("must be %s, not %s", describeGoType(te.Type), got)}
	}
	declared := fieldType(target, te.Field)
	if declared != nil && declared != te.Type {
		switch declared.Kind() {
		case reflect.Map:
			return Problem{Field: te.Field, Message: fmt.Sprintf("every value must be %s, not %s", describeGoType(te.Type), got)}
		case reflect.Slice, reflect.Array:
			return Problem{Field: te.Field, Message: fmt.Sprintf("every element must be %s, not %s", describeGoType(te.Type), got)}
		}
	}
	return Problem{Field: te.Field, Message: fmt.Sprintf("must be %s, not %s", describeGoType(te.Type), got)}
}

// Held spells what the JSON held where a type error occurred: "a number",
// "1.5", "a string", "a boolean", "an array", "an object".
func Held(te *json.UnmarshalTypeError) string { return describeValue(te.Value) }

// describeValue spells what the JSON held: UnmarshalTypeError.Value is
// "number", "number 1.5", "string", "bool", "array" or "object".
func describeValue(v string) string {
	switch {
	case v == "bool":
		return "a boolean"
	case v == "array", v == "object":
		return "an " + v
	case strings.HasPrefix(v, "number "):
		return strings.TrimPrefix(v, "number ")
	case v == "":
		return "this value"
	}
	return "a " + v
}

var (
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	timeType       = reflect.TypeFor[time.Time]()
)

// describeGoType spells a Go type as the JSON it accepts.
func describeGoType(t reflect.Type) string {
	if t == nil {
		return "a different type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == rawMessageType:
		return "JSON"
	case t == timeType:
		return "an RFC 3339 time"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean (true or false)"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem() == rawMessageType || t.Elem().Kind() == reflect.Interface {
			return "an array"
		}
		return "an array of " + plural(t.Elem())
	case reflect.Map:
		if t.Elem() == rawMessageType || t.Elem().Kind() == reflect.Interface {
			return "an object"
		}
		return "an object of " + plural(t.Elem())
	case reflect.Struct:
		return "an object"
	}
	return "a different type"
}

// plural names the elements of an array or object.
func plural(t reflect.Type) string {
	s := describeGoType(t)
	for _, article := range []string{"a ", "an "} {
		if rest, ok := strings.CutPrefix(s, article); ok {
			s = rest
			break
		}
	}
	switch {
	case strings.HasPrefix(s, "boolean"):
		return "booleans"
	case strings.HasPrefix(s, "array of "), strings.HasPrefix(s, "object of "):
		head, tail, _ := strings.Cut(s, " of ")
		return head + "s of " + tail
	case s == "JSON":
		return "JSON values"
	}
	return s + "s"
}

// fieldType finds the declared type of the field at a dotted path in
// target's type, following struct fields by their JSON names (as
// encoding/json matches them: exactly, else case-insensitively). It
// returns nil when the path cannot be followed.
func fieldType(target any, path string) reflect.Type {
	if target == nil {
		return nil
	}
	t := reflect.TypeOf(target)
	for _, name := range strings.Split(path, ".") {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			f, ok := structField(t, name)
			if !ok {
				return nil
			}
			t = f
		case reflect.Map, reflect.Slice, reflect.Array:
			t = t.Elem()
		default:
			return nil
		}
	}
	return t
}

func structField(t reflect.Type, name string) (reflect.Type, bool) {
	var fold reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == name {
			return f.Type, true
		}
		if fold == nil && strings.EqualFold(tag, name) {
			fold = f.Type
		}
	}
	return fold, fold != nil
}
