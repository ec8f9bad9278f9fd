package expr

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Condition is a parsed ConditionExpression or FilterExpression.
type Condition struct {
	root condNode
}

// condNode is a node of a condition's syntax tree.
type condNode interface {
	eval(item map[string]types.AttributeValue) bool
}

// maxInOperands is DynamoDB's limit on the IN list (Developer Guide,
// "Comparison operator and function reference": up to 100 values).
const maxInOperands = 100

// ParseCondition parses a ConditionExpression, resolving #names and :values
// through u and recording their use.
func ParseCondition(s string, u *Usage) (*Condition, error) {
	return parseCondition(s, kindCondition, u)
}

// ParseFilter parses a FilterExpression: the same language as
// ParseCondition, with "FilterExpression" in error messages.
func ParseFilter(s string, u *Usage) (*Condition, error) {
	return parseCondition(s, kindFilter, u)
}

func parseCondition(s, kind string, u *Usage) (*Condition, error) {
	p := newParser(s, kind, u)
	var root condNode
	if err := p.run(func() { root = p.parseOr() }); err != nil {
		return nil, err
	}
	return &Condition{root: root}, nil
}

// Eval evaluates the condition against item; item may be nil (no item), in
// which case every attribute is missing. Comparisons with missing attributes
// or values of different types are false, not errors.
func (c *Condition) Eval(item map[string]types.AttributeValue) (bool, error) {
	if c == nil || c.root == nil {
		return true, nil
	}
	return c.root.eval(item), nil
}

// Precedence, highest first: comparators, IN, BETWEEN, functions,
// parentheses; then NOT, AND, OR (Developer Guide, "Comparison operator and
// function reference", Precedence in conditions).

func (p *parser) parseOr() condNode {
	left := p.parseAnd()
	for p.isKeyword("OR") {
		p.next()
		left = orNode{left, p.parseAnd()}
	}
	return left
}

func (p *parser) parseAnd() condNode {
	left := p.parseNot()
	for p.isKeyword("AND") {
		p.next()
		left = andNode{left, p.parseNot()}
	}
	return left
}

func (p *parser) parseNot() condNode {
	if p.isKeyword("NOT") {
		p.next()
		return notNode{p.parseNot()}
	}
	return p.parsePrimary()
}

func (p *parser) parsePrimary() condNode {
	if p.peek().kind == tokLParen {
		p.next()
		n := p.parseOr()
		p.expect(tokRParen)
		return n
	}
	if p.peek().kind == tokIdent && p.peekAt(1).kind == tokLParen && p.peek().text != "size" {
		return p.parseBoolFunction()
	}
	left := p.parseOperand()
	t := p.peek()
	switch {
	case t.kind == tokEq || t.kind == tokNe || t.kind == tokLt || t.kind == tokLe || t.kind == tokGt || t.kind == tokGe:
		p.next()
		right := p.parseOperand()
		if left.kind == operandPath && right.kind == operandPath && left.path.String() == right.path.String() {
			p.semantic("The first operand must be distinct from the remaining operands for this operator or function; operator: %s, first operand: %s", t.text, left.path)
		}
		return compareNode{op: t.kind, left: left, right: right}
	case p.isKeyword("BETWEEN"):
		p.next()
		lo := p.parseOperand()
		if !p.isKeyword("AND") {
			p.syntaxError()
		}
		p.next()
		hi := p.parseOperand()
		if lo.kind == operandValue && hi.kind == operandValue && lo.value != nil && hi.value != nil {
			if TypeCode(lo.value) != TypeCode(hi.value) {
				p.semantic("The BETWEEN operator requires same data type for lower and upper bounds; lower bound operand: AttributeValue: %s, upper bound operand: AttributeValue: %s", describeValue(lo.value), describeValue(hi.value))
			} else if c, ok := Compare(lo.value, hi.value); ok && c > 0 {
				p.semantic("The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: %s, upper bound operand: AttributeValue: %s", describeValue(lo.value), describeValue(hi.value))
			}
		}
		return betweenNode{x: left, lo: lo, hi: hi}
	case p.isKeyword("IN"):
		p.next()
		p.expect(tokLParen)
		var list []operand
		for {
			list = append(list, p.parseOperand())
			if p.peek().kind != tokComma {
				break
			}
			p.next()
		}
		p.expect(tokRParen)
		if len(list) > maxInOperands {
			p.semantic("The IN operator is provided with too many operands; number of operands: %d", len(list))
		}
		return inNode{x: left, list: list}
	}
	if left.kind == operandSize {
		p.semantic("The function is not allowed to be used this way in an expression; function: size")
		return falseNode{}
	}
	p.syntaxError()
	return nil
}

