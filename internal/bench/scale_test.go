package bench

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestScaleModelDeliversEverythingAtLowRate(t *testing.T) {
	pt, err := ScaleRun(context.Background(), ScaleParams{Rate: 50, Partitions: 4, Warmup: 2 * time.Second, Window: 5 * time.Second, Grace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", pt)
	if pt.Arrivals < 150 || pt.Undelivered != 0 {
		t.Fatalf("arrivals %d undelivered %d", pt.Arrivals, pt.Undelivered)
	}
}

func TestScaleModelThrottlesAHotPartitionKey(t *testing.T) {
	// One partition at 400 actions a second needs about 2,400 write units a
	// second on its keys: DynamoDB's 1,000 per key refuses the rest.
	pt, err := ScaleRun(context.Background(), ScaleParams{Rate: 400, Partitions: 1, Warmup: time.Second, Window: 3 * time.Second, Grace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", pt)
	if pt.ThrottledBy["P#"]+pt.ThrottledBy["D#"] == 0 || !strings.Contains(pt.Bottleneck, "partition keys") {
		t.Fatalf("throttled %v, bottleneck %q: want the partition key's ceiling named", pt.ThrottledBy, pt.Bottleneck)
	}
	// 4.25 base-table units an action on P#0: about 235 a second, plus the
	// edges of the one-second windows.
	if pt.Sustained > 300 {
		t.Fatalf("sustained %.0f/s on one partition key: more than 1,000 WRU/s allows", pt.Sustained)
	}
}
