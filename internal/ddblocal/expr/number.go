package expr

import (
	"regexp"
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
// hugeExponent matches a number in exponent notation, for telling an
// exponent too large to parse from a malformed number.
var hugeExponent = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)[eE][+-]?[0-9]+$`)

func parseNumber(s string) (*apd.Decimal, error) {
	if s == "" || strings.ContainsAny(s, " \t\n\r_") {
		return nil, errorf("The parameter cannot be converted to a numeric value: %s", s)
	}
	d, _, err := apd.NewFromString(s)
	if err != nil && hugeExponent.MatchString(s) {
		// A well-formed number whose exponent does not even parse is out
		// of DynamoDB's range, which is what DynamoDB says.
		if strings.Contains(strings.ToLower(s), "e-") {
			return nil, errorf("Number underflow. Attempting to store a number with magnitude smaller than supported range")
		}
		return nil, errorf("Number overflow. Attempting to store a number with magnitude larger than supported range")
	}
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

// numberSize is the storage size of a number. The Developer Guide ("Item
// sizes and formats") gives it as roughly one byte per two significant
// digits plus one byte; measurements against DynamoDB's consumed capacity
// (Zac Charles, "Calculating a DynamoDB item's size and consumed capacity",
// and github.com/zaccharles/dynamodb-calculator) refine that: digits are
// stored in base 100, paired around the decimal point, with all-zero pairs at
// either end dropped; one byte per pair, one more byte, one more again for a
// negative number, at most 21 bytes; zero takes 1 byte.
func numberSize(s string) int {
	d, err := parseNumber(s)
	if err != nil {
		return len(s)
	}
	if d.IsZero() {
		return 1
	}
	// After Reduce the coefficient has no trailing zeros and no leading
	// ones, so its digits occupy the powers of ten lo..hi.
	lo := int64(d.Exponent)
	hi := lo + d.NumDigits() - 1
	size := int(floorDiv2(hi)-floorDiv2(lo)) + 1 + 1
	if d.Negative {
		size++
	}
	return min(size, 21)
}

// floorDiv2 is x/2 rounded towards negative infinity: the base-100 digit
// that power of ten x falls in.
func floorDiv2(x int64) int64 {
	if x < 0 {
		return -((-x + 1) / 2)
	}
	return x / 2
}
