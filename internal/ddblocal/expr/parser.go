package expr

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Expression kinds, as DynamoDB names them in "Invalid <kind>: ..." messages.
const (
	kindCondition    = "ConditionExpression"
	kindFilter       = "FilterExpression"
	kindUpdate       = "UpdateExpression"
	kindProjection   = "ProjectionExpression"
	kindKeyCondition = "KeyConditionExpression"
)

// maxExpressionSize is DynamoDB's limit on the length of one expression
// (Developer Guide, "Service, account, and table quotas": 4 KB).
const maxExpressionSize = 4096

// maxListIndex bounds list indexes in paths; DynamoDB items are at most
// 400 KB, so no list can be longer, and the bound keeps arithmetic safe.
const maxListIndex = 1 << 20

// parseFailure carries a syntax error out of the recursive descent; it is
// recovered at the entry points and never escapes the package.
type parseFailure struct{ err *Error }

// parser is a recursive-descent parser shared by every expression kind.
// Syntax errors abort at once (DynamoDB reports the first one); semantic
// errors (undefined names or values, reserved words) are remembered and
// reported only when the whole expression parsed, which is the order in
// which DynamoDB reports them.
type parser struct {
	src    string
	kind   string
	toks   []token
	pos    int
	u      *Usage
	semErr *Error
}

func newParser(src, kind string, u *Usage) *parser {
	return &parser{src: src, kind: kind, toks: lex(src), u: u}
}

// run parses with fn, converting a parse failure into an error and
// preferring a syntax error to an earlier semantic one.
func (p *parser) run(fn func()) (err error) {
	if strings.TrimSpace(p.src) == "" {
		return errorf("Invalid %s: The expression can not be empty;", p.kind)
	}
	if len(p.src) > maxExpressionSize {
		return errorf("Invalid %s: Expression size has exceeded the maximum allowed size; expression size: %d", p.kind, len(p.src))
	}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(parseFailure)
			if !ok {
				panic(r)
			}
			err = f.err
		}
	}()
	fn()
	if p.peek().kind != tokEOF {
		p.syntaxError()
	}
	if p.semErr != nil {
		return p.semErr
	}
	return nil
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) peekAt(n int) token {
	if p.pos+n >= len(p.toks) {
		return p.toks[len(p.toks)-1]
	}
	return p.toks[p.pos+n]
}

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tokEOF {
		p.pos++
	}
	return t
}

// isKeyword reports whether the next token is the given keyword; keywords
// are case-insensitive in DynamoDB expressions.
func (p *parser) isKeyword(kw string) bool {
	t := p.peek()
	return t.kind == tokIdent && strings.EqualFold(t.text, kw)
}

func (p *parser) expect(kind tokenKind) token {
	if p.peek().kind != kind {
		p.syntaxError()
	}
	return p.next()
}

// syntaxError aborts with DynamoDB's syntax error for the next token, e.g.
// `Invalid UpdateExpression: Syntax error; token: "x", near: "a x b"`; near
// spans the previous token, the offending one and the one after.
func (p *parser) syntaxError() {
	t := p.peek()
	start := t.start
	if p.pos > 0 {
		start = p.toks[p.pos-1].start
	}
	end := t.end
	if t.kind != tokEOF {
		end = p.peekAt(1).end
	}
	panic(parseFailure{errorf("Invalid %s: Syntax error; token: \"%s\", near: \"%s\"", p.kind, t.text, p.src[start:end])})
}

// fail aborts with a non-syntax error that DynamoDB reports at once.
func (p *parser) fail(format string, args ...any) {
	panic(parseFailure{errorf("Invalid "+p.kind+": "+format, args...)})
}

// failRaw aborts with an error whose message DynamoDB gives without the
// "Invalid <kind>:" prefix.
func (p *parser) failRaw(format string, args ...any) {
	panic(parseFailure{errorf(format, args...)})
}

// semantic remembers the first semantic error.
func (p *parser) semantic(format string, args ...any) {
	if p.semErr == nil {
		p.semErr = errorf("Invalid "+p.kind+": "+format, args...)
	}
}

// atPathStart reports whether the next token can begin a document path.
func (p *parser) atPathStart() bool {
	k := p.peek().kind
	return k == tokIdent || k == tokName
}

// parsePath parses a document path: name ( '.' name | '[' index ']' )*.
func (p *parser) parsePath() docPath {
	var path docPath
	path = append(path, pathElem{name: p.parsePathName()})
	for {
		switch p.peek().kind {
		case tokDot:
			p.next()
			path = append(path, pathElem{name: p.parsePathName()})
		case tokLBracket:
			p.next()
			t := p.expect(tokNumber)
			n, err := strconv.Atoi(t.text)
			if err != nil || n > maxListIndex {
				p.fail("List index is too large; index: %s", t.text)
			}
			p.expect(tokRBracket)
			path = append(path, pathElem{index: n, isIndex: true})
		default:
			if len(path) > maxPathDepth {
				p.fail("The document path has too many nesting levels; nesting levels: %d", len(path))
			}
			return path
		}
	}
}

// maxPathDepth is the most levels a document path can have (DynamoDB's
// "Expression parameters" quota: 32 levels of nesting).
const maxPathDepth = 32

// parsePathName parses one name of a path: a plain name, which must not be a
// reserved word, or a #name, which must be defined.
func (p *parser) parsePathName() string {
	t := p.peek()
	switch t.kind {
	case tokIdent:
		p.next()
		if _, reserved := reservedWords[strings.ToUpper(t.text)]; reserved {
			p.semantic("Attribute name is a reserved keyword; reserved keyword: %s", t.text)
		}
		return t.text
	case tokName:
		p.next()
		name, ok := p.u.name(t.text)
		if !ok {
			p.semantic("An expression attribute name used in the document path is not defined; attribute name: %s", t.text)
		}
		return name
	}
	p.syntaxError()
	return ""
}

// parseValueRef parses a :value reference and resolves it.
func (p *parser) parseValueRef() types.AttributeValue {
	t := p.expect(tokValue)
	v, ok := p.u.value(t.text)
	if !ok {
		p.semantic("An expression attribute value used in expression is not defined; attribute value: %s", t.text)
		return nil // only ever seen by checks that skip unknown values
	}
	return v
}
