package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
)

func TestExploreTrickle(t *testing.T) {
	if os.Getenv("EXPLORE") == "" {
		t.Skip()
	}
	ctx := context.Background()
	pl, _ := PayloadFor(ctx, 1024)
	for _, rate := range []float64{10, 50} {
		for _, lanes := range []int{0, 20, 100} {
			l, c, err := streamRun(ctx, streamOpts{stream: true, n: 1000, rate: rate, payloadBytes: pl, seed: 8, lanes: lanes})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Printf("rate %.0f lanes %d: WRU %.2f (due %.2f) RRU %.2f calls %.2f fill %.0f%% p50 %v p99 %v\n", rate, lanes, c.WRU, c.IndexWRU["due"], c.RRU, c.Calls, 100*c.BatchFill, l.P50, l.P99)
			if os.Getenv("EXPLORE") == "v" {
				for _, b := range c.Breakdown {
					fmt.Printf("   %6.3f WRU (due %5.3f) %6.3f RRU %5.2f calls  %s\n", b.WRU, b.DueWRU, b.RRU, b.CallsPerAction, b.Label)
				}
			}
		}
	}
}
