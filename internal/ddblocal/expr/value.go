package expr

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Type codes as DynamoDB spells them in AttributeValue JSON and in
// attribute_type.
const (
	typeS    = "S"
	typeN    = "N"
	typeB    = "B"
	typeBOOL = "BOOL"
	typeNULL = "NULL"
	typeM    = "M"
	typeL    = "L"
	typeSS   = "SS"
	typeNS   = "NS"
	typeBS   = "BS"
)

// TypeCode returns the DynamoDB type code of v ("S", "N", "B", "BOOL",
// "NULL", "M", "L", "SS", "NS", "BS"), or "" for nil or an unknown member.
func TypeCode(v types.AttributeValue) string {
	switch v.(type) {
	case *types.AttributeValueMemberS:
		return typeS
	case *types.AttributeValueMemberN:
		return typeN
	case *types.AttributeValueMemberB:
		return typeB
	case *types.AttributeValueMemberBOOL:
		return typeBOOL
	case *types.AttributeValueMemberNULL:
		return typeNULL
	case *types.AttributeValueMemberM:
		return typeM
	case *types.AttributeValueMemberL:
		return typeL
	case *types.AttributeValueMemberSS:
		return typeSS
	case *types.AttributeValueMemberNS:
		return typeNS
	case *types.AttributeValueMemberBS:
		return typeBS
	}
	return ""
}

// Compare orders two scalar values of the same type the way DynamoDB sorts
// keys and evaluates < <= > >= BETWEEN: S by UTF-8 bytes, N numerically, B by
// unsigned bytes. ok is false when the values are not the same scalar type.
func Compare(a, b types.AttributeValue) (int, bool) {
	switch x := a.(type) {
	case *types.AttributeValueMemberS:
		if y, ok := b.(*types.AttributeValueMemberS); ok {
			return strings.Compare(x.Value, y.Value), true
		}
	case *types.AttributeValueMemberN:
		if y, ok := b.(*types.AttributeValueMemberN); ok {
			return compareNumbers(x.Value, y.Value)
		}
	case *types.AttributeValueMemberB:
		if y, ok := b.(*types.AttributeValueMemberB); ok {
			return bytes.Compare(x.Value, y.Value), true
		}
	}
	return 0, false
}

// Equal reports deep equality with DynamoDB semantics: same type, numbers
// compared numerically ("1.0" equals "1"), sets order-insensitive, lists in
// order, maps by key.
func Equal(a, b types.AttributeValue) bool {
	switch x := a.(type) {
	case *types.AttributeValueMemberS:
		y, ok := b.(*types.AttributeValueMemberS)
		return ok && x.Value == y.Value
	case *types.AttributeValueMemberN:
		y, ok := b.(*types.AttributeValueMemberN)
		if !ok {
			return false
		}
		c, ok := compareNumbers(x.Value, y.Value)
		return ok && c == 0
	case *types.AttributeValueMemberB:
		y, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(x.Value, y.Value)
	case *types.AttributeValueMemberBOOL:
		y, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && x.Value == y.Value
	case *types.AttributeValueMemberNULL:
		_, ok := b.(*types.AttributeValueMemberNULL)
		return ok
	case *types.AttributeValueMemberM:
		y, ok := b.(*types.AttributeValueMemberM)
		if !ok || len(x.Value) != len(y.Value) {
			return false
		}
		for k, xv := range x.Value {
			yv, ok := y.Value[k]
			if !ok || !Equal(xv, yv) {
				return false
			}
		}
		return true
	case *types.AttributeValueMemberL:
		y, ok := b.(*types.AttributeValueMemberL)
		if !ok || len(x.Value) != len(y.Value) {
			return false
		}
		for i := range x.Value {
			if !Equal(x.Value[i], y.Value[i]) {
				return false
			}
		}
		return true
	case *types.AttributeValueMemberSS:
		y, ok := b.(*types.AttributeValueMemberSS)
		return ok && sameSet(x.Value, y.Value, func(p, q string) bool { return p == q })
	case *types.AttributeValueMemberNS:
		y, ok := b.(*types.AttributeValueMemberNS)
		return ok && sameSet(x.Value, y.Value, numbersEqual)
	case *types.AttributeValueMemberBS:
		y, ok := b.(*types.AttributeValueMemberBS)
		return ok && sameSet(x.Value, y.Value, func(p, q []byte) bool { return bytes.Equal(p, q) })
	}
	return false
}

func numbersEqual(a, b string) bool {
	c, ok := compareNumbers(a, b)
	return ok && c == 0
}

// sameSet compares two sets without regard to order. Sets hold no
// duplicates, so equal lengths plus inclusion one way is equality.
func sameSet[T any](a, b []T, eq func(T, T) bool) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !setContains(b, x, eq) {
			return false
		}
	}
	return true
}

func setContains[T any](set []T, x T, eq func(T, T) bool) bool {
	for _, y := range set {
		if eq(x, y) {
			return true
		}
	}
	return false
}

// ValidateValue refuses a value DynamoDB would refuse in an item or in
// ExpressionAttributeValues: invalid or out-of-range numbers, empty or
// duplicated sets, invalid UTF-8, a NULL member that is not true, and
// nested values with the same faults.
func ValidateValue(v types.AttributeValue) error {
	return validateValue(v, 0)
}

// maxNestingDepth is DynamoDB's limit on nested lists and maps (Developer
// Guide, "Supported data types and naming rules": up to 32 levels deep).
const maxNestingDepth = 32

