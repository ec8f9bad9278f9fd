package bench

import (
	"context"
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

func TestScaleModelTiming(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	pt, err := ScaleRun(context.Background(), ScaleParams{Rate: 1000, Partitions: 16, Warmup: 2 * time.Second, Window: 5 * time.Second, Grace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", pt)
}
