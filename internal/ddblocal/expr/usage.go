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