func validateValue(v types.AttributeValue, depth int) error {
	switch x := v.(type) {
	case nil:
		return errorf("Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
	case *types.AttributeValueMemberS:
		if !utf8.ValidString(x.Value) {
			return errorf("One or more parameter values were invalid: A value provided cannot be converted into a string")
		}
	case *types.AttributeValueMemberN:
		if _, err := parseNumber(x.Value); err != nil {
			return err
		}
	case *types.AttributeValueMemberB, *types.AttributeValueMemberBOOL:
	case *types.AttributeValueMemberNULL:
		if !x.Value {
			return errorf("One or more parameter values were invalid: Null attribute value types must have the value of true")
		}
	case *types.AttributeValueMemberSS:
		if len(x.Value) == 0 {
			return errorf("One or more parameter values were invalid: An string set  may not be empty")
		}
		seen := make(map[string]bool, len(x.Value))
		for _, s := range x.Value {
			if !utf8.ValidString(s) {
				return errorf("One or more parameter values were invalid: A value provided cannot be converted into a string")
			}
			if seen[s] {
				return errorf("One or more parameter values were invalid: Input collection %s contains duplicates.", formatStrings(x.Value))
			}
			seen[s] = true
		}
	case *types.AttributeValueMemberNS:
		if len(x.Value) == 0 {
			return errorf("One or more parameter values were invalid: An number set  may not be empty")
		}
		seen := make(map[string]bool, len(x.Value))
		for _, s := range x.Value {
			c, err := CanonicalNumber(s)
			if err != nil {
				return err
			}
			if seen[c] {
				return errorf("One or more parameter values were invalid: Input collection %s contains duplicates.", formatStrings(x.Value))
			}
			seen[c] = true
		}
	case *types.AttributeValueMemberBS:
		if len(x.Value) == 0 {
			return errorf("One or more parameter values were invalid: Binary sets may not be empty")
		}
		seen := make(map[string]bool, len(x.Value))
		for _, b := range x.Value {
			if seen[string(b)] {
				return errorf("One or more parameter values were invalid: Input collection contains duplicates.")
			}
			seen[string(b)] = true
		}
	case *types.AttributeValueMemberM:
		if depth >= maxNestingDepth {
			return errorf("Nesting Levels have exceeded supported limits")
		}
		for _, e := range x.Value {
			if err := validateValue(e, depth+1); err != nil {
				return err
			}
		}
	case *types.AttributeValueMemberL:
		if depth >= maxNestingDepth {
			return errorf("Nesting Levels have exceeded supported limits")
		}
		for _, e := range x.Value {
			if err := validateValue(e, depth+1); err != nil {
				return err
			}
		}
	default:
		return errorf("Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
	}
	return nil
}

func formatStrings(ss []string) string {
	return "[" + strings.Join(ss, ", ") + "]"
}

// CopyValue returns a deep copy of v, so updates never alias the caller's
// item.
func CopyValue(v types.AttributeValue) types.AttributeValue {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return &types.AttributeValueMemberS{Value: x.Value}
	case *types.AttributeValueMemberN:
		return &types.AttributeValueMemberN{Value: x.Value}
	case *types.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: bytes.Clone(x.Value)}
	case *types.AttributeValueMemberBOOL:
		return &types.AttributeValueMemberBOOL{Value: x.Value}
	case *types.AttributeValueMemberNULL:
		return &types.AttributeValueMemberNULL{Value: x.Value}
	case *types.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: CopyItem(x.Value)}
	case *types.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(x.Value))
		for i, e := range x.Value {
			l[i] = CopyValue(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: append([]string(nil), x.Value...)}
	case *types.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: append([]string(nil), x.Value...)}
	case *types.AttributeValueMemberBS:
		bs := make([][]byte, len(x.Value))
		for i, b := range x.Value {
			bs[i] = bytes.Clone(b)
		}
		return &types.AttributeValueMemberBS{Value: bs}
	}
	return v
}

// CopyItem returns a deep copy of item (nil stays nil).
func CopyItem(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	if item == nil {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(item))
	for k, v := range item {
		out[k] = CopyValue(v)
	}
	return out
}

// describeValue renders a value for error messages, close to DynamoDB's
// "AttributeValue: {N:5}".
func describeValue(v types.AttributeValue) string {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return fmt.Sprintf("{S:%s}", x.Value)
	case *types.AttributeValueMemberN:
		return fmt.Sprintf("{N:%s}", x.Value)
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("{B:%x}", x.Value)
	}
	return "{" + TypeCode(v) + "}"
}

// CanonicalValue returns v with every number, including those in number
// sets, lists and maps, rewritten to DynamoDB's normalised text
// (CanonicalNumber), so stored items read back the way DynamoDB returns
// them. v must already be valid (ValidateValue); an invalid number is an
// *Error.
func CanonicalValue(v types.AttributeValue) (types.AttributeValue, error) {
	switch x := v.(type) {
	case *types.AttributeValueMemberN:
		c, err := CanonicalNumber(x.Value)
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberN{Value: c}, nil
	case *types.AttributeValueMemberNS:
		out := make([]string, len(x.Value))
		for i, s := range x.Value {
			c, err := CanonicalNumber(s)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return &types.AttributeValueMemberNS{Value: out}, nil
	case *types.AttributeValueMemberL:
		out := make([]types.AttributeValue, len(x.Value))
		for i, e := range x.Value {
			c, err := CanonicalValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return &types.AttributeValueMemberL{Value: out}, nil
	case *types.AttributeValueMemberM:
		out := make(map[string]types.AttributeValue, len(x.Value))
		for k, e := range x.Value {
			c, err := CanonicalValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return &types.AttributeValueMemberM{Value: out}, nil
	}
	return CopyValue(v), nil
}
