package payloadcheck

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// HeaderText checks a value that ends up in a header or a header-like
// request field: valid UTF-8, at most max bytes, and no control character
// (ContainsControl), so it can neither end its header nor start another.
// It returns "" when s is acceptable, else the problem in plain English.
func HeaderText(s string, max int) string {
	switch {
	case len(s) > max:
		return fmt.Sprintf("is %d bytes; at most %d are allowed", len(s), max)
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case ContainsControl(s):
		return "must not contain control characters (CR, LF, NUL and the like)"
	}
	return ""
}

// ContainsControl reports whether s holds a control character other than
// horizontal tab (CR, LF, NUL, the rest of C0, DEL and C1) or a Unicode
// line or paragraph separator. Invalid UTF-8 bytes count as control
// characters: they cannot be told apart from one.
func ContainsControl(s string) bool {
	for _, r := range s {
		if r == '\t' {
			continue
		}
		if r == utf8.RuneError || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return true
		}
	}
	return false
}
