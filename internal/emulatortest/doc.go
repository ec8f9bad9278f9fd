// Package emulatortest runs Ferry's Lambda functions the way Lambda does,
// on this machine: each function is built as a `bootstrap` for the local
// architecture and run under the AWS Lambda Runtime Interface Emulator,
// against an embedded DynamoDB served over HTTP (`ferry dynamodb`) and a
// local stand-in for SES v2, Secrets Manager and EventBridge, so no request
// leaves the loopback interface. The test sends the samples in events/ and
// checks the answers and the table, and reports each bootstrap's size and
// its cold (first) and warm invocation times.
//
// It is behind the build tag emulator and needs the emulator; run it
// with `make lambda-local`.
package emulatortest
