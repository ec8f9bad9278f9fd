// Package ddblocal is Ferry's embedded, in-memory DynamoDB.
//
// One engine, DB, serves two faces: in process, DB offers the subset of
// *dynamodb.Client methods the project calls (the API interface), with the
// aws-sdk-go-v2 input and output types, so outbox code is the same against it
// and against AWS; over HTTP, package ddbhttp serves the same method set with
// DynamoDB's JSON wire protocol.
//
// The engine keeps each table's items in a B-tree ordered by primary key
// (hash key bytes, then the range key in DynamoDB order), with every
// secondary index as its own ordered structure kept exact on every write path
// (sparse: an item is in an index only while it has the index's keys). Items
// are stored encoded, so memory stays close to the raw item bytes. A Query or
// a transaction costs O(log n + result).
//
// Beyond the DynamoDB API, the Go API gives what tests, the local stack and
// the simulator need: an injected clock (TTL sweeps, token windows, index
// lag), a change feed (Changes, Watch), consumed-capacity counters
// (Capacity), deterministic fault injection (FaultPlan), and a propagation
// lag for global secondary indexes.
package ddblocal
