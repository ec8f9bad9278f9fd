package bench

import (
	"fmt"
	"io"
	"strings"
)

// CostTable writes the cost figures as a Markdown table.
func CostTable(w io.Writer, cs []Cost) {
	fmt.Fprintln(w, "| workload | actions | WRU/action | table | due | subject | workspace | ended | RRU/action | table | due | calls/action | batch fill | conflicts /1k | refused /1k |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, c := range cs {
		fmt.Fprintf(w, "| %s | %d | **%.2f** | %.2f | %.2f | %.2f | %.2f | %.2f | **%.2f** | %.2f | %.2f | %.2f | %.0f%% | %.1f | %.1f |\n",
			c.Workload, c.Delivered, c.WRU, c.BaseWRU, c.IndexWRU["due"], c.IndexWRU["subject"], c.IndexWRU["workspace"], c.IndexWRU["ended"],
			c.RRU, c.BaseRRU, c.IndexRRU["due"], c.Calls, 100*c.BatchFill, c.ConflictsPer1000, c.RefusalsPer1000)
	}
}

// CallsTable writes the calls per action by operation.
func CallsTable(w io.Writer, cs []Cost) {
	ops := map[string]bool{}
	for _, c := range cs {
		for op := range c.CallsBy {
			ops[op] = true
		}
	}
	var names []string
	for _, k := range sortedKeys(toF(ops)) {
		names = append(names, k)
	}
	fmt.Fprintf(w, "| workload | %s |\n", strings.Join(names, " | "))
	fmt.Fprintf(w, "|---|%s\n", strings.Repeat("---:|", len(names)))
	for _, c := range cs {
		var cells []string
		for _, op := range names {
			cells = append(cells, fmt.Sprintf("%.2f", c.CallsBy[op]))
		}
		fmt.Fprintf(w, "| %s | %s |\n", c.Workload, strings.Join(cells, " | "))
	}
}

func toF(m map[string]bool) map[string]float64 {
	out := map[string]float64{}
	for k := range m {
		out[k] = 1
	}
	return out
}

// BreakdownTable writes where one workload's units went, call by call (the
// meter's labels), per delivered action; rows under 0.005 units and calls
// are left out.
func BreakdownTable(w io.Writer, c Cost) {
	fmt.Fprintln(w, "| call | calls/action | WRU/action | of which due | RRU/action | of which due | items per transaction |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	for _, b := range c.Breakdown {
		if b.WRU < 0.005 && b.RRU < 0.005 && b.CallsPerAction < 0.005 {
			continue
		}
		items := ""
		if b.ItemsPerTx > 0 {
			items = fmt.Sprintf("%.1f", b.ItemsPerTx)
		}
		fmt.Fprintf(w, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n", strings.ReplaceAll(b.Label, "|", "/"), b.CallsPerAction, b.WRU, b.DueWRU, b.RRU, b.DueRRU, items)
	}
}
