// Package paritytest is the DynamoDB parity suite of the embedded DynamoDB:
// one Exercise function of DynamoDB behaviours, each case citing the AWS
// documentation page it follows, run against every face of the engine (in
// process, over HTTP) and against any real endpoint (DynamoDB Local or AWS),
// so a difference between the engine and DynamoDB shows up as a failing
// case against one backend and a passing case against the other.
package paritytest
