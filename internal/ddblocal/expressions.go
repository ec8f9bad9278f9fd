package ddblocal

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/ddblocal/expr"
)

// The expression language and DynamoDB's value rules live in package expr;
// this file is the one place the engine calls it.

// maxItemSize is DynamoDB's item size limit.
const maxItemSize = 400 * 1024

func sizeOfItem(item Item) int { return expr.ItemSize(item) }

// asValidation turns an *expr.Error into a ValidationException.
func asValidation(err error) error {
	var e *expr.Error
	if errors.As(err, &e) {
		return validationError("%s", e.Message)
	}
	return err
}

// checkItem refuses an item DynamoDB would refuse as a whole: invalid
// values, oversized items, bad keys or index keys. It returns the encoded
// primary key.
func (s *tableSchema) checkItem(item Item) ([]byte, int, error) {
	for name, v := range item {
		if name == "" {
			return nil, 0, validationError("One or more parameter values were invalid: An attribute name cannot be empty")
		}
		if err := expr.ValidateValue(v); err != nil {
			return nil, 0, asValidation(err)
		}
	}
	key, err := s.itemKey(item)
	if err != nil {
		return nil, 0, err
	}
	if err := s.checkIndexKeys(item); err != nil {
		return nil, 0, err
	}
	size := sizeOfItem(item)
	if size > maxItemSize {
		return nil, 0, validationError(msgItemTooLarge)
	}
	return key, size, nil
}

// exprs holds the parsed expressions of one request.
type exprs struct {
	usage *expr.Usage
}

func newExprs(names map[string]string, values map[string]types.AttributeValue) (*exprs, error) {
	if names != nil && len(names) == 0 {
		return nil, validationError("ExpressionAttributeNames must not be empty")
	}
	if values != nil && len(values) == 0 {
		return nil, validationError("ExpressionAttributeValues must not be empty")
	}
	for _, k := range sortedKeys(values) {
		if err := expr.ValidateValue(values[k]); err != nil {
			return nil, validationError("ExpressionAttributeValues contains invalid value: %s for key %s", validationMessage(asValidation(err)), k)
		}
	}
	return &exprs{usage: expr.NewUsage(names, values)}, nil
}

// condition parses a ConditionExpression ("" means none: always true).
func (x *exprs) condition(s *string) (*expr.Condition, error) {
	if s == nil {
		return nil, nil
	}
	c, err := expr.ParseCondition(*s, x.usage)
	if err != nil {
		return nil, asValidation(err)
	}
	return c, nil
}

// filter parses a FilterExpression.
func (x *exprs) filter(s *string) (*expr.Condition, error) {
	if s == nil {
		return nil, nil
	}
	c, err := expr.ParseFilter(*s, x.usage)
	if err != nil {
		return nil, asValidation(err)
	}
	return c, nil
}

func (x *exprs) update(s *string) (*expr.Update, error) {
	if s == nil {
		return nil, nil
	}
	u, err := expr.ParseUpdate(*s, x.usage)
	if err != nil {
		return nil, asValidation(err)
	}
	return u, nil
}

// done refuses names or values that no expression used.
func (x *exprs) done() error {
	return asValidation(x.usage.CheckAllUsed())
}

// holds evaluates a condition (nil holds) against item (nil when absent).
func holds(c *expr.Condition, item Item) (bool, error) {
	if c == nil {
		return true, nil
	}
	ok, err := c.Eval(item)
	return ok, asValidation(err)
}

// projector applies a ProjectionExpression (nil keeps everything).
type projector struct {
	p *expr.Projection
}

func (x *exprs) projection(s *string) (*projector, error) {
	if s == nil {
		return nil, nil
	}
	p, err := expr.ParseProjection(*s, x.usage)
	if err != nil {
		return nil, asValidation(err)
	}
	return &projector{p: p}, nil
}

func (p *projector) apply(item Item) Item {
	if p == nil || item == nil {
		return item
	}
	return p.p.Apply(item)
}
