package ddblocal

import (
	"strings"
)

// filterKeyAttribute returns a key attribute (of keys) that a Query's
// FilterExpression names, or "". DynamoDB refuses such filters: "A filter
// expression cannot contain partition key or sort key attributes. You need
// to specify those attributes in the key condition expression, not the
// filter expression." (Developer Guide, "Filter expressions for Query").
//
// The expression has already been parsed, so a light scan suffices: every
// attribute name or #name that starts a document path (not after a ".", not
// a function name, not a keyword) is a top-level attribute.
func filterKeyAttribute(filter string, names map[string]string, keys []string) string {
	isKey := map[string]bool{}
	for _, k := range keys {
		isKey[k] = true
	}
	type token struct {
		kind byte // 'w' word, '#' name, ':' value, 'n' number, or the punctuation itself
		text string
	}
	var toks []token
	word := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
	}
	for i := 0; i < len(filter); {
		c := filter[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#' || c == ':':
			j := i + 1
			for j < len(filter) && word(filter[j]) {
				j++
			}
			toks = append(toks, token{c, filter[i:j]})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(filter) && filter[j] >= '0' && filter[j] <= '9' {
				j++
			}
			toks = append(toks, token{'n', filter[i:j]})
			i = j
		case word(c):
			j := i
			for j < len(filter) && word(filter[j]) {
				j++
			}
			toks = append(toks, token{'w', filter[i:j]})
			i = j
		default:
			toks = append(toks, token{c, string(c)})
			i++
		}
	}
	for i, t := range toks {
		if t.kind != 'w' && t.kind != '#' {
			continue
		}
		if i > 0 && toks[i-1].kind == '.' {
			continue
		}
		if i+1 < len(toks) && toks[i+1].kind == '(' {
			continue // a function
		}
		name := t.text
		if t.kind == 'w' {
			switch strings.ToUpper(name) {
			case "AND", "OR", "NOT", "BETWEEN", "IN":
				continue
			}
		} else {
			name = names[t.text]
		}
		if isKey[name] {
			return name
		}
	}
	return ""
}
