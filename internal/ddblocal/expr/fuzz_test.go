package expr

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// fuzzNames and fuzzValues give fuzzed expressions names and values of every
// type to refer to.
func fuzzUsage() *Usage {
	return NewUsage(
		map[string]string{"#a": "a", "#b": "b", "#s": "status", "#d": "a.b", "#e": ""},
		map[string]types.AttributeValue{
			":s": s("x"), ":n": n("1.5"), ":big": n("9.9999999999999999999999999999999999999E+125"),
			":b": b("\x00\x01"), ":t": bl(true), ":null": null(), ":ss": ss("x", "y"), ":ns": ns("1", "2"),
			":bs": bs("a"), ":l": l(s("x"), n("2")), ":m": m(item{"a": s("x")}), ":T": s("S"), ":tiny": n("1E-130"),
		},
	)
}

// fuzzItems are the items every parsed expression is evaluated against.
func fuzzItems() []item {
	return []item{
		nil,
		{},
		{
			"a": m(item{"b": l(n("1"), m(item{"c": s("x")})), "x": s("y")}),
			"b": l(s("x"), n("2"), l()),
			"c": n("-3.25"), "d": ss("x"), "e": ns("1"), "f": bs("a"), "g": b("\x00"), "h": bl(false), "i": null(),
			"status": s("on"), "a.b": s("dotted"),
		},
	}
}

// FuzzParse feeds arbitrary text to every parser and, when it parses,
// evaluates or applies the result against several items: nothing may panic,
// every error must be an *Error, updates must not modify their input and
// must produce valid items.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"a = :s", "a.b[1].c <> :n AND NOT (b IN (:s, :n) OR size(a) > :n)", "#a BETWEEN :n AND :big",
		"attribute_exists(#b) AND attribute_type(a, :T) OR begins_with(a.x, :s) AND contains(b, :n)",
		"SET a.b[5] = :s, c = c + :n, d = list_append(if_not_exists(b, :l), :l) REMOVE b[0], b[1] ADD e :ns DELETE d :ss",
		"SET c = c - :big ADD f :bs, z :n", "REMOVE a.b[1].c, #d", "a, b[0], a.b[1].c, #s",
		"pk = :s AND sk BETWEEN :n AND :big", "(#a = :s) AND (begins_with(#b, :s))", "SET a = :tiny + :tiny",
		"a[99999999999999999999] = :s", "((((((((a = :s))))))))", "SET #e = :s",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		checkErr := func(err error) {
			var e *Error
			if err != nil && !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not an *Error", err, err)
			}
		}
		if c, err := ParseCondition(src, fuzzUsage()); err == nil {
			for _, it := range fuzzItems() {
				_, err := c.Eval(it)
				checkErr(err)
			}
		} else {
			checkErr(err)
		}
		if up, err := ParseUpdate(src, fuzzUsage()); err == nil {
			up.TopLevelAttributes()
			for _, it := range fuzzItems() {
				before := CopyItem(it)
				out, err := up.Apply(it)
				checkErr(err)
				if !Equal(m(before), m(it)) {
					t.Fatalf("Apply modified its input")
				}
				if err == nil {
					for k, v := range out {
						if verr := ValidateValue(v); verr != nil {
							t.Fatalf("Apply produced an invalid attribute %s: %v", k, verr)
						}
					}
				}
			}
		} else {
			checkErr(err)
		}
		if pr, err := ParseProjection(src, fuzzUsage()); err == nil {
			for _, it := range fuzzItems() {
				pr.Apply(it)
			}
		} else {
			checkErr(err)
		}
		if kc, err := ParseKeyCondition(src, fuzzUsage()); err == nil {
			if kc.HashName == "" || kc.HashValue == nil {
				t.Fatalf("key condition without partition key: %+v", kc)
			}
			_, err := kc.ForSchema("a", "b")
			checkErr(err)
		} else {
			checkErr(err)
		}
	})
}

// FuzzNumber checks the number rules on arbitrary text: canonical text is a
// fixed point, equal to the input numerically, and ordering is antisymmetric
// and agrees with subtraction.
func FuzzNumber(f *testing.F) {
	for _, seed := range [][2]string{
		{"1.50", "1.5"}, {"-0", "0"}, {"1e3", "999.99"}, {"9.9999999999999999999999999999999999999E+125", "1E-130"},
		{"-1E-130", "0.1"}, {"12345678901234567890123456789012345678", "1"}, {"abc", "1"}, {".5", "5."},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ca, errA := CanonicalNumber(a)
		cb, errB := CanonicalNumber(b)
		_ = numberSize(a)
		if errA != nil || errB != nil {
			return
		}
		if again, err := CanonicalNumber(ca); err != nil || again != ca {
			t.Fatalf("canonical %q of %q is not a fixed point: %q, %v", ca, a, again, err)
		}
		if !Equal(n(a), n(ca)) {
			t.Fatalf("%q and its canonical %q differ", a, ca)
		}
		if numberSize(a) != numberSize(ca) || numberSize(a) < 1 || numberSize(a) > 21 {
			t.Fatalf("size of %q is %d, of its canonical %q is %d", a, numberSize(a), ca, numberSize(ca))
		}
		x, ok1 := Compare(n(a), n(b))
		y, ok2 := Compare(n(b), n(a))
		if !ok1 || !ok2 || sign(x) != -sign(y) {
			t.Fatalf("Compare(%q, %q) = %d, reverse %d", a, b, x, y)
		}
		if diff, err := addNumbers(a, b, true); err == nil {
			c, _ := Compare(n(diff), n("0"))
			if sign(c) != sign(x) {
				t.Fatalf("%q - %q = %q disagrees with Compare %d", a, b, diff, x)
			}
		}
		if (x == 0) != (ca == cb) {
			t.Fatalf("Compare(%q, %q) = %d but canonical forms %q, %q", a, b, x, ca, cb)
		}
	})
}
