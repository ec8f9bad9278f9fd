package ddblocal_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/ddblocal"
)

// Persistence figures (docs/dynamodb.md):
//
//	go test -run '^$' -bench 'DataDir|Parallel' -benchtime 2000x ./internal/ddblocal/
//	FERRY_DDBLOCAL_BENCH_1M=1 go test -run '^$' -bench 'OpenDataDir' -benchtime 1x ./internal/ddblocal/

func createBenchTable(tb testing.TB, db *ddblocal.DB) {
	tb.Helper()
	_, err := db.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(benchTable),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: "S"}, {AttributeName: aws.String("sk"), AttributeType: "S"}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// fillDataDir writes items bench items into a new data directory, with 16
// writers of 25-item batches (group commit shares their fsyncs), and
// returns it closed (snapshotted) or crashed (everything in the log).
func fillDataDir(b *testing.B, items int, crash bool) string {
	b.Helper()
	dir := b.TempDir()
	db, err := ddblocal.Open(dir, ddblocal.WithSnapshotEvery(0))
	if err != nil {
		b.Fatal(err)
	}
	createBenchTable(b, db)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for {
				start := int(next.Add(25)) - 25
				if start >= items {
					return
				}
				var reqs []types.WriteRequest
				for i := start; i < min(start+25, items); i++ {
					reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: benchItem(i)}})
				}
				if _, err := db.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{benchTable: reqs}}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	if crash {
		ddblocal.CrashForTest(db)
	} else if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkOpenDataDir: start-up from a data directory (from its snapshot,
// and from the log alone after a crash), its time and the heap it holds.
func BenchmarkOpenDataDir(b *testing.B) {
	for _, size := range benchSizes() {
		for _, from := range []string{"snapshot", "log"} {
			b.Run(fmt.Sprintf("items=%d/from=%s", size, from), func(b *testing.B) {
				dir := fillDataDir(b, size, from == "log")
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					var before, after runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&before)
					b.StartTimer()
					start, cpu := time.Now(), processCPU()
					db, err := ddblocal.Open(dir)
					took, cpuTook := time.Since(start), processCPU()-cpu
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					if got := db.Recovery().Items; got != int64(size) {
						b.Fatalf("%d items back, want %d", got, size)
					}
					runtime.GC()
					runtime.ReadMemStats(&after)
					b.ReportMetric(took.Seconds(), "open-s")
					b.ReportMetric(cpuTook.Seconds(), "open-cpu-s")
					b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MiB")
					ddblocal.CrashForTest(db) // leave the directory as it was
					b.StartTimer()
				}
			})
		}
	}
}

// BenchmarkPutItemDataDir: one client writing, each answer after its fsync.
func BenchmarkPutItemDataDir(b *testing.B) {
	db, err := ddblocal.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	createBenchTable(b, db)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(benchTable), Item: benchItem(i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
}

// BenchmarkPutItemParallel: 16 clients writing, in memory and with a data
// directory (group commit: one fsync answers every write waiting for it).
func BenchmarkPutItemParallel(b *testing.B) {
	for _, mode := range []string{"memory", "data-dir"} {
		b.Run(mode, func(b *testing.B) {
			db := ddblocal.New()
			if mode == "data-dir" {
				var err error
				if db, err = ddblocal.Open(b.TempDir()); err != nil {
					b.Fatal(err)
				}
				defer db.Close()
			}
			createBenchTable(b, db)
			var seq atomic.Int64
			b.SetParallelism(8) // 16 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(seq.Add(1))
					if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(benchTable), Item: benchItem(i)}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
		})
	}
}
