// Package bench measures what a Ferry action costs on DynamoDB: request
// units (table and each index), calls, claim batch fill and transaction
// conflicts per workload, read from the embedded DynamoDB's capacity
// counters; enqueue-to-provider-call latency and drain rate under a model of
// 5 ms per DynamoDB call; the drainer's peak memory; and the Lambda
// bootstraps' sizes and invoke times. cmd/ferry-bench runs it (`make
// bench`) and writes docs/benchmarks.md and docs/benchmarks.png.
//
// Nothing here is a test of correctness: the conformance suite and the
// simulator are. The figures are what AWS would bill, not wall time on this
// machine, except where a figure says it is wall time.
package bench