// operandKind tells what an operand of a comparison is.
type operandKind int

const (
	operandPath operandKind = iota
	operandValue
	operandSize
)

// operand is a path, a :value or size(path).
type operand struct {
	kind  operandKind
	path  docPath
	value types.AttributeValue
}

func (p *parser) parseOperand() operand {
	t := p.peek()
	switch {
	case t.kind == tokValue:
		return operand{kind: operandValue, value: p.parseValueRef()}
	case t.kind == tokIdent && p.peekAt(1).kind == tokLParen:
		p.next()
		p.next()
		if t.text != "size" {
			p.functionMisuse(t.text)
		}
		if !p.atPathStart() {
			if p.peek().kind == tokValue {
				p.parseValueRef()
				p.semantic("Operator or function requires a document path; operator or function: size")
			} else {
				p.syntaxError()
			}
			p.expect(tokRParen)
			return operand{kind: operandSize}
		}
		path := p.parsePath()
		p.expect(tokRParen)
		return operand{kind: operandSize, path: path}
	case t.kind == tokIdent || t.kind == tokName:
		return operand{kind: operandPath, path: p.parsePath()}
	}
	p.syntaxError()
	return operand{}
}

// functionMisuse reports a function used where an operand is expected.
func (p *parser) functionMisuse(name string) {
	if _, ok := conditionFunctions[name]; ok {
		p.semantic("The function is not allowed to be used this way in an expression; function: %s", name)
		return
	}
	if name == "if_not_exists" || name == "list_append" {
		p.semantic("The function is not allowed in a condition expression; function: %s", name)
		return
	}
	p.semantic("Invalid function name; function: %s", name)
}

// conditionFunctions are the boolean functions with their operand counts.
// Function names are case-sensitive.
var conditionFunctions = map[string]int{
	"attribute_exists":     1,
	"attribute_not_exists": 1,
	"attribute_type":       2,
	"begins_with":          2,
	"contains":             2,
}

// validTypeCodes are the type names attribute_type accepts.
var validTypeCodes = map[string]bool{
	typeS: true, typeN: true, typeB: true, typeBOOL: true, typeNULL: true,
	typeM: true, typeL: true, typeSS: true, typeNS: true, typeBS: true,
}

