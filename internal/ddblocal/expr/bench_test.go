package expr

import "testing"

// BenchmarkConditionEval measures parsing and evaluating a typical claim
// condition, the expression the outbox evaluates on every write.
func BenchmarkConditionEval(b *testing.B) {
	values := item{":now": n("1700000000000"), ":owner": s("worker-1"), ":state": s("ready"), ":one": n("1")}
	names := map[string]string{"#s": "state"}
	it := item{"pk": s("p"), "state": s("ready"), "lease_until": n("1699999999999"), "holder": s("worker-2"), "fence": n("41")}
	const src = "attribute_exists(pk) AND #s = :state AND (attribute_not_exists(lease_until) OR lease_until < :now OR holder = :owner)"
	b.ReportAllocs()
	for b.Loop() {
		c, err := ParseCondition(src, NewUsage(names, values))
		if err != nil {
			b.Fatal(err)
		}
		ok, _ := c.Eval(it)
		if !ok {
			b.Fatal("condition should hold")
		}
	}
}

// BenchmarkUpdateApply measures parsing and applying a claim-shaped update.
func BenchmarkUpdateApply(b *testing.B) {
	values := item{":owner": s("worker-1"), ":until": n("1700000030000"), ":one": n("1"), ":s": s("claimed")}
	names := map[string]string{"#s": "state"}
	it := item{"pk": s("p"), "state": s("ready"), "fence": n("41"), "payload": s(string(make([]byte, 1024)))}
	const src = "SET #s = :s, holder = :owner, lease_until = :until, fence = fence + :one REMOVE due"
	b.ReportAllocs()
	for b.Loop() {
		up, err := ParseUpdate(src, NewUsage(names, values))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := up.Apply(it); err != nil {
			b.Fatal(err)
		}
	}
}
