package ddblocal

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/ddblocal/expr"
)

// The legacy parameters (KeyConditions, QueryFilter, ScanFilter,
// AttributesToGet, Expected, AttributeUpdates, ConditionalOperator), from
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/LegacyConditionalParameters.html
// and the API reference's Condition, ExpectedAttributeValue and
// AttributeValueUpdate. Each request is validated with the legacy rules and
// messages, then rewritten into the expression it means (with placeholder
// names and values of its own), so both forms share one evaluator: a legacy
// comparison with a missing attribute or a value of another type is false,
// as an expression comparison is.

// legacyFlags says which legacy parameters a request used, where an error
// message depends on it.
type legacyFlags struct {
	queryFilter bool
	updates     bool
}

// placeholders allocates expression names and values for a rewritten
// request, never clashing with the request's own.
type placeholders struct {
	names  map[string]string
	values map[string]types.AttributeValue
	n      int
}

func newPlaceholders(names map[string]string, values map[string]types.AttributeValue) *placeholders {
	p := &placeholders{names: map[string]string{}, values: map[string]types.AttributeValue{}}
	for k, v := range names {
		p.names[k] = v
	}
	for k, v := range values {
		p.values[k] = v
	}
	return p
}

func (p *placeholders) name(attr string) string {
	for {
		p.n++
		k := fmt.Sprintf("#legacy%d", p.n)
		if _, taken := p.names[k]; !taken {
			p.names[k] = attr
			return k
		}
	}
}

func (p *placeholders) value(v types.AttributeValue) string {
	for {
		p.n++
		k := fmt.Sprintf(":legacy%d", p.n)
		if _, taken := p.values[k]; !taken {
			p.values[k] = v
			return k
		}
	}
}

func (p *placeholders) nameMap() map[string]string {
	if len(p.names) == 0 {
		return nil
	}
	return p.names
}

func (p *placeholders) valueMap() map[string]types.AttributeValue {
	if len(p.values) == 0 {
		return nil
	}
	return p.values
}

// param is one request parameter, named as the messages name it.
type param struct {
	name    string
	present bool
}

// checkExpressionMix refuses what DynamoDB refuses before it looks at
// either form: legacy and expression parameters together, and expression
// names or values without an expression. valueExprs are the expressions
// that can use values.
func checkExpressionMix(exprs, legacy []param, hasNames, hasValues bool, valueExprs []string) error {
	var usedExprs, usedLegacy []string
	for _, e := range exprs {
		if e.present {
			usedExprs = append(usedExprs, e.name)
		}
	}
	for _, l := range legacy {
		if l.present {
			usedLegacy = append(usedLegacy, l.name)
		}
	}
	if len(usedExprs) > 0 && len(usedLegacy) > 0 {
		return validationError("Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {%s} Expression parameters: {%s}",
			strings.Join(usedLegacy, ", "), strings.Join(usedExprs, ", "))
	}
	if hasNames && len(usedExprs) == 0 {
		return validationError("ExpressionAttributeNames can only be specified when using expressions")
	}
	if hasValues && len(valueExprs) > 0 {
		used := false
		for _, e := range exprs {
			for _, v := range valueExprs {
				if e.name == v && e.present {
					used = true
				}
			}
		}
		if !used {
			verb := "is"
			if len(valueExprs) > 1 {
				verb = "are"
			}
			return validationError("ExpressionAttributeValues can only be specified when using expressions: %s %s null", strings.Join(valueExprs, " and "), verb)
		}
	}
	return nil
}

