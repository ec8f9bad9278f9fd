package expr

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// KeyCondition is a parsed KeyConditionExpression (Developer Guide, "Key
// condition expressions for the Query operation"): an equality on the
// partition key and at most one condition on the sort key.
type KeyCondition struct {
	HashName  string
	HashValue types.AttributeValue
	RangeName string // "" when there is no sort key condition
	// RangeOp is one of "=", "<", "<=", ">", ">=", "BETWEEN", "begins_with".
	RangeOp     string
	RangeValues []types.AttributeValue // 1 value, or 2 for BETWEEN

	// terms is every condition as written, for an index with
	// multi-attribute keys (ForMultiKey).
	terms []keyTerm
}

// keyTerm is one condition of a key condition expression.
type keyTerm struct {
	name   string
	op     string
	values []types.AttributeValue
}

// ParseKeyCondition parses a KeyConditionExpression. When both conditions
// are equalities the parser cannot tell the partition key from the sort key
// and takes the first as the partition key; ForSchema settles it against
// the table's key schema.
func ParseKeyCondition(s string, u *Usage) (*KeyCondition, error) {
	p := newParser(s, kindKeyCondition, u)
	var terms []keyTerm
	if err := p.run(func() { terms = p.parseKeyConjunction() }); err != nil {
		return nil, err
	}
	if len(terms) > 2 && len(terms) <= maxMultiKeyTerms {
		// Only an index with multi-attribute keys takes more than two
		// conditions; ForSchema refuses them.
		return &KeyCondition{terms: terms}, nil
	}
	kc, err := pairCondition(terms)
	if kc != nil {
		kc.terms = terms
	}
	return kc, err
}

// maxMultiKeyTerms is the most conditions a key condition can have: one per
// attribute of a multi-attribute index key (4 HASH, 4 RANGE).
const maxMultiKeyTerms = 8

func pairCondition(terms []keyTerm) (*KeyCondition, error) {
	switch len(terms) {
	case 1:
		if terms[0].op != "=" {
			return nil, errorf("Query key condition not supported")
		}
		return &KeyCondition{HashName: terms[0].name, HashValue: terms[0].values[0]}, nil
	case 2:
		if terms[0].name == terms[1].name {
			return nil, errorf("KeyConditionExpressions must only contain one condition per key")
		}
		h, r := terms[0], terms[1]
		if h.op != "=" {
			h, r = r, h
		}
		if h.op != "=" {
			return nil, errorf("Query key condition not supported")
		}
		return &KeyCondition{HashName: h.name, HashValue: h.values[0], RangeName: r.name, RangeOp: r.op, RangeValues: r.values}, nil
	}
	return nil, errorf("Conditions can be of length 1 or 2 only")
}

