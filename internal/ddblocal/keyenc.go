package ddblocal

import (
	"fmt"
	"strings"
)

// Key encoding. A primary key (and an index key) is stored as a byte string
// whose byte order is DynamoDB's order for the key values: S and B by bytes,
// N numerically. Each encoded value is prefix-free, so concatenating
// encodings (hash, then range, then the base key for an index entry) keeps
// both the order and the uniqueness of the tuple.

const (
	keyTagS byte = 's'
	keyTagN byte = 'n'
	keyTagB byte = 'b'
)

// appendKeyBytes appends raw bytes escaped so that the encoding is
// prefix-free and sorts like the raw bytes: 0x00 becomes 0x00 0xFF and the
// value ends with 0x00 0x01, which sorts below any continuation.
func appendKeyBytes(dst []byte, raw []byte) []byte {
	dst = appendEscaped(dst, raw)
	return append(dst, 0x00, 0x01)
}

func appendEscaped(dst []byte, raw []byte) []byte {
	for _, c := range raw {
		if c == 0x00 {
			dst = append(dst, 0x00, 0xFF)
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// decimal is a parsed DynamoDB number: value = sign * 0.digits * 10^exp,
// digits without leading or trailing zeros (empty for zero).
type decimal struct {
	neg    bool
	digits string
	exp    int
}

// parseDecimal parses a DynamoDB number string. It accepts what DynamoDB
// accepts: an optional sign, digits with an optional point, an optional
// exponent; at most 38 significant digits; magnitude between 1e-130 and
// 1e126 (exclusive).
func parseDecimal(s string) (decimal, error) {
	var d decimal
	in := strings.TrimSpace(s)
	if in == "" {
		return d, fmt.Errorf("empty number")
	}
	i := 0
	if in[0] == '+' || in[0] == '-' {
		d.neg = in[0] == '-'
		i++
	}
	var mant strings.Builder
	pointPos := -1
	sawDigit := false
	for ; i < len(in); i++ {
		c := in[i]
		switch {
		case c >= '0' && c <= '9':
			mant.WriteByte(c)
			sawDigit = true
		case c == '.' && pointPos < 0:
			pointPos = mant.Len()
		default:
			goto exponent
		}
	}
exponent:
	if !sawDigit {
		return d, fmt.Errorf("invalid number %q", s)
	}
	e10 := 0
	if i < len(in) {
		if in[i] != 'e' && in[i] != 'E' {
			return d, fmt.Errorf("invalid number %q", s)
		}
		i++
		eneg := false
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			eneg = in[i] == '-'
			i++
		}
		if i >= len(in) {
			return d, fmt.Errorf("invalid number %q", s)
		}
		for ; i < len(in); i++ {
			c := in[i]
			if c < '0' || c > '9' {
				return d, fmt.Errorf("invalid number %q", s)
			}
			if e10 < 100000 {
				e10 = e10*10 + int(c-'0')
			}
		}
		if eneg {
			e10 = -e10
		}
	}
	m := mant.String()
	if pointPos < 0 {
		pointPos = len(m)
	}
	// value = 0.m * 10^pointPos * 10^e10
	lead := 0
	for lead < len(m) && m[lead] == '0' {
		lead++
	}
	m = m[lead:]
	exp := pointPos - lead + e10
	m = strings.TrimRight(m, "0")
	if m == "" {
		return decimal{}, nil
	}
	if len(m) > 38 {
		return d, fmt.Errorf("Attempting to store more than 38 significant digits in a Number")
	}
	// 0.m * 10^exp: the magnitude is in [10^(exp-1), 10^exp).
	if exp > 126 {
		return d, fmt.Errorf("Number overflow. Attempting to store a number with magnitude larger than supported range")
	}
	if exp-1 < -130 {
		return d, fmt.Errorf("Number underflow. Attempting to store a number with magnitude smaller than supported range")
	}
	d.digits = m
	d.exp = exp
	return d, nil
}

// canonical renders the number the way DynamoDB returns it: no exponent,
// no leading or trailing zeros.
func (d decimal) canonical() string {
	if d.digits == "" {
		return "0"
	}
	var b strings.Builder
	if d.neg {
		b.WriteByte('-')
	}
	switch {
	case d.exp <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -d.exp))
		b.WriteString(d.digits)
	case d.exp >= len(d.digits):
		b.WriteString(d.digits)
		b.WriteString(strings.Repeat("0", d.exp-len(d.digits)))
	default:
		b.WriteString(d.digits[:d.exp])
		b.WriteByte('.')
		b.WriteString(d.digits[d.exp:])
	}
	return b.String()
}

// appendKeyNumber appends an order-preserving, prefix-free encoding of d:
// a class byte (negative, zero, positive), then for non-zero values the
// biased exponent and the digits, inverted for negatives.
func appendKeyNumber(dst []byte, d decimal) []byte {
	if d.digits == "" {
		return append(dst, 0x02)
	}
	e := uint16(d.exp + 1000)
	if !d.neg {
		dst = append(dst, 0x03, byte(e>>8), byte(e))
		dst = append(dst, d.digits...)
		return append(dst, 0x00)
	}
	e = ^e
	dst = append(dst, 0x01, byte(e>>8), byte(e))
	for i := 0; i < len(d.digits); i++ {
		dst = append(dst, ^d.digits[i])
	}
	return append(dst, 0xFF)
}

// prefixEnd returns the smallest byte string greater than every string that
// starts with p, or nil when there is none.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
