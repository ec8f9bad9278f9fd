package httpapi

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds the nesting of request JSON. encoding/json allows 10000;
// no payload Ferry carries needs more than a few levels, and a low bound
// keeps the scanner's recursion cheap.
const maxDepth = 64

// syntaxError is a JSON document the strict scanner refuses. Path is the
// dotted path of the value it was reading ("" for the document itself).
type syntaxError struct {
	Path   string
	Offset int
	Msg    string
}

func (e *syntaxError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
	}
	return fmt.Sprintf("invalid JSON in %s at byte %d: %s", e.Path, e.Offset, e.Msg)
}

// scanStrict checks that data is exactly one JSON value that encoding/json
// would read the same way a strict reader does: valid UTF-8, no lone
// surrogate escapes, no duplicate object keys at any depth, nothing after
// the value but white space, and no deeper nesting than maxDepth.
// encoding/json (v1) silently accepts the first three, keeping the last
// duplicate and replacing bad text with U+FFFD, which would let two readers
// of one request disagree.
func scanStrict(data []byte) error {
	s := scanner{data: data}
	s.skipSpace()
	if err := s.value("", 0); err != nil {
		return err
	}
	s.skipSpace()
	if s.pos != len(s.data) {
		return s.errorf("", "unexpected data after the JSON value")
	}
	return nil
}

type scanner struct {
	data []byte
	pos  int
}

func (s *scanner) errorf(path, format string, args ...any) error {
	return &syntaxError{Path: path, Offset: s.pos, Msg: fmt.Sprintf(format, args...)}
}

func (s *scanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) value(path string, depth int) error {
	if s.pos >= len(s.data) {
		return s.errorf(path, "unexpected end of JSON")
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		if depth >= maxDepth {
			return s.errorf(path, "nested deeper than %d levels", maxDepth)
		}
		return s.object(path, depth+1)
	case c == '[':
		if depth >= maxDepth {
			return s.errorf(path, "nested deeper than %d levels", maxDepth)
		}
		return s.array(path, depth+1)
	case c == '"':
		_, err := s.str(path)
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number(path)
	case c == 't':
		return s.literal(path, "true")
	case c == 'f':
		return s.literal(path, "false")
	case c == 'n':
		return s.literal(path, "null")
	default:
		return s.unexpected(path)
	}
}

// unexpected refuses the byte at s.pos where a value should start, naming
// it as a person would see it: a UTF-8 byte order mark, a character, or a
// byte that is not UTF-8 at all (never a byte as if it were Latin-1: 0xEF
// is not "ï").
func (s *scanner) unexpected(path string) error {
	rest := s.data[s.pos:]
	if s.pos == 0 && len(rest) >= 3 && rest[0] == 0xEF && rest[1] == 0xBB && rest[2] == 0xBF {
		return s.errorf(path, "the body starts with a UTF-8 byte order mark (bytes EF BB BF); send the JSON without it")
	}
	if r, n := utf8.DecodeRune(rest); r != utf8.RuneError || n > 1 {
		return s.errorf(path, "unexpected character %q (U+%04X) where a value should start", r, r)
	}
	return s.errorf(path, "unexpected byte 0x%02X where a value should start (not UTF-8 text)", rest[0])
}

func (s *scanner) literal(path, lit string) error {
	if len(s.data)-s.pos < len(lit) || string(s.data[s.pos:s.pos+len(lit)]) != lit {
		return s.errorf(path, "invalid literal")
	}
	s.pos += len(lit)
	return nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (s *scanner) object(path string, depth int) error {
	s.pos++ // '{'
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return nil
	}
	seen := make(map[string]struct{})
	for {
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return s.errorf(path, "expected a string key")
		}
		key, err := s.str(path)
		if err != nil {
			return err
		}
		child := joinPath(path, key)
		if _, dup := seen[key]; dup {
			return s.errorf(child, "duplicate key %q", key)
		}
		seen[key] = struct{}{}
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return s.errorf(child, "expected ':' after the key")
		}
		s.pos++
		s.skipSpace()
		if err := s.value(child, depth); err != nil {
			return err
		}
		s.skipSpace()
		if s.pos >= len(s.data) {
			return s.errorf(path, "unexpected end of JSON in an object")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.errorf(path, "expected ',' or '}' in an object")
		}
	}
}