// operand counts and value types each comparison operator takes.
var (
	legacyArgCount = map[types.ComparisonOperator][2]int{
		types.ComparisonOperatorEq: {1, 1}, types.ComparisonOperatorNe: {1, 1},
		types.ComparisonOperatorLe: {1, 1}, types.ComparisonOperatorLt: {1, 1},
		types.ComparisonOperatorGe: {1, 1}, types.ComparisonOperatorGt: {1, 1},
		types.ComparisonOperatorContains: {1, 1}, types.ComparisonOperatorNotContains: {1, 1},
		types.ComparisonOperatorBeginsWith: {1, 1},
		types.ComparisonOperatorNull:       {0, 0}, types.ComparisonOperatorNotNull: {0, 0},
		types.ComparisonOperatorIn: {1, 1 << 30}, types.ComparisonOperatorBetween: {2, 2},
	}
	scalarTypes    = []string{"S", "N", "B"}
	legacyArgTypes = map[types.ComparisonOperator][]string{
		// EQ and NE take a value of any type (lists, maps and booleans
		// too, though the API reference names only scalars and sets:
		// ScyllaDB's Alternator suite, test_query_filter_eq/_ne, recorded
		// against DynamoDB).
		types.ComparisonOperatorLe: scalarTypes, types.ComparisonOperatorLt: scalarTypes,
		types.ComparisonOperatorGe: scalarTypes, types.ComparisonOperatorGt: scalarTypes,
		types.ComparisonOperatorContains: scalarTypes, types.ComparisonOperatorNotContains: scalarTypes,
		types.ComparisonOperatorBeginsWith: {"S", "B"},
		types.ComparisonOperatorIn:         scalarTypes, types.ComparisonOperatorBetween: scalarTypes,
	}
)

const msgComparisonOperators = "[IN, NULL, BETWEEN, LT, NOT_CONTAINS, EQ, GT, NOT_NULL, NE, LE, BEGINS_WITH, GE, CONTAINS]"

