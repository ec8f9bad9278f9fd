// Package coldstart is what a Ferry Lambda function does at its cold start:
// read and validate its configuration from the environment (docs/api.md,
// "The functions' environment"), then build JSON logs and EMF metrics on
// stdout (internal/telemetry), the DynamoDB client (honouring the AWS SDK's
// own variables such as AWS_ENDPOINT_URL_DYNAMODB), the built-in adapters
// and the engine. The functions' main packages call New and hand the pieces
// to their handler (internal/handlers).
//
// Every function refuses to start with an error that names the offending
// variable, so a bad deploy fails on its first invocation instead of
// misbehaving later. Defaults and the timing rules (the write margin shorter
// than the lease, the clock skew shorter than the margin) are the engine's
// own (outbox.Config): Load applies and checks them, it does not restate
// them. The package takes a getenv function rather than reading os.Getenv
// itself so that tests can supply their own environment.
package coldstart
