package lambdastack

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Pattern is a Lambda event-filtering pattern (the EventBridge pattern
// syntax Lambda's filter criteria use): nested objects narrow to a field, a
// list holds the values or conditions any of which the field must match.
// Supported: literal strings, numbers, booleans and null; prefix, suffix,
// anything-but (values or a prefix), numeric ranges, exists,
// equals-ignore-case, wildcard, and $or.
type Pattern struct {
	fields map[string]patternNode
	or     []*Pattern
}

// patternNode is either a nested Pattern or the conditions on one field.
type patternNode struct {
	nested     *Pattern
	conditions []condition
}

type condition struct {
	kind   string // "literal", "prefix", "suffix", "anything-but", "numeric", "exists", "equals-ignore-case", "wildcard"
	value  any    // literal, prefix, suffix, wildcard: the operand; exists: bool
	values []any  // anything-but: the excluded values (or one prefix, with prefix set)
	prefix bool   // anything-but with a prefix
	ranges []numericBound
}

type numericBound struct {
	op    string
	value float64
}

// ParsePattern reads a filter pattern.
func ParsePattern(s string) (*Pattern, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("filter pattern: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("filter pattern: not a JSON object")
	}
	return parsePatternObject(m, "")
}

func parsePatternObject(m map[string]any, at string) (*Pattern, error) {
	p := &Pattern{fields: map[string]patternNode{}}
	for k, v := range m {
		where := strings.TrimPrefix(at+"."+k, ".")
		if k == "$or" {
			l, ok := v.([]any)
			if !ok || len(l) < 2 {
				return nil, fmt.Errorf("filter pattern %s: $or wants a list of at least two patterns", where)
			}
			for _, e := range l {
				em, ok := e.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("filter pattern %s: $or member is not an object", where)
				}
				sub, err := parsePatternObject(em, at)
				if err != nil {
					return nil, err
				}
				p.or = append(p.or, sub)
			}
			continue
		}
		switch v := v.(type) {
		case map[string]any:
			sub, err := parsePatternObject(v, where)
			if err != nil {
				return nil, err
			}
			p.fields[k] = patternNode{nested: sub}
		case []any:
			var conds []condition
			for _, e := range v {
				c, err := parseCondition(e, where)
				if err != nil {
					return nil, err
				}
				conds = append(conds, c)
			}
			p.fields[k] = patternNode{conditions: conds}
		default:
			return nil, fmt.Errorf("filter pattern %s: a field's values must be in a list", where)
		}
	}
	return p, nil
}

func parseCondition(e any, where string) (condition, error) {
	m, ok := e.(map[string]any)
	if !ok {
		return condition{kind: "literal", value: normalize(e)}, nil
	}
	if len(m) != 1 {
		return condition{}, fmt.Errorf("filter pattern %s: a condition has one operator", where)
	}
	for op, arg := range m {
		switch op {
		case "prefix", "suffix", "equals-ignore-case", "wildcard":
			s, ok := arg.(string)
			if !ok {
				return condition{}, fmt.Errorf("filter pattern %s: %s wants a string", where, op)
			}
			return condition{kind: op, value: s}, nil
		case "exists":
			b, ok := arg.(bool)
			if !ok {
				return condition{}, fmt.Errorf("filter pattern %s: exists wants true or false", where)
			}
			return condition{kind: op, value: b}, nil
		case "anything-but":
			c := condition{kind: op}
			switch a := arg.(type) {
			case []any:
				for _, x := range a {
					c.values = append(c.values, normalize(x))
				}
			case map[string]any:
				s, ok := a["prefix"].(string)
				if !ok || len(a) != 1 {
					return condition{}, fmt.Errorf("filter pattern %s: anything-but takes values or {\"prefix\": …}", where)
				}
				c.prefix, c.values = true, []any{s}
			default:
				c.values = []any{normalize(a)}
			}
			return c, nil
		case "numeric":
			l, ok := arg.([]any)
			if !ok || len(l) == 0 || len(l)%2 != 0 {
				return condition{}, fmt.Errorf("filter pattern %s: numeric wants [op, number, …]", where)
			}
			c := condition{kind: op}
			for i := 0; i < len(l); i += 2 {
				o, _ := l[i].(string)
				n, ok := normalize(l[i+1]).(float64)
				if !ok || !strings.Contains(" = < <= > >= ", " "+o+" ") {
					return condition{}, fmt.Errorf("filter pattern %s: numeric wants [op, number, …]", where)
				}
				c.ranges = append(c.ranges, numericBound{o, n})
			}
			return c, nil
		}
		return condition{}, fmt.Errorf("filter pattern %s: unsupported operator %q", where, op)
	}
	return condition{}, nil
}

// normalize turns json.Numbers into float64 so literals compare by value.
func normalize(v any) any {
	if n, ok := v.(json.Number); ok {
		f, err := n.Float64()
		if err == nil {
			return f
		}
		return n.String()
	}
	return v
}

// Match reports whether the JSON document doc matches the pattern.
func (p *Pattern) Match(doc []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return false
	}
	m, _ := v.(map[string]any)
	return p.match(m)
}

func (p *Pattern) match(m map[string]any) bool {
	keys := make([]string, 0, len(p.fields))
	for k := range p.fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		node := p.fields[k]
		v, present := m[k]
		if node.nested != nil {
			sub, ok := v.(map[string]any)
			if !ok {
				sub = nil
			}
			if !node.nested.match(sub) {
				return false
			}
			continue
		}
		if !matchField(node.conditions, v, present) {
			return false
		}
	}
	if len(p.or) == 0 {
		return true
	}
	for _, alt := range p.or {
		if alt.match(m) {
			return true
		}
	}
	return false
}

// matchField reports whether any condition holds for the field's value
// (any element of it, when it is a list).
func matchField(conds []condition, v any, present bool) bool {
	values := []any{normalize(v)}
	if l, ok := v.([]any); ok {
		values = values[:0]
		for _, e := range l {
			values = append(values, normalize(e))
		}
	}
	for _, c := range conds {
		if c.kind == "exists" {
			if c.value.(bool) == present {
				return true
			}
			continue
		}
		if !present {
			continue
		}
		for _, x := range values {
			if c.holds(x) {
				return true
			}
		}
	}
	return false
}

func (c condition) holds(x any) bool {
	s, isStr := x.(string)
	switch c.kind {
	case "literal":
		return x == c.value
	case "prefix":
		return isStr && strings.HasPrefix(s, c.value.(string))
	case "suffix":
		return isStr && strings.HasSuffix(s, c.value.(string))
	case "equals-ignore-case":
		return isStr && strings.EqualFold(s, c.value.(string))
	case "wildcard":
		return isStr && wildcardMatch(c.value.(string), s)
	case "anything-but":
		if c.prefix {
			return isStr && !strings.HasPrefix(s, c.values[0].(string))
		}
		for _, v := range c.values {
			if x == v {
				return false
			}
		}
		return true
	case "numeric":
		f, ok := x.(float64)
		if !ok {
			return false
		}
		for _, b := range c.ranges {
			if !b.holds(f) {
				return false
			}
		}
		return true
	}
	return false
}

func (b numericBound) holds(f float64) bool {
	switch b.op {
	case "=":
		return f == b.value
	case "<":
		return f < b.value
	case "<=":
		return f <= b.value
	case ">":
		return f > b.value
	}
	return f >= b.value
}

// wildcardMatch matches s against a pattern whose only special character
// is "*" (any run of characters, "/" included), as EventBridge's wildcard
// does. ARN patterns in IAM statements match the same way.
func wildcardMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}
