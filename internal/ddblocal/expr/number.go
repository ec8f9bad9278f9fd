package expr

import (
	"strings"

	"github.com/cockroachdb/apd/v3"
)

// DynamoDB numbers: up to 38 significant digits, magnitude between 1E-130 and
// 9.9999999999999999999999999999999999999E+125, or zero. Source: Developer
// Guide, "Supported data types and naming rules" (Number).
const (
	maxSignificantDigits = 38
	maxAdjustedExponent  = 125
	minAdjustedExponent  = -130
)

// exactContext has enough precision to add or subtract any two DynamoDB
// numbers without rounding: the widest exact sum spans 1E+125 to 1E-130 plus
// 38 digits. The result is then checked against DynamoDB's limits, so a sum
// needing more than 38 digits is refused rather than silently rounded.
var exactContext = apd.BaseContext.WithPrecision(400)

// parseNumber parses DynamoDB number text into an exact decimal, refusing
// what DynamoDB refuses (not a number, too many digits, out of range).
func parseNumber(s string) (*apd.Decimal, error) {
	if s == "" || strings.ContainsAny(s, " \t\n\r_") {
		return nil, errorf("The parameter cannot be converted to a numeric value: %s", s)
	}
	d, _, err := apd.NewFromString(s)
	if err != nil || d.Form != apd.Finite {
		return nil, errorf("The parameter cannot be converted to a numeric value: %s", s)
	}
	return checkNumber(d)
}

// checkNumber reduces d (trailing zeros trimmed, as DynamoDB stores numbers)
// and enforces the digit and range limits.
func checkNumber(d *apd.Decimal) (*apd.Decimal, error) {
	var r apd.Decimal
	r.Reduce(d)
	if r.IsZero() {
		r.SetInt64(0)
		return &r, nil
	}
	digits := r.NumDigits()
	adjusted := int64(r.Exponent) + digits - 1
	if adjusted > maxAdjustedExponent {
		return nil, errorf("Number overflow. Attempting to store a number with magnitude larger than supported range")
	}
	if adjusted < minAdjustedExponent {
		return nil, errorf("Number underflow. Attempting to store a number with magnitude smaller than supported range")
	}
	if digits > maxSignificantDigits {
		return nil, errorf("Attempting to store more than 38 significant digits in a Number")
	}
	return &r, nil
}

// formatNumber renders a checked decimal the way DynamoDB returns numbers:
// plain notation, no exponent, no trailing fractional zeros, no sign on zero.
func formatNumber(d *apd.Decimal) string {
	if d.IsZero() {
		return "0"
	}
	return d.Text('f')
}

// CanonicalNumber returns DynamoDB's normalised text for a number
// ("1.50" -> "1.5", "1e3" -> "1000", "-0" -> "0", "007" -> "7"), or an *Error
// when DynamoDB would refuse the number.
func CanonicalNumber(s string) (string, error) {
	d, err := parseNumber(s)
	if err != nil {
		return "", err
	}
	return formatNumber(d), nil
}

// addNumbers returns a+b (or a-b when subtract) exactly, as canonical text.
func addNumbers(a, b string, subtract bool) (string, error) {
	x, err := parseNumber(a)
	if err != nil {
		return "", err
	}
	y, err := parseNumber(b)
	if err != nil {
		return "", err
	}
	var sum apd.Decimal
	if subtract {
		_, err = exactContext.Sub(&sum, x, y)
	} else {
		_, err = exactContext.Add(&sum, x, y)
	}
	if err != nil {
		return "", errorf("Number overflow. Attempting to store a number with magnitude larger than supported range")
	}
	r, err := checkNumber(&sum)
	if err != nil {
		return "", err
	}
	return formatNumber(r), nil
}

// compareNumbers orders two number texts numerically; ok is false if either
// is not a valid DynamoDB number.
func compareNumbers(a, b string) (int, bool) {
	x, err := parseNumber(a)
	if err != nil {
		return 0, false
	}
	y, err := parseNumber(b)
	if err != nil {
		return 0, false
	}
	return x.Cmp(y), true
}

// numberSize is the storage size of a number by the Developer Guide's rule
// ("Item sizes and formats"): leading and trailing zeros trimmed, one byte per
// two significant digits, plus one byte.
func numberSize(s string) int {
	d, err := parseNumber(s)
	if err != nil {
		return len(s)
	}
	digits := 1
	if !d.IsZero() {
		digits = int(d.NumDigits())
	}
	return (digits+1)/2 + 1
}