func (s *scanner) array(path string, depth int) error {
	s.pos++ // '['
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return nil
	}
	for i := 0; ; i++ {
		s.skipSpace()
		if err := s.value(path+"["+strconv.Itoa(i)+"]", depth); err != nil {
			return err
		}
		s.skipSpace()
		if s.pos >= len(s.data) {
			return s.errorf(path, "unexpected end of JSON in an array")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return s.errorf(path, "expected ',' or ']' in an array")
		}
	}
}

// str reads a string and returns its decoded value (keys are compared
// decoded, so "a" and "\u0061" are the same key).
func (s *scanner) str(path string) (string, error) {
	s.pos++ // '"'
	var out []byte
	for {
		if s.pos >= len(s.data) {
			return "", s.errorf(path, "unterminated string")
		}
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return string(out), nil
		case c == '\\':
			r, err := s.escape(path)
			if err != nil {
				return "", err
			}
			out = utf8.AppendRune(out, r)
		case c < 0x20:
			return "", s.errorf(path, "control character in a string")
		case c < utf8.RuneSelf:
			out = append(out, c)
			s.pos++
		default:
			r, size := utf8.DecodeRune(s.data[s.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", s.errorf(path, "invalid UTF-8")
			}
			out = append(out, s.data[s.pos:s.pos+size]...)
			s.pos += size
		}
	}
}

func (s *scanner) escape(path string) (rune, error) {
	s.pos++ // '\\'
	if s.pos >= len(s.data) {
		return 0, s.errorf(path, "unterminated escape")
	}
	c := s.data[s.pos]
	s.pos++
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
		r, err := s.hex4(path)
		if err != nil {
			return 0, err
		}
		if !utf16.IsSurrogate(r) {
			return r, nil
		}
		if r >= 0xDC00 {
			return 0, s.errorf(path, "lone low surrogate escape")
		}
		if s.pos+1 >= len(s.data) || s.data[s.pos] != '\\' || s.data[s.pos+1] != 'u' {
			return 0, s.errorf(path, "lone high surrogate escape")
		}
		s.pos += 2
		r2, err := s.hex4(path)
		if err != nil {
			return 0, err
		}
		combined := utf16.DecodeRune(r, r2)
		if combined == utf8.RuneError {
			return 0, s.errorf(path, "invalid surrogate pair escape")
		}
		return combined, nil
	default:
		return 0, s.errorf(path, "invalid escape \\%c", rune(c))
	}
}

func (s *scanner) hex4(path string) (rune, error) {
	if len(s.data)-s.pos < 4 {
		return 0, s.errorf(path, "short \\u escape")
	}
	var r rune
	for _, c := range s.data[s.pos : s.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, s.errorf(path, "invalid \\u escape")
		}
	}
	s.pos += 4
	return r, nil
}

func (s *scanner) number(path string) error {
	start := s.pos
	if s.data[s.pos] == '-' {
		s.pos++
	}
	digits := func() int {
		n := 0
		for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
			s.pos++
			n++
		}
		return n
	}
	if s.pos < len(s.data) && s.data[s.pos] == '0' {
		s.pos++
	} else if digits() == 0 {
		return s.errorf(path, "invalid number")
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if digits() == 0 {
			return s.errorf(path, "invalid number")
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if digits() == 0 {
			return s.errorf(path, "invalid number")
		}
	}
	if s.pos-start > 64 {
		return s.errorf(path, "number longer than 64 characters")
	}
	return nil
}