func (p *parser) parseBoolFunction() condNode {
	name := p.next().text
	p.next() // (
	var args []operand
	if p.peek().kind != tokRParen {
		for {
			args = append(args, p.parseOperand())
			if p.peek().kind != tokComma {
				break
			}
			p.next()
		}
	}
	p.expect(tokRParen)
	want, ok := conditionFunctions[name]
	if !ok {
		if name == "if_not_exists" || name == "list_append" {
			p.semantic("The function is not allowed in a condition expression; function: %s", name)
		} else {
			p.semantic("Invalid function name; function: %s", name)
		}
		return falseNode{}
	}
	if len(args) != want {
		p.semantic("Incorrect number of operands for operator or function; operator or function: %s, number of operands: %d", name, len(args))
		return falseNode{}
	}
	if args[0].kind != operandPath {
		p.semantic("Operator or function requires a document path; operator or function: %s", name)
		return falseNode{}
	}
	for _, a := range args[1:] {
		if a.kind == operandSize {
			p.semantic("The function is not allowed to be used this way in an expression; function: size")
		}
	}
	fn := funcNode{name: name, args: args}
	switch name {
	case "attribute_type":
		if args[1].kind != operandValue {
			p.semantic("Incorrect operand type for operator or function; operator or function: attribute_type, operand type: path")
			break
		}
		if args[1].value == nil {
			break
		}
		s, isS := args[1].value.(*types.AttributeValueMemberS)
		if !isS {
			p.semantic("Incorrect operand type for operator or function; operator or function: attribute_type, operand type: %s", TypeCode(args[1].value))
			break
		}
		if !validTypeCodes[s.Value] {
			p.semantic("Invalid attribute type name found; type: %s, valid types: { B,NULL,SS,BOOL,L,BS,N,NS,S,M }", s.Value)
		}
	case "begins_with":
		if args[1].kind == operandValue && args[1].value != nil {
			if tc := TypeCode(args[1].value); tc != typeS && tc != typeB {
				p.semantic("Incorrect operand type for operator or function; operator or function: begins_with, operand type: %s", tc)
			}
		}
	}
	return fn
}

type orNode struct{ l, r condNode }

func (n orNode) eval(item map[string]types.AttributeValue) bool {
	return n.l.eval(item) || n.r.eval(item)
}

type andNode struct{ l, r condNode }

func (n andNode) eval(item map[string]types.AttributeValue) bool {
	return n.l.eval(item) && n.r.eval(item)
}

type notNode struct{ x condNode }

func (n notNode) eval(item map[string]types.AttributeValue) bool { return !n.x.eval(item) }

// falseNode stands in for a node that failed a semantic check; the parse
// returns an error, so it is never evaluated.
type falseNode struct{}

func (falseNode) eval(map[string]types.AttributeValue) bool { return false }

// eval returns the operand's value in item and whether it exists.
func (o operand) eval(item map[string]types.AttributeValue) (types.AttributeValue, bool) {
	switch o.kind {
	case operandValue:
		return o.value, o.value != nil
	case operandPath:
		return o.path.get(item)
	case operandSize:
		v, ok := o.path.get(item)
		if !ok {
			return nil, false
		}
		n, ok := sizeOf(v)
		if !ok {
			return nil, false
		}
		return &types.AttributeValueMemberN{Value: strconv.Itoa(n)}, true
	}
	return nil, false
}

// sizeOf implements the size function. Strings count UTF-16 code units:
// the guide says "the length of the string", and DynamoDB measures it in
// UTF-16 code units ("é𝄞" has size 3; verified against DynamoDB in
// github.com/ExtendDB/extenddb pull request #67). Binary counts bytes; sets,
// lists and maps count elements. Other types have no size, so a comparison
// with their size is false.
func sizeOf(v types.AttributeValue) (int, bool) {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		n := 0
		for _, r := range x.Value {
			if utf16.RuneLen(r) == 2 {
				n += 2
			} else {
				n++
			}
		}
		return n, true
	case *types.AttributeValueMemberB:
		return len(x.Value), true
	case *types.AttributeValueMemberSS:
		return len(x.Value), true
	case *types.AttributeValueMemberNS:
		return len(x.Value), true
	case *types.AttributeValueMemberBS:
		return len(x.Value), true
	case *types.AttributeValueMemberL:
		return len(x.Value), true
	case *types.AttributeValueMemberM:
		return len(x.Value), true
	}
	return 0, false
}

type compareNode struct {
	op          tokenKind
	left, right operand
}