// ForSchema checks the condition against a table's or index's key schema
// (rangeKey "" when there is no sort key) and returns it with the partition
// and sort key conditions in their right places.
func (k *KeyCondition) ForSchema(hashKey, rangeKey string) (*KeyCondition, error) {
	if k.HashName == "" && len(k.terms) > 2 {
		return nil, errorf("Conditions can be of length 1 or 2 only")
	}
	out := *k
	if out.HashName != hashKey && out.RangeName == hashKey && out.RangeOp == "=" {
		out.HashName, out.RangeName = out.RangeName, out.HashName
		out.HashValue, out.RangeValues = out.RangeValues[0], []types.AttributeValue{out.HashValue}
	}
	if out.HashName != hashKey {
		// A condition on the partition key that is not an equality is not
		// supported; no condition on it at all (only the sort key's, say)
		// misses it.
		if out.RangeName == hashKey || (out.HashName == rangeKey && out.RangeName != "") {
			return nil, errorf("Query key condition not supported")
		}
		return nil, errorf("Query condition missed key schema element: %s", hashKey)
	}
	if out.RangeName != "" && out.RangeName != rangeKey {
		return nil, errorf("Query condition missed key schema element: %s", orNone(rangeKey))
	}
	return &out, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func (p *parser) parseKeyConjunction() []keyTerm {
	terms := p.parseKeyTerm()
	for {
		if p.isKeyword("AND") {
			p.next()
			terms = append(terms, p.parseKeyTerm()...)
			continue
		}
		if p.isKeyword("OR") || p.isKeyword("NOT") {
			p.failRaw("Invalid operator used in KeyConditionExpression: %s", strings.ToUpper(p.peek().text))
		}
		return terms
	}
}

func (p *parser) parseKeyTerm() []keyTerm {
	if p.peek().kind == tokLParen {
		p.next()
		terms := p.parseKeyConjunction()
		p.expect(tokRParen)
		return terms
	}
	if p.isKeyword("NOT") {
		p.failRaw("Invalid operator used in KeyConditionExpression: NOT")
	}
	if p.peek().kind == tokIdent && p.peekAt(1).kind == tokLParen {
		name := p.next().text
		p.next()
		if name != "begins_with" {
			if _, ok := conditionFunctions[name]; ok || name == "size" {
				p.failRaw("Invalid operator used in KeyConditionExpression: %s", name)
			}
			p.fail("Invalid function name; function: %s", name)
		}
		path := p.parseKeyPath()
		p.expect(tokComma)
		v := p.parseValueRef()
		p.expect(tokRParen)
		if v != nil {
			if tc := TypeCode(v); tc != typeS && tc != typeB {
				p.semantic("Incorrect operand type for operator or function; operator or function: begins_with, operand type: %s", tc)
			}
		}
		return []keyTerm{{name: path, op: "begins_with", values: []types.AttributeValue{v}}}
	}
	if p.peek().kind == tokValue {
		// ":v = pk": DynamoDB accepts the value first; flip it.
		v := p.parseValueRef()
		op := p.parseKeyComparator()
		name := p.parseKeyPath()
		return []keyTerm{{name: name, op: flip(op), values: []types.AttributeValue{v}}}
	}
	name := p.parseKeyPath()
	if p.isKeyword("BETWEEN") {
		p.next()
		lo := p.parseKeyValue()
		if !p.isKeyword("AND") {
			p.syntaxError()
		}
		p.next()
		hi := p.parseKeyValue()
		if lo != nil && hi != nil {
			if TypeCode(lo) != TypeCode(hi) {
				p.semantic("The BETWEEN operator requires same data type for lower and upper bounds; lower bound operand: AttributeValue: %s, upper bound operand: AttributeValue: %s", describeValue(lo), describeValue(hi))
			} else if c, ok := Compare(lo, hi); ok && c > 0 {
				p.semantic("The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: %s, upper bound operand: AttributeValue: %s", describeValue(lo), describeValue(hi))
			}
		}
		return []keyTerm{{name: name, op: "BETWEEN", values: []types.AttributeValue{lo, hi}}}
	}
	if p.isKeyword("IN") {
		p.failRaw("Invalid operator used in KeyConditionExpression: IN")
	}
	op := p.parseKeyComparator()
	v := p.parseKeyValue()
	return []keyTerm{{name: name, op: op, values: []types.AttributeValue{v}}}
}

func (p *parser) parseKeyComparator() string {
	t := p.peek()
	switch t.kind {
	case tokEq, tokLt, tokLe, tokGt, tokGe:
		p.next()
		return t.text
	case tokNe:
		p.failRaw("Invalid operator used in KeyConditionExpression: <>")
	}
	p.syntaxError()
	return ""
}

// parseKeyValue parses the value side of a key condition, which must be a
// :value.
func (p *parser) parseKeyValue() types.AttributeValue {
	if p.atPathStart() {
		p.parsePath()
		p.failRaw("Invalid condition in KeyConditionExpression: Multiple attribute names used in one condition")
	}
	return p.parseValueRef()
}

// parseKeyPath parses a key attribute, which must be top-level.
func (p *parser) parseKeyPath() string {
	path := p.parsePath()
	if len(path) > 1 {
		p.failRaw("KeyConditionExpressions cannot have conditions on nested attributes")
	}
	return path[0].name
}

func flip(op string) string {
	switch op {
	case "<":
		return ">"
	case "<=":
		return ">="
	case ">":
		return "<"
	case ">=":
		return "<="
	}
	return op
}

// MultiKeyCondition is a key condition resolved against a multi-attribute
// key: an equality on every HASH attribute, equalities on a leading run of
// the RANGE attributes, and optionally one last condition of any kind on the
// RANGE attribute after them.
type MultiKeyCondition struct {
	HashValues  []types.AttributeValue // one per HASH attribute, in order
	RangeEquals []types.AttributeValue // the leading RANGE equalities
	// LastOp and LastValues are the condition on the RANGE attribute after
	// RangeEquals ("" when there is none).
	LastOp     string
	LastValues []types.AttributeValue
}

// ForMultiKey resolves the condition against an index's multi-attribute key
// (Developer Guide, "Multi-attribute keys": every partition key attribute
// with an equality; sort key attributes left to right without gaps, an
// inequality only on the last one given). The order the conditions are
// written in does not matter. DynamoDB's messages for these refusals are
// not documented; these name the rule broken.
func (k *KeyCondition) ForMultiKey(hashKeys, rangeKeys []string) (*MultiKeyCondition, error) {
	byName := map[string]keyTerm{}
	for _, t := range k.terms {
		if _, dup := byName[t.name]; dup {
			return nil, errorf("KeyConditionExpressions must only contain one condition per key")
		}
		byName[t.name] = t
	}
	out := &MultiKeyCondition{}
	for _, h := range hashKeys {
		t, ok := byName[h]
		if !ok || t.op != "=" {
			return nil, errorf("Query key condition not supported: every HASH key attribute of the index needs an equality condition; attribute: %s", h)
		}
		out.HashValues = append(out.HashValues, t.values[0])
		delete(byName, h)
	}
	for i, r := range rangeKeys {
		t, ok := byName[r]
		if !ok {
			break
		}
		delete(byName, r)
		if t.op == "=" && i < len(rangeKeys)-1 {
			if _, more := byName[rangeKeys[i+1]]; more {
				out.RangeEquals = append(out.RangeEquals, t.values[0])
				continue
			}
		}
		out.LastOp, out.LastValues = t.op, t.values
		break
	}
	for name := range byName {
		if slicesContains(rangeKeys, name) {
			return nil, errorf("Query key condition not supported: RANGE key attributes need equality conditions from the first one on, in key schema order, with an inequality only on the last one given; attribute: %s", name)
		}
		return nil, errorf("Query condition missed key schema element: %s is not a key attribute of the index", name)
	}
	return out, nil
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
