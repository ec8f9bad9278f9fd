package expr

// tokenKind classifies a lexical token of the expression language.
type tokenKind int

const (
	tokEOF tokenKind = iota
	tokIdent
	tokName  // #name
	tokValue // :value
	tokNumber
	tokLParen
	tokRParen
	tokLBracket
	tokRBracket
	tokComma
	tokDot
	tokEq
	tokNe
	tokLt
	tokLe
	tokGt
	tokGe
	tokPlus
	tokMinus
	tokIllegal
)

// token is one lexeme with its byte span in the source.
type token struct {
	kind       tokenKind
	text       string
	start, end int
}

// isIdentStart: a name token starts with a letter. DynamoDB's lexer does
// not take an underscore or a digit there ("SET _a = :v" is a syntax error
// on the token "_"), while a #name or :value may go on with any of them.
func isIdentStart(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool {
	return isIdentStart(c) || c == '_' || (c >= '0' && c <= '9')
}

// lex splits an expression into tokens; an unknown character becomes a
// tokIllegal token, which the parser reports as a syntax error at that
// position, as DynamoDB does.
func lex(src string) []token {
	var toks []token
	i := 0
	for i < len(src) {
		c := src[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case isIdentStart(c):
			for i < len(src) && isIdentChar(src[i]) {
				i++
			}
			toks = append(toks, token{tokIdent, src[start:i], start, i})
			continue
		case c >= '0' && c <= '9':
			for i < len(src) && src[i] >= '0' && src[i] <= '9' {
				i++
			}
			toks = append(toks, token{tokNumber, src[start:i], start, i})
			continue
		case c == '#' || c == ':':
			i++
			for i < len(src) && isIdentChar(src[i]) {
				i++
			}
			kind := tokName
			if c == ':' {
				kind = tokValue
			}
			if i == start+1 {
				kind = tokIllegal
			}
			toks = append(toks, token{kind, src[start:i], start, i})
			continue
		}
		kind := tokIllegal
		width := 1
		switch c {
		case '(':
			kind = tokLParen
		case ')':
			kind = tokRParen
		case '[':
			kind = tokLBracket
		case ']':
			kind = tokRBracket
		case ',':
			kind = tokComma
		case '.':
			kind = tokDot
		case '=':
			kind = tokEq
		case '+':
			kind = tokPlus
		case '-':
			kind = tokMinus
		case '<':
			kind = tokLt
			if i+1 < len(src) && src[i+1] == '=' {
				kind, width = tokLe, 2
			} else if i+1 < len(src) && src[i+1] == '>' {
				kind, width = tokNe, 2
			}
		case '>':
			kind = tokGt
			if i+1 < len(src) && src[i+1] == '=' {
				kind, width = tokGe, 2
			}
		default:
			// Keep a whole UTF-8 sequence in the token so the message shows
			// the character, not a broken byte.
			for width < 4 && i+width < len(src) && src[i+width]&0xC0 == 0x80 {
				width++
			}
		}
		i += width
		toks = append(toks, token{kind, src[start:i], start, i})
	}
	toks = append(toks, token{tokEOF, "<EOF>", len(src), len(src)})
	return toks
}
