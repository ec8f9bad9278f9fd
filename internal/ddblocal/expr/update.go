package expr

import (
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Update is a parsed UpdateExpression.
type Update struct {
	sets    []setAction
	removes []docPath
	adds    []setOpAction
	deletes []setOpAction
	paths   []docPath // every target path, in expression order
}

// setAction is one "path = value" of a SET clause.
type setAction struct {
	path  docPath
	value valueExpr
}

// setOpAction is one "path :value" of an ADD or DELETE clause.
type setOpAction struct {
	path  docPath
	value types.AttributeValue
}

// valueExpr is the right-hand side of a SET action.
type valueExpr interface {
	eval(item map[string]types.AttributeValue) (types.AttributeValue, error)
}

// ParseUpdate parses an UpdateExpression (Developer Guide, "Using update
// expressions"): SET, REMOVE, ADD and DELETE clauses, each at most once, in
// any order, with no two target paths overlapping or conflicting.
func ParseUpdate(s string, u *Usage) (*Update, error) {
	p := newParser(s, kindUpdate, u)
	up := &Update{}
	if err := p.run(func() { p.parseUpdate(up) }); err != nil {
		return nil, err
	}
	if err := checkPaths(kindUpdate, up.paths); err != nil {
		return nil, err
	}
	return up, nil
}

func (p *parser) parseUpdate(up *Update) {
	seen := map[string]bool{}
	for p.peek().kind != tokEOF {
		t := p.peek()
		if t.kind != tokIdent {
			p.syntaxError()
		}
		clause := strings.ToUpper(t.text)
		switch clause {
		case "SET", "REMOVE", "ADD", "DELETE":
		default:
			p.syntaxError()
		}
		if seen[clause] {
			p.fail("The \"%s\" section can only be used once in an update expression;", clause)
		}
		seen[clause] = true
		p.next()
		for {
			switch clause {
			case "SET":
				path := p.parsePath()
				p.expect(tokEq)
				up.sets = append(up.sets, setAction{path: path, value: p.parseSetValue()})
				up.paths = append(up.paths, path)
			case "REMOVE":
				path := p.parsePath()
				up.removes = append(up.removes, path)
				up.paths = append(up.paths, path)
			case "ADD", "DELETE":
				path := p.parsePath()
				if p.peek().kind != tokValue {
					p.syntaxError()
				}
				v := p.parseValueRef()
				p.checkSetOpOperand(clause, v)
				a := setOpAction{path: path, value: v}
				if clause == "ADD" {
					up.adds = append(up.adds, a)
				} else {
					up.deletes = append(up.deletes, a)
				}
				up.paths = append(up.paths, path)
			}
			if p.peek().kind != tokComma {
				break
			}
			p.next()
		}
	}
}

// checkSetOpOperand refuses ADD values that are neither numbers nor sets and
// DELETE values that are not sets.
func (p *parser) checkSetOpOperand(clause string, v types.AttributeValue) {
	if v == nil {
		return
	}
	switch TypeCode(v) {
	case typeSS, typeNS, typeBS:
		return
	case typeN:
		if clause == "ADD" {
			return
		}
	}
	p.semantic("Incorrect operand type for operator or function; operator: %s, operand type: %s", clause, typeName(v))
}

// typeName names a value's type the way DynamoDB's operand-type messages do.
func typeName(v types.AttributeValue) string {
	switch TypeCode(v) {
	case typeS:
		return "STRING"
	case typeN:
		return "NUMBER"
	case typeB:
		return "BINARY"
	case typeBOOL:
		return "BOOLEAN"
	case typeNULL:
		return "NULL"
	case typeM:
		return "MAP"
	case typeL:
		return "LIST"
	case typeSS:
		return "STRING_SET"
	case typeNS:
		return "NUMBER_SET"
	case typeBS:
		return "BINARY_SET"
	}
	return "UNKNOWN"
}

// parseSetValue parses operand [ ('+' | '-') operand ].
func (p *parser) parseSetValue() valueExpr {
	left := p.parseUpdateOperand()
	switch p.peek().kind {
	case tokPlus, tokMinus:
		op := p.next()
		right := p.parseUpdateOperand()
		p.checkOperandType(op.text, left, typeN)
		p.checkOperandType(op.text, right, typeN)
		return arithExpr{subtract: op.kind == tokMinus, a: left, b: right}
	}
	return left
}

// checkOperandType refuses a literal operand of the wrong type at parse
// time, as DynamoDB does.
func (p *parser) checkOperandType(fn string, e valueExpr, want string) {
	c, ok := e.(constExpr)
	if !ok || c.v == nil {
		return
	}
	if TypeCode(c.v) != want {
		p.semantic("Incorrect operand type for operator or function; operator or function: %s, operand type: %s", fn, typeName(c.v))
	}
}

// parseUpdateOperand parses a path, a :value, if_not_exists(path, operand),
// list_append(operand, operand) or a parenthesised value: DynamoDB's grammar
// takes "SET c = (c - :v)" and "SET x = (if_not_exists(x, :d) - :v)", while
// a path cannot go on after the parenthesis ("(b.c).d") and arithmetic does
// not chain ("b + c + d").
func (p *parser) parseUpdateOperand() valueExpr {
	t := p.peek()
	switch {
	case t.kind == tokLParen:
		p.next()
		v := p.parseSetValue()
		p.expect(tokRParen)
		return v
	case t.kind == tokValue:
		return constExpr{p.parseValueRef()}
	case t.kind == tokIdent && p.peekAt(1).kind == tokLParen:
		p.next()
		p.next()
		switch t.text {
		case "if_not_exists":
			if !p.atPathStart() {
				p.syntaxError()
			}
			path := p.parsePath()
			p.expect(tokComma)
			fallback := p.parseUpdateOperand()
			p.expect(tokRParen)
			return ifNotExistsExpr{path: path, fallback: fallback}
		case "list_append":
			a := p.parseUpdateOperand()
			p.expect(tokComma)
			b := p.parseUpdateOperand()
			p.expect(tokRParen)
			p.checkOperandType("list_append", a, typeL)
			p.checkOperandType("list_append", b, typeL)
			return listAppendExpr{a: a, b: b}
		}
		if _, ok := conditionFunctions[t.text]; ok || t.text == "size" {
			p.semantic("The function is not allowed in an update expression; function: %s", t.text)
		} else {
			p.semantic("Invalid function name; function: %s", t.text)
		}
		// Skip the arguments so a later syntax error is still found.
		depth := 1
		for depth > 0 && p.peek().kind != tokEOF {
			switch p.next().kind {
			case tokLParen:
				depth++
			case tokRParen:
				depth--
			}
		}
		if depth > 0 {
			p.syntaxError()
		}
		return constExpr{}
	case t.kind == tokIdent || t.kind == tokName:
		return pathExpr{p.parsePath()}
	}
	p.syntaxError()
	return nil
}

type constExpr struct{ v types.AttributeValue }

func (e constExpr) eval(map[string]types.AttributeValue) (types.AttributeValue, error) {
	if e.v == nil {
		return nil, errorf(msgMissingOperand)
	}
	return e.v, nil
}

type pathExpr struct{ path docPath }

func (e pathExpr) eval(item map[string]types.AttributeValue) (types.AttributeValue, error) {
	v, ok := e.path.get(item)
	if !ok {
		return nil, errorf(msgMissingOperand)
	}
	return v, nil
}

type ifNotExistsExpr struct {
	path     docPath
	fallback valueExpr
}

func (e ifNotExistsExpr) eval(item map[string]types.AttributeValue) (types.AttributeValue, error) {
	if v, ok := e.path.get(item); ok {
		return v, nil
	}
	return e.fallback.eval(item)
}

type listAppendExpr struct{ a, b valueExpr }

func (e listAppendExpr) eval(item map[string]types.AttributeValue) (types.AttributeValue, error) {
	a, err := e.a.eval(item)
	if err != nil {
		return nil, err
	}
	b, err := e.b.eval(item)
	if err != nil {
		return nil, err
	}
	la, ok1 := a.(*types.AttributeValueMemberL)
	lb, ok2 := b.(*types.AttributeValueMemberL)
	if !ok1 || !ok2 {
		return nil, errorf(msgIncorrectOperand)
	}
	out := make([]types.AttributeValue, 0, len(la.Value)+len(lb.Value))
	out = append(out, la.Value...)
	out = append(out, lb.Value...)
	return &types.AttributeValueMemberL{Value: out}, nil
}

type arithExpr struct {
	subtract bool
	a, b     valueExpr
}

func (e arithExpr) eval(item map[string]types.AttributeValue) (types.AttributeValue, error) {
	a, err := e.a.eval(item)
	if err != nil {
		return nil, err
	}
	b, err := e.b.eval(item)
	if err != nil {
		return nil, err
	}
	na, ok1 := a.(*types.AttributeValueMemberN)
	nb, ok2 := b.(*types.AttributeValueMemberN)
	if !ok1 || !ok2 {
		return nil, errorf(msgIncorrectOperand)
	}
	s, err := addNumbers(na.Value, nb.Value, e.subtract)
	if err != nil {
		return nil, err
	}
	return &types.AttributeValueMemberN{Value: s}, nil
}

// OnlyRemoves reports whether the update only takes attributes or set
// elements away (REMOVE and DELETE actions, no SET or ADD). On an absent item
// such an update writes nothing: DynamoDB does not create an item that only
// a removal named.
func (up *Update) OnlyRemoves() bool {
	return len(up.sets) == 0 && len(up.adds) == 0
}

// TopLevelAttributes returns the top-level attribute names the update
// touches, each once, in expression order: what ReturnValues UPDATED_OLD and
// UPDATED_NEW report, and what a key-modification check must look at.
func (up *Update) TopLevelAttributes() []string {
	var names []string
	seen := map[string]bool{}
	for _, p := range up.paths {
		if !seen[p[0].name] {
			seen[p[0].name] = true
			names = append(names, p[0].name)
		}
	}
	return names
}

// target is a resolved place in the item being updated: a key of a map (the
// item itself at top level) or an index of a list.
type target struct {
	m       map[string]types.AttributeValue
	l       *types.AttributeValueMemberL
	name    string
	index   int
	origLen int
}

func (t target) get() (types.AttributeValue, bool) {
	if t.l != nil {
		if t.index < len(t.l.Value) {
			return t.l.Value[t.index], true
		}
		return nil, false
	}
	v, ok := t.m[t.name]
	return v, ok && v != nil
}

// set stores v; the caller has made sure a list index is in range.
func (t target) set(v types.AttributeValue) {
	if t.l != nil {
		t.l.Value[t.index] = v
		return
	}
	t.m[t.name] = v
}

// resolve finds the container of path's last element in item. A missing or
// mistyped parent is DynamoDB's "document path ... invalid for update", for
// SET (github.com/ExtendDB/extenddb issue #78, checked against DynamoDB) and
// for REMOVE too, while REMOVE of a missing key in an existing map or of an
// index past the end of a list does nothing (github.com/scylladb/scylladb
// issue #10043, checked against DynamoDB). ADD and DELETE take nested paths
// as well: the API reference says "top-level only", but DynamoDB accepts
// "ADD a.b :n" (github.com/floci-io/floci issue #1756).
func resolve(item map[string]types.AttributeValue, path docPath) (target, error) {
	parent := types.AttributeValue(&types.AttributeValueMemberM{Value: item})
	for _, e := range path[:len(path)-1] {
		next, ok := step(parent, e)
		if !ok {
			return target{}, errorf(msgInvalidPath)
		}
		parent = next
	}
	last := path[len(path)-1]
	if last.isIndex {
		l, ok := parent.(*types.AttributeValueMemberL)
		if !ok {
			return target{}, errorf(msgInvalidPath)
		}
		return target{l: l, index: last.index, origLen: len(l.Value)}, nil
	}
	m, ok := parent.(*types.AttributeValueMemberM)
	if !ok {
		return target{}, errorf(msgInvalidPath)
	}
	if m.Value == nil {
		m.Value = map[string]types.AttributeValue{}
	}
	return target{m: m.Value, name: last.name}, nil
}

// Apply applies the update to item and returns a new item; item is never
// modified and may be nil or empty (UpdateItem creating an item).
//
// Every action reads the item as it was before the update (Developer Guide,
// "Using update expressions": actions are not applied left to right), so all
// right-hand sides are evaluated and all targets resolved before anything is
// changed. List indexes name positions in the original list: SET beyond the
// end appends (several appends in index order), REMOVE shifts later elements
// down, and several REMOVEs on one list all refer to original positions.
func (up *Update) Apply(item map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	values := make([]types.AttributeValue, len(up.sets))
	for i, s := range up.sets {
		v, err := s.value.eval(item)
		if err != nil {
			return nil, err
		}
		values[i] = CopyValue(v)
	}
	out := CopyItem(item)
	if out == nil {
		out = map[string]types.AttributeValue{}
	}

	setTargets := make([]target, len(up.sets))
	for i, s := range up.sets {
		t, err := resolve(out, s.path)
		if err != nil {
			return nil, err
		}
		setTargets[i] = t
	}
	var removeTargets []target
	for _, path := range up.removes {
		t, err := resolve(out, path)
		if err != nil {
			return nil, err
		}
		removeTargets = append(removeTargets, t)
	}
	addTargets := make([]target, len(up.adds))
	for i, a := range up.adds {
		t, err := resolve(out, a.path)
		if err != nil {
			return nil, err
		}
		addTargets[i] = t
	}
	deleteTargets := make([]target, len(up.deletes))
	for i, d := range up.deletes {
		t, err := resolve(out, d.path)
		if err != nil {
			return nil, err
		}
		deleteTargets[i] = t
	}

	// ADD and DELETE compute from the current value, which no other action
	// touches (paths never overlap), so it is still the original one.
	addValues := make([]types.AttributeValue, len(up.adds))
	for i, a := range up.adds {
		cur, exists := addTargets[i].get()
		v, err := applyAdd(cur, exists, a.value)
		if err != nil {
			return nil, err
		}
		addValues[i] = v
	}
	deleteValues := make([]types.AttributeValue, len(up.deletes))
	for i, d := range up.deletes {
		cur, exists := deleteTargets[i].get()
		v, err := applyDelete(cur, exists, d.value)
		if err != nil {
			return nil, err
		}
		deleteValues[i] = v
	}

	type pendingAppend struct {
		l     *types.AttributeValueMemberL
		index int
		v     types.AttributeValue
	}
	var appends []pendingAppend
	for i, t := range setTargets {
		if t.l != nil && t.index >= t.origLen {
			appends = append(appends, pendingAppend{t.l, t.index, values[i]})
			continue
		}
		t.set(values[i])
	}
	for i, t := range addTargets {
		if t.l != nil && t.index >= t.origLen {
			appends = append(appends, pendingAppend{t.l, t.index, addValues[i]})
			continue
		}
		t.set(addValues[i])
	}
	for i, t := range deleteTargets {
		switch {
		case deleteValues[i] == nil:
			if _, exists := t.get(); exists {
				removeTargets = append(removeTargets, t)
			}
		default:
			t.set(deleteValues[i])
		}
	}
	sort.SliceStable(appends, func(i, j int) bool { return appends[i].index < appends[j].index })
	for _, a := range appends {
		a.l.Value = append(a.l.Value, a.v)
	}

	// Remove list elements from the highest original index down so earlier
	// removals do not shift later ones.
	removed := map[*types.AttributeValueMemberL]map[int]bool{}
	var listRemovals []target
	for _, t := range removeTargets {
		if t.l == nil {
			delete(t.m, t.name)
			continue
		}
		if t.index >= t.origLen || removed[t.l][t.index] {
			continue
		}
		if removed[t.l] == nil {
			removed[t.l] = map[int]bool{}
		}
		removed[t.l][t.index] = true
		listRemovals = append(listRemovals, t)
	}
	sort.SliceStable(listRemovals, func(i, j int) bool { return listRemovals[i].index > listRemovals[j].index })
	for _, t := range listRemovals {
		t.l.Value = append(t.l.Value[:t.index:t.index], t.l.Value[t.index+1:]...)
	}
	return out, nil
}

// applyAdd implements ADD: numbers add (a missing attribute counts as 0),
// sets take the union; anything else is an incorrect data type.
func applyAdd(cur types.AttributeValue, exists bool, v types.AttributeValue) (types.AttributeValue, error) {
	v = CopyValue(v) // the result must not alias the request's values
	if !exists {
		if n, ok := v.(*types.AttributeValueMemberN); ok {
			s, err := addNumbers("0", n.Value, false)
			if err != nil {
				return nil, err
			}
			return &types.AttributeValueMemberN{Value: s}, nil
		}
		return v, nil
	}
	switch c := cur.(type) {
	case *types.AttributeValueMemberN:
		n, ok := v.(*types.AttributeValueMemberN)
		if !ok {
			break
		}
		s, err := addNumbers(c.Value, n.Value, false)
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberN{Value: s}, nil
	case *types.AttributeValueMemberSS:
		n, ok := v.(*types.AttributeValueMemberSS)
		if !ok {
			break
		}
		return &types.AttributeValueMemberSS{Value: union(c.Value, n.Value, func(p, q string) bool { return p == q })}, nil
	case *types.AttributeValueMemberNS:
		n, ok := v.(*types.AttributeValueMemberNS)
		if !ok {
			break
		}
		return &types.AttributeValueMemberNS{Value: union(c.Value, n.Value, numbersEqual)}, nil
	case *types.AttributeValueMemberBS:
		n, ok := v.(*types.AttributeValueMemberBS)
		if !ok {
			break
		}
		return &types.AttributeValueMemberBS{Value: union(c.Value, n.Value, bytesEqual)}, nil
	}
	return nil, errorf(msgIncorrectOperand)
}

// applyDelete implements DELETE: set difference. It returns nil when the
// attribute should be removed (missing, or no elements left).
func applyDelete(cur types.AttributeValue, exists bool, v types.AttributeValue) (types.AttributeValue, error) {
	if !exists {
		return nil, nil
	}
	switch c := cur.(type) {
	case *types.AttributeValueMemberSS:
		n, ok := v.(*types.AttributeValueMemberSS)
		if !ok {
			break
		}
		if d := difference(c.Value, n.Value, func(p, q string) bool { return p == q }); len(d) > 0 {
			return &types.AttributeValueMemberSS{Value: d}, nil
		}
		return nil, nil
	case *types.AttributeValueMemberNS:
		n, ok := v.(*types.AttributeValueMemberNS)
		if !ok {
			break
		}
		if d := difference(c.Value, n.Value, numbersEqual); len(d) > 0 {
			return &types.AttributeValueMemberNS{Value: d}, nil
		}
		return nil, nil
	case *types.AttributeValueMemberBS:
		n, ok := v.(*types.AttributeValueMemberBS)
		if !ok {
			break
		}
		if d := difference(c.Value, n.Value, bytesEqual); len(d) > 0 {
			return &types.AttributeValueMemberBS{Value: d}, nil
		}
		return nil, nil
	}
	return nil, errorf(msgIncorrectOperand)
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

func union[T any](a, b []T, eq func(T, T) bool) []T {
	out := append([]T(nil), a...)
	for _, x := range b {
		if !setContains(out, x, eq) {
			out = append(out, x)
		}
	}
	return out
}

func difference[T any](a, b []T, eq func(T, T) bool) []T {
	var out []T
	for _, x := range a {
		if !setContains(b, x, eq) {
			out = append(out, x)
		}
	}
	return out
}

// UpdatedAttributes returns the parts of item that the update's target paths
// select, nested as in the item: what ReturnValues UPDATED_OLD (given the old
// item) and UPDATED_NEW (given the new item) return. DynamoDB returns only
// the updated paths, so "SET a.b = :v" yields {a: {b: ...}}, not all of a.
func (up *Update) UpdatedAttributes(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	pr := &Projection{paths: up.paths, root: projectionTree(up.paths)}
	return pr.Apply(item)
}
