package expr

import (
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Usage records which ExpressionAttributeNames and ExpressionAttributeValues
// the expressions of one request used, so the caller can refuse unused ones
// the way DynamoDB does. One Usage is shared by every expression of a request
// (e.g. the UpdateExpression and the ConditionExpression of one UpdateItem).
type Usage struct {
	names      map[string]string
	values     map[string]types.AttributeValue
	usedNames  map[string]bool
	usedValues map[string]bool
}

// NewUsage returns a Usage over the request's ExpressionAttributeNames and
// ExpressionAttributeValues; either may be nil.
func NewUsage(names map[string]string, values map[string]types.AttributeValue) *Usage {
	return &Usage{
		names:      names,
		values:     values,
		usedNames:  map[string]bool{},
		usedValues: map[string]bool{},
	}
}

// name resolves an expression attribute name such as "#n" and records its use.
func (u *Usage) name(key string) (string, bool) {
	if u == nil {
		return "", false
	}
	n, ok := u.names[key]
	if ok {
		u.usedNames[key] = true
	}
	return n, ok
}

// value resolves an expression attribute value such as ":v" and records its use.
func (u *Usage) value(key string) (types.AttributeValue, bool) {
	if u == nil {
		return nil, false
	}
	v, ok := u.values[key]
	if ok && v != nil {
		u.usedValues[key] = true
		return v, true
	}
	return nil, false
}

// Validate refuses malformed ExpressionAttributeNames and
// ExpressionAttributeValues the way DynamoDB does before it reads any
// expression: present but empty maps, keys without their # or : sign or with
// other characters, empty names, and invalid values (ValidateValue).
func (u *Usage) Validate() error {
	if u == nil {
		return nil
	}
	if u.names != nil && len(u.names) == 0 {
		return errorf("ExpressionAttributeNames must not be empty")
	}
	if u.values != nil && len(u.values) == 0 {
		return errorf("ExpressionAttributeValues must not be empty")
	}
	for _, k := range sortedKeys(u.names) {
		if !validPlaceholder(k, '#') {
			return errorf("ExpressionAttributeNames contains invalid key: Syntax error; key: \"%s\"", k)
		}
		if u.names[k] == "" {
			return errorf("ExpressionAttributeNames contains invalid value: Empty attribute name for key %s", k)
		}
	}
	for _, k := range sortedKeys(u.values) {
		if !validPlaceholder(k, ':') {
			return errorf("ExpressionAttributeValues contains invalid key: Syntax error; key: \"%s\"", k)
		}
		if err := ValidateValue(u.values[k]); err != nil {
			return errorf("ExpressionAttributeValues contains invalid value: %s for key %s", err.Error(), k)
		}
	}
	return nil
}

// validPlaceholder reports whether key is sign followed by one or more
// letters, digits or underscores, which is all the lexer accepts.
func validPlaceholder(key string, sign byte) bool {
	if len(key) < 2 || key[0] != sign {
		return false
	}
	for i := 1; i < len(key); i++ {
		if !isIdentChar(key[i]) {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// CheckAllUsed refuses names or values that no expression used, names first,
// with DynamoDB's messages, e.g. "Value provided in ExpressionAttributeNames
// unused in expressions: keys: {#a, #b}".
func (u *Usage) CheckAllUsed() error {
	if u == nil {
		return nil
	}
	var names []string
	for k := range u.names {
		if !u.usedNames[k] {
			names = append(names, k)
		}
	}
	if len(names) > 0 {
		sort.Strings(names)
		return errorf("Value provided in ExpressionAttributeNames unused in expressions: keys: {%s}", strings.Join(names, ", "))
	}
	var values []string
	for k := range u.values {
		if !u.usedValues[k] {
			values = append(values, k)
		}
	}
	if len(values) > 0 {
		sort.Strings(values)
		return errorf("Value provided in ExpressionAttributeValues unused in expressions: keys: {%s}", strings.Join(values, ", "))
	}
	return nil
}
