// Package infra is Ferry's AWS CDK app: one stack with the DynamoDB table of
// docs/design.md §3, the enqueue, drainer, reaper and retention
// functions (built by `make build` into bin/<function>/bootstrap), their
// least-privilege roles, the HTTP API, the schedules and the stream
// wake-up, alarms, a dashboard, and cdk-nag's AwsSolutions checks.
//
// NewStack takes typed Props; Props.Validate refuses inconsistent settings
// (timing rules included) with messages naming the props. The app in
// cmd/ferry-infra reads the props from the CDK context key "ferry"
// (ConfigFromContext). docs/deploy.md is the operator's guide.
package infra