// checkLegacyValue validates one AttributeValue of a legacy parameter.
func checkLegacyValue(v types.AttributeValue) error {
	if v == nil {
		return validationError("Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
	}
	return asValidation(expr.ValidateValue(v))
}

// checkCondition validates one Condition (or an ExpectedAttributeValue
// with a ComparisonOperator) of attribute attr in parameter field.
func checkCondition(field, attr string, op types.ComparisonOperator, vals []types.AttributeValue) error {
	counts, known := legacyArgCount[op]
	if !known {
		if op == "" {
			return validationError("1 validation error detected: Value null at '%s.%s.member.comparisonOperator' failed to satisfy constraint: Member must not be null", field, attr)
		}
		return validationError("1 validation error detected: Value '%s' at '%s.%s.member.comparisonOperator' failed to satisfy constraint: Member must satisfy enum value set: %s", op, field, attr, msgComparisonOperators)
	}
	for _, v := range vals {
		if err := checkLegacyValue(v); err != nil {
			return err
		}
	}
	if len(vals) < counts[0] || len(vals) > counts[1] {
		return validationError("One or more parameter values were invalid: Invalid number of argument(s) for the %s ComparisonOperator", op)
	}
	if len(vals) > 0 {
		first := expr.TypeCode(vals[0])
		for _, v := range vals[1:] {
			if expr.TypeCode(v) != first {
				return validationError("One or more parameter values were invalid: AttributeValues inside AttributeValueList must be of same type")
			}
		}
	}
	if allowed := legacyArgTypes[op]; allowed != nil {
		for _, v := range vals {
			tc := expr.TypeCode(v)
			ok := false
			for _, a := range allowed {
				ok = ok || a == tc
			}
			if !ok {
				return validationError("One or more parameter values were invalid: ComparisonOperator %s is not valid for %s AttributeValue type", op, tc)
			}
		}
	}
	if op == types.ComparisonOperatorBetween {
		if c, ok := expr.Compare(vals[0], vals[1]); ok && c > 0 {
			return validationError("The BETWEEN condition was provided a range where the lower bound is greater than the upper bound")
		}
	}
	return nil
}

// conditionExpr renders one comparison as an expression.
func (p *placeholders) conditionExpr(attr string, op types.ComparisonOperator, vals []types.AttributeValue) string {
	a := p.name(attr)
	v := func(i int) string { return p.value(vals[i]) }
	switch op {
	case types.ComparisonOperatorEq:
		return a + " = " + v(0)
	case types.ComparisonOperatorNe:
		return a + " <> " + v(0)
	case types.ComparisonOperatorLe:
		return a + " <= " + v(0)
	case types.ComparisonOperatorLt:
		return a + " < " + v(0)
	case types.ComparisonOperatorGe:
		return a + " >= " + v(0)
	case types.ComparisonOperatorGt:
		return a + " > " + v(0)
	case types.ComparisonOperatorNotNull:
		return "attribute_exists(" + a + ")"
	case types.ComparisonOperatorNull:
		return "attribute_not_exists(" + a + ")"
	case types.ComparisonOperatorContains:
		return "contains(" + a + ", " + v(0) + ")"
	case types.ComparisonOperatorNotContains:
		// A missing attribute fails NOT_CONTAINS as it fails CONTAINS
		// (unlike NE; ScyllaDB's Alternator suite,
		// test_update_expected_1_not_contains, recorded against DynamoDB).
		return "attribute_exists(" + a + ") AND NOT contains(" + a + ", " + v(0) + ")"
	case types.ComparisonOperatorBeginsWith:
		return "begins_with(" + a + ", " + v(0) + ")"
	case types.ComparisonOperatorIn:
		list := make([]string, len(vals))
		for i := range vals {
			list[i] = v(i)
		}
		return a + " IN (" + strings.Join(list, ", ") + ")"
	default: // BETWEEN
		return a + " BETWEEN " + v(0) + " AND " + v(1)
	}
}

func joinConditions(parts []string, op types.ConditionalOperator) string {
	sep := " AND "
	if op == types.ConditionalOperatorOr {
		sep = " OR "
	}
	for i, c := range parts {
		parts[i] = "(" + c + ")"
	}
	return strings.Join(parts, sep)
}

func checkConditionalOperator(op types.ConditionalOperator) error {
	switch op {
	case "", types.ConditionalOperatorAnd, types.ConditionalOperatorOr:
		return nil
	}
	return validationError("1 validation error detected: Value '%s' at 'conditionalOperator' failed to satisfy constraint: Member must satisfy enum value set: [OR, AND]", op)
}

// checkConditionalOperatorUse: DynamoDB refuses a ConditionalOperator
// unless the Expected, QueryFilter or ScanFilter beside it has two or more
// conditions (messages as recorded against DynamoDB by ExtendDB's
// dual-target suite; ScyllaDB's Alternator suite, test_update_expected_empty
// and test_conditional_operator_expected_missing, checks the refusal).
func checkConditionalOperatorUse(op types.ConditionalOperator, conditions int) error {
	switch {
	case op == "":
		return nil
	case conditions == 0:
		return validationError("ConditionalOperator cannot be used without Filter or Expected")
	case conditions == 1:
		return validationError("ConditionalOperator can only be used when Filter or Expected has two or more elements")
	}
	return nil
}

// filterExpr validates a QueryFilter or ScanFilter and renders it.
func (p *placeholders) filterExpr(field string, conds map[string]types.Condition, op types.ConditionalOperator) (string, error) {
	var parts []string
	for _, attr := range sortedKeys(conds) {
		c := conds[attr]
		if err := checkCondition(field, attr, c.ComparisonOperator, c.AttributeValueList); err != nil {
			return "", err
		}
		parts = append(parts, p.conditionExpr(attr, c.ComparisonOperator, c.AttributeValueList))
	}
	return joinConditions(parts, op), nil
}

// expectedExpr validates Expected and renders it as a condition.
func (p *placeholders) expectedExpr(exp map[string]types.ExpectedAttributeValue, op types.ConditionalOperator) (string, error) {
	var parts []string
	for _, attr := range sortedKeys(exp) {
		e := exp[attr]
		if e.AttributeValueList != nil && e.Value != nil {
			return "", validationError("One or more parameter values were invalid: Value and AttributeValueList cannot be used together for Attribute: %s", attr)
		}
		if e.ComparisonOperator != "" {
			if e.Exists != nil {
				return "", validationError("One or more parameter values were invalid: Exists and ComparisonOperator cannot be used together for Attribute: %s", attr)
			}
			vals := e.AttributeValueList
			if e.Value != nil {
				vals = []types.AttributeValue{e.Value}
			}
			if e.ComparisonOperator != types.ComparisonOperatorNull && e.ComparisonOperator != types.ComparisonOperatorNotNull && len(vals) == 0 {
				if _, known := legacyArgCount[e.ComparisonOperator]; known {
					return "", validationError("One or more parameter values were invalid: Value or AttributeValueList must be used with ComparisonOperator: %s for Attribute: %s", e.ComparisonOperator, attr)
				}
			}
			if err := checkCondition("expected", attr, e.ComparisonOperator, vals); err != nil {
				return "", err
			}
			parts = append(parts, p.conditionExpr(attr, e.ComparisonOperator, vals))
			continue
		}
		if e.AttributeValueList != nil {
			return "", validationError("One or more parameter values were invalid: AttributeValueList can only be used with a ComparisonOperator for Attribute: %s", attr)
		}
		exists := e.Exists == nil || *e.Exists
		switch {
		case exists && e.Value == nil:
			state := "null"
			if e.Exists != nil {
				state = "true"
			}
			return "", validationError("One or more parameter values were invalid: Value must be provided when Exists is %s for Attribute: %s", state, attr)
		case !exists && e.Value != nil:
			return "", validationError("One or more parameter values were invalid: Value cannot be used when Exists is false for Attribute: %s", attr)
		case !exists:
			parts = append(parts, "attribute_not_exists("+p.name(attr)+")")
		default:
			if err := checkLegacyValue(e.Value); err != nil {
				return "", err
			}
			parts = append(parts, p.name(attr)+" = "+p.value(e.Value))
		}
	}
	return joinConditions(parts, op), nil
}

// projectionExpr validates AttributesToGet and renders it.
func (p *placeholders) projectionExpr(attrs []string) (string, error) {
	if len(attrs) > 255 {
		return "", validationError("1 validation error detected: Value '%v' at 'attributesToGet' failed to satisfy constraint: Member must have length less than or equal to 255", attrs)
	}
	seen := map[string]bool{}
	parts := make([]string, len(attrs))
	for i, a := range attrs {
		if seen[a] {
			return "", validationError("One or more parameter values were invalid: Duplicate value in attribute name: %s", a)
		}
		seen[a] = true
		parts[i] = p.name(a)
	}
	return strings.Join(parts, ", "), nil
}

// checkSelectWithAttributes refuses a Select that contradicts
// AttributesToGet.
func checkSelectWithAttributes(sel types.Select) error {
	switch sel {
	case types.SelectAllAttributes:
		return validationError("Cannot specify the AttributesToGet when choosing to get ALL_ATTRIBUTES")
	case types.SelectAllProjectedAttributes:
		return validationError("Cannot specify the AttributesToGet when choosing to get ALL_PROJECTED_ATTRIBUTES")
	case types.SelectCount:
		return validationError("Cannot specify the AttributesToGet when choosing to get only the COUNT")
	}
	return nil
}

// updatesExpr validates AttributeUpdates and renders them as an update
// expression.
func (p *placeholders) updatesExpr(ups map[string]types.AttributeValueUpdate) (string, error) {
	var set, remove, add, del []string
	for _, attr := range sortedKeys(ups) {
		u := ups[attr]
		if u.Value != nil {
			if err := checkLegacyValue(u.Value); err != nil {
				return "", err
			}
		}
		switch u.Action {
		case "", types.AttributeActionPut, types.AttributeActionAdd, types.AttributeActionDelete:
		default:
			return "", validationError("1 validation error detected: Value '%s' at 'attributeUpdates.%s.member.action' failed to satisfy constraint: Member must satisfy enum value set: [ADD, PUT, DELETE]", u.Action, attr)
		}
		if u.Value == nil && u.Action != types.AttributeActionDelete {
			return "", validationError("One or more parameter values were invalid: Only DELETE action is allowed when no attribute value is specified")
		}
		tc := ""
		if u.Value != nil {
			tc = expr.TypeCode(u.Value)
		}
		switch u.Action {
		case types.AttributeActionDelete:
			if u.Value == nil {
				remove = append(remove, p.name(attr))
				continue
			}
			if tc != "SS" && tc != "NS" && tc != "BS" {
				return "", validationError("One or more parameter values were invalid: DELETE action with value is not supported for the type %s", tc)
			}
			del = append(del, p.name(attr)+" "+p.value(u.Value))
		case types.AttributeActionAdd:
			switch tc {
			case "N", "SS", "NS", "BS":
				add = append(add, p.name(attr)+" "+p.value(u.Value))
			case "L":
				// ADD of a list appends to the list (or makes it).
				a := p.name(attr)
				set = append(set, a+" = list_append(if_not_exists("+a+", "+p.value(&types.AttributeValueMemberL{Value: []types.AttributeValue{}})+"), "+p.value(u.Value)+")")
			default:
				return "", validationError("One or more parameter values were invalid: ADD action is not supported for the type %s", tc)
			}
		default:
			set = append(set, p.name(attr)+" = "+p.value(u.Value))
		}
	}
	var b strings.Builder
	for _, c := range []struct {
		verb  string
		parts []string
	}{{"SET", set}, {"REMOVE", remove}, {"ADD", add}, {"DELETE", del}} {
		if len(c.parts) > 0 {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(c.verb + " " + strings.Join(c.parts, ", "))
		}
	}
	return b.String(), nil
}

// legacyUpdateError turns the expression evaluator's type error into the
// message a legacy AttributeUpdates gets.
func legacyUpdateError(err error, flags legacyFlags) error {
	if err == nil || !flags.updates {
		return err
	}
	if strings.Contains(validationMessage(err), "An operand in the update expression has an incorrect data type") {
		return validationError("Type mismatch for attribute to update")
	}
	return err
}

func strPtr(s string) *string { return &s }

// legacyGetItem rewrites a GetItem's AttributesToGet.
func legacyGetItem(in *dynamodb.GetItemInput) (*dynamodb.GetItemInput, error) {
	if err := checkExpressionMix(
		[]param{{"ProjectionExpression", in.ProjectionExpression != nil}},
		[]param{{"AttributesToGet", in.AttributesToGet != nil}},
		in.ExpressionAttributeNames != nil, false, nil); err != nil {
		return nil, err
	}
	if in.AttributesToGet == nil {
		return in, nil
	}
	p := newPlaceholders(nil, nil)
	proj, err := p.projectionExpr(in.AttributesToGet)
	if err != nil {
		return nil, err
	}
	cp := *in
	cp.AttributesToGet, cp.ProjectionExpression, cp.ExpressionAttributeNames = nil, strPtr(proj), p.nameMap()
	return &cp, nil
}

// legacyKeysAndAttributes rewrites one table's part of a BatchGetItem.
func legacyKeysAndAttributes(ka types.KeysAndAttributes) (types.KeysAndAttributes, error) {
	if err := checkExpressionMix(
		[]param{{"ProjectionExpression", ka.ProjectionExpression != nil}},
		[]param{{"AttributesToGet", ka.AttributesToGet != nil}},
		ka.ExpressionAttributeNames != nil, false, nil); err != nil {
		return ka, err
	}
	if ka.AttributesToGet == nil {
		return ka, nil
	}
	p := newPlaceholders(nil, nil)
	proj, err := p.projectionExpr(ka.AttributesToGet)
	if err != nil {
		return ka, err
	}
	ka.AttributesToGet, ka.ProjectionExpression, ka.ExpressionAttributeNames = nil, strPtr(proj), p.nameMap()
	return ka, nil
}

// legacyCondition rewrites Expected (with ConditionalOperator) into a
// ConditionExpression, for PutItem, DeleteItem and UpdateItem.
func legacyCondition(cond *string, exp map[string]types.ExpectedAttributeValue, op types.ConditionalOperator, p *placeholders) (*string, error) {
	if err := checkConditionalOperator(op); err != nil {
		return nil, err
	}
	if err := checkConditionalOperatorUse(op, len(exp)); err != nil {
		return nil, err
	}
	if exp == nil {
		return cond, nil
	}
	c, err := p.expectedExpr(exp, op)
	if err != nil {
		return nil, err
	}
	if c == "" {
		return cond, nil
	}
	return strPtr(c), nil
}

// legacyGuard is what a PutItem or DeleteItem says about its condition:
// either a ConditionExpression or the legacy Expected (with its
// ConditionalOperator), with the expression attribute maps.
type legacyGuard struct {
	cond     *string
	expected map[string]types.ExpectedAttributeValue
	op       types.ConditionalOperator
	names    map[string]string
	values   map[string]types.AttributeValue
}

// rewrite checks the guard's mix of parameters and, when it uses the legacy
// ones, turns them into a ConditionExpression with its own attribute maps
// (ok false: nothing to rewrite).
func (g legacyGuard) rewrite() (out legacyGuard, ok bool, err error) {
	if err := checkExpressionMix(
		[]param{{"ConditionExpression", g.cond != nil}},
		[]param{{"Expected", g.expected != nil}, {"ConditionalOperator", g.op != ""}},
		g.names != nil, g.values != nil, []string{"ConditionExpression"}); err != nil {
		return g, false, err
	}
	if g.expected == nil && g.op == "" {
		return g, false, nil
	}
	p := newPlaceholders(nil, nil)
	cond, err := legacyCondition(g.cond, g.expected, g.op, p)
	if err != nil {
		return g, false, err
	}
	return legacyGuard{cond: cond, names: p.nameMap(), values: p.valueMap()}, true, nil
}

func legacyPutItem(in *dynamodb.PutItemInput) (*dynamodb.PutItemInput, error) {
	g, ok, err := legacyGuard{in.ConditionExpression, in.Expected, in.ConditionalOperator, in.ExpressionAttributeNames, in.ExpressionAttributeValues}.rewrite()
	if err != nil || !ok {
		return in, err
	}
	cp := *in
	cp.Expected, cp.ConditionalOperator, cp.ConditionExpression = nil, "", g.cond
	cp.ExpressionAttributeNames, cp.ExpressionAttributeValues = g.names, g.values
	return &cp, nil
}

func legacyDeleteItem(in *dynamodb.DeleteItemInput) (*dynamodb.DeleteItemInput, error) {
	g, ok, err := legacyGuard{in.ConditionExpression, in.Expected, in.ConditionalOperator, in.ExpressionAttributeNames, in.ExpressionAttributeValues}.rewrite()
	if err != nil || !ok {
		return in, err
	}
	cp := *in
	cp.Expected, cp.ConditionalOperator, cp.ConditionExpression = nil, "", g.cond
	cp.ExpressionAttributeNames, cp.ExpressionAttributeValues = g.names, g.values
	return &cp, nil
}

func legacyUpdateItem(in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemInput, legacyFlags, error) {
	var flags legacyFlags
	if err := checkExpressionMix(
		[]param{{"UpdateExpression", in.UpdateExpression != nil}, {"ConditionExpression", in.ConditionExpression != nil}},
		[]param{{"AttributeUpdates", in.AttributeUpdates != nil}, {"Expected", in.Expected != nil}, {"ConditionalOperator", in.ConditionalOperator != ""}},
		in.ExpressionAttributeNames != nil, in.ExpressionAttributeValues != nil, []string{"UpdateExpression", "ConditionExpression"}); err != nil {
		return nil, flags, err
	}
	if in.Expected == nil && in.ConditionalOperator == "" && in.AttributeUpdates == nil {
		return in, flags, nil
	}
	p := newPlaceholders(nil, nil)
	cp := *in
	if in.AttributeUpdates != nil {
		u, err := p.updatesExpr(in.AttributeUpdates)
		if err != nil {
			return nil, flags, err
		}
		if u != "" {
			cp.UpdateExpression = strPtr(u)
		}
		flags.updates = true
	}
	cond, err := legacyCondition(in.ConditionExpression, in.Expected, in.ConditionalOperator, p)
	if err != nil {
		return nil, flags, err
	}
	cp.AttributeUpdates, cp.Expected, cp.ConditionalOperator, cp.ConditionExpression = nil, nil, "", cond
	cp.ExpressionAttributeNames, cp.ExpressionAttributeValues = p.nameMap(), p.valueMap()
	return &cp, flags, nil
}

// legacyScan rewrites ScanFilter, ConditionalOperator and AttributesToGet.
func legacyScan(in *dynamodb.ScanInput) (*dynamodb.ScanInput, error) {
	if err := checkExpressionMix(
		[]param{{"ProjectionExpression", in.ProjectionExpression != nil}, {"FilterExpression", in.FilterExpression != nil}},
		[]param{{"AttributesToGet", in.AttributesToGet != nil}, {"ScanFilter", in.ScanFilter != nil}, {"ConditionalOperator", in.ConditionalOperator != ""}},
		in.ExpressionAttributeNames != nil, in.ExpressionAttributeValues != nil, []string{"FilterExpression"}); err != nil {
		return nil, err
	}
	if in.ScanFilter == nil && in.AttributesToGet == nil && in.ConditionalOperator == "" {
		return in, nil
	}
	if err := checkConditionalOperator(in.ConditionalOperator); err != nil {
		return nil, err
	}
	if err := checkConditionalOperatorUse(in.ConditionalOperator, len(in.ScanFilter)); err != nil {
		return nil, err
	}
	p := newPlaceholders(nil, nil)
	cp := *in
	cp.ScanFilter, cp.AttributesToGet, cp.ConditionalOperator = nil, nil, ""
	if in.ScanFilter != nil {
		f, err := p.filterExpr("scanFilter", in.ScanFilter, in.ConditionalOperator)
		if err != nil {
			return nil, err
		}
		if f != "" {
			cp.FilterExpression = strPtr(f)
		}
	}
	if in.AttributesToGet != nil {
		if err := checkSelectWithAttributes(in.Select); err != nil {
			return nil, err
		}
		proj, err := p.projectionExpr(in.AttributesToGet)
		if err != nil {
			return nil, err
		}
		cp.ProjectionExpression = strPtr(proj)
	}
	cp.ExpressionAttributeNames, cp.ExpressionAttributeValues = p.nameMap(), p.valueMap()
	return &cp, nil
}

// legacyQuery rewrites KeyConditions, QueryFilter, ConditionalOperator and
// AttributesToGet. KeyConditions may go with the other expressions (not
// with KeyConditionExpression), as DynamoDB allows.
func legacyQuery(in *dynamodb.QueryInput) (*dynamodb.QueryInput, legacyFlags, error) {
	var flags legacyFlags
	keyCondsAlone := in.KeyConditions != nil && in.KeyConditionExpression == nil
	if err := checkExpressionMix(
		[]param{{"ProjectionExpression", in.ProjectionExpression != nil}, {"FilterExpression", in.FilterExpression != nil}, {"KeyConditionExpression", in.KeyConditionExpression != nil}},
		[]param{{"AttributesToGet", in.AttributesToGet != nil}, {"QueryFilter", in.QueryFilter != nil}, {"ConditionalOperator", in.ConditionalOperator != ""}, {"KeyConditions", in.KeyConditions != nil && !keyCondsAlone}},
		in.ExpressionAttributeNames != nil, in.ExpressionAttributeValues != nil, []string{"FilterExpression", "KeyConditionExpression"}); err != nil {
		return nil, flags, err
	}
	if in.KeyConditions == nil && in.QueryFilter == nil && in.AttributesToGet == nil && in.ConditionalOperator == "" {
		return in, flags, nil
	}
	if err := checkConditionalOperator(in.ConditionalOperator); err != nil {
		return nil, flags, err
	}
	if err := checkConditionalOperatorUse(in.ConditionalOperator, len(in.QueryFilter)); err != nil {
		return nil, flags, err
	}
	p := newPlaceholders(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	cp := *in
	cp.KeyConditions, cp.QueryFilter, cp.AttributesToGet, cp.ConditionalOperator = nil, nil, nil, ""
	if in.QueryFilter != nil {
		f, err := p.filterExpr("queryFilter", in.QueryFilter, in.ConditionalOperator)
		if err != nil {
			return nil, flags, err
		}
		if f != "" {
			cp.FilterExpression = strPtr(f)
		}
		flags.queryFilter = true
	}
	if in.AttributesToGet != nil {
		if err := checkSelectWithAttributes(in.Select); err != nil {
			return nil, flags, err
		}
		proj, err := p.projectionExpr(in.AttributesToGet)
		if err != nil {
			return nil, flags, err
		}
		cp.ProjectionExpression = strPtr(proj)
	}
	if in.KeyConditions != nil {
		var parts []string
		for _, attr := range sortedKeys(in.KeyConditions) {
			c := in.KeyConditions[attr]
			if err := checkCondition("keyConditions", attr, c.ComparisonOperator, c.AttributeValueList); err != nil {
				return nil, flags, err
			}
			switch c.ComparisonOperator {
			case types.ComparisonOperatorNull, types.ComparisonOperatorNotNull, types.ComparisonOperatorContains,
				types.ComparisonOperatorNotContains, types.ComparisonOperatorIn:
				return nil, flags, validationError("Attempted conditional constraint is not an indexable operation")
			case types.ComparisonOperatorNe:
				return nil, flags, validationError("Query key condition not supported")
			}
			parts = append(parts, p.conditionExpr(attr, c.ComparisonOperator, c.AttributeValueList))
		}
		// More than two conditions are for an index with multi-attribute
		// keys (up to eight); the key schema check refuses them elsewhere.
		if len(parts) == 0 || len(parts) > 8 {
			return nil, flags, validationError("Conditions can be of length 1 or 2 only")
		}
		cp.KeyConditionExpression = strPtr(strings.Join(parts, " AND "))
	}
	cp.ExpressionAttributeNames, cp.ExpressionAttributeValues = p.nameMap(), p.valueMap()
	return &cp, flags, nil
}
