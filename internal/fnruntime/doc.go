// Package fnruntime builds, at a Lambda function's cold start, what every
// Ferry function needs: the configuration read from the environment
// (internal/fnconfig), JSON logs and EMF metrics on stdout
// (internal/telemetry), the DynamoDB client (honouring the AWS SDK's own
// variables such as AWS_ENDPOINT_URL_DYNAMODB), the built-in adapters, and
// the engine. The functions' main packages call New and hand the pieces to
// their handler.
package fnruntime
