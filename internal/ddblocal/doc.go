// Package ddblocal is Ferry's embedded, in-memory DynamoDB.
//
// One engine, DB, serves two faces: in process, DB offers the subset of
// *dynamodb.Client methods the project calls (the API interface), with the
// aws-sdk-go-v2 input and output types and the SDK's error types, so outbox
// code is the same against it and against AWS; over HTTP, package ddbhttp
// serves the same method set with DynamoDB's JSON wire protocol.
//
// # Storage
//
// Each table keeps its items in a B-tree ordered by primary key (hash key
// bytes, then the range key in DynamoDB order: S and B by bytes, N
// numerically), through an order-preserving, prefix-free key encoding. Every
// secondary index is its own ordered structure kept exact on every write
// path, and sparse: an item is in an index only while it has the index's
// keys. Items are stored as compact encoded bytes (about 1.8 times DynamoDB's
// item size in heap, B-tree included), decoded on every read so no caller
// shares memory with the store. A Query or a transaction costs O(log n +
// result); Scan and the TTL sweep's first pass over a table are O(table).
//
// Each call is atomic: reads share a DB-wide lock, writes (transactions over
// several tables included) hold it alone.
//
// # Beyond the DynamoDB API
//
// The Go API gives what tests, the local stack and the simulator need:
//   - an injected clock (WithClock) for TTL, token windows, index lag and
//     change timestamps;
//   - the change feed (Changes, Watch) of tables with a stream, and the
//     DynamoDB Streams API over it (streams.go; StreamsAPI);
//   - persistence in a data directory (Open, Close; persist.go);
//   - cumulative consumed capacity per table and index (Capacity), by
//     AWS's billing rules;
//   - deterministic fault injection (WithFaults, WithSeed, FaultPlan): fail
//     before or after the commit, throttle, conflict, delay (WithSleeper);
//   - a propagation lag for global secondary indexes (WithIndexLag);
//   - the TTL sweep (SweepTTL, or WithTTLSweepEvery to run it from calls),
//     after WithTTLDelay.
//
// # Not implemented
//
// PartiQL, backups and restores, global tables, Kinesis streaming,
// ReturnItemCollectionMetrics, and item-collection size limits.
package ddblocal