// eval: = is deep equality of any two values; <> is its negation, so it is
// true when an attribute is missing or of another type (DynamoDB behaviour,
// confirmed against the service in github.com/nubo-db/dynoxide pull request
// #8 and github.com/truora/minidyn issue #23); the orderings hold only between
// two S, two N or two B values, and are false otherwise.
func (n compareNode) eval(item map[string]types.AttributeValue) bool {
	a, aok := n.left.eval(item)
	b, bok := n.right.eval(item)
	switch n.op {
	case tokEq:
		return aok && bok && Equal(a, b)
	case tokNe:
		return !(aok && bok && Equal(a, b))
	}
	if !aok || !bok {
		return false
	}
	c, ok := Compare(a, b)
	if !ok {
		return false
	}
	switch n.op {
	case tokLt:
		return c < 0
	case tokLe:
		return c <= 0
	case tokGt:
		return c > 0
	case tokGe:
		return c >= 0
	}
	return false
}

type betweenNode struct{ x, lo, hi operand }

func (n betweenNode) eval(item map[string]types.AttributeValue) bool {
	x, ok := n.x.eval(item)
	if !ok {
		return false
	}
	lo, ok := n.lo.eval(item)
	if !ok {
		return false
	}
	hi, ok := n.hi.eval(item)
	if !ok {
		return false
	}
	c1, ok1 := Compare(x, lo)
	c2, ok2 := Compare(x, hi)
	return ok1 && ok2 && c1 >= 0 && c2 <= 0
}

type inNode struct {
	x    operand
	list []operand
}

func (n inNode) eval(item map[string]types.AttributeValue) bool {
	x, ok := n.x.eval(item)
	if !ok {
		return false
	}
	for _, o := range n.list {
		if v, ok := o.eval(item); ok && Equal(x, v) {
			return true
		}
	}
	return false
}

type funcNode struct {
	name string
	args []operand
}

func (n funcNode) eval(item map[string]types.AttributeValue) bool {
	v, exists := n.args[0].eval(item)
	switch n.name {
	case "attribute_exists":
		return exists
	case "attribute_not_exists":
		return !exists
	}
	if !exists {
		return false
	}
	arg, ok := n.args[1].eval(item)
	if !ok {
		return false
	}
	switch n.name {
	case "attribute_type":
		s, ok := arg.(*types.AttributeValueMemberS)
		return ok && TypeCode(v) == s.Value
	case "begins_with":
		switch x := v.(type) {
		case *types.AttributeValueMemberS:
			y, ok := arg.(*types.AttributeValueMemberS)
			return ok && strings.HasPrefix(x.Value, y.Value)
		case *types.AttributeValueMemberB:
			y, ok := arg.(*types.AttributeValueMemberB)
			return ok && bytes.HasPrefix(x.Value, y.Value)
		}
		return false
	case "contains":
		return contains(v, arg)
	}
	return false
}

// contains implements contains(path, operand): a substring of a string, an
// element of a set of the operand's type, or an element of a list (Developer
// Guide, "Comparison operator and function reference").
func contains(v, arg types.AttributeValue) bool {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		y, ok := arg.(*types.AttributeValueMemberS)
		return ok && strings.Contains(x.Value, y.Value)
	case *types.AttributeValueMemberB:
		y, ok := arg.(*types.AttributeValueMemberB)
		return ok && bytes.Contains(x.Value, y.Value)
	case *types.AttributeValueMemberSS:
		y, ok := arg.(*types.AttributeValueMemberS)
		return ok && setContains(x.Value, y.Value, func(p, q string) bool { return p == q })
	case *types.AttributeValueMemberNS:
		y, ok := arg.(*types.AttributeValueMemberN)
		return ok && setContains(x.Value, y.Value, numbersEqual)
	case *types.AttributeValueMemberBS:
		y, ok := arg.(*types.AttributeValueMemberB)
		return ok && setContains(x.Value, y.Value, func(p, q []byte) bool { return bytes.Equal(p, q) })
	case *types.AttributeValueMemberL:
		for _, e := range x.Value {
			if Equal(e, arg) {
				return true
			}
		}
	}
	return false
}
