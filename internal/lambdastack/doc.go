// Package lambdastack runs the stack `cdk deploy` deploys on one machine,
// wired as its synthesized CloudFormation template wires it (`ferry local`,
// `make local`): each function's real bootstrap under the Lambda Runtime
// Interface Emulator (one emulator process per concurrent instance) with the
// template's environment, memory, timeout and handler; an HTTP front that
// turns requests into API Gateway HTTP API payload 2.0 events for the
// template's routes, with the authorizer context of the route's
// authorizer; the template's schedules; a DynamoDB Streams poller doing what
// Lambda's event-source mapping does (batch size and window, filter
// criteria, starting position, partial batch responses, retries, bisect);
// and every DynamoDB request a function sends checked against the IAM
// statements of its role.
//
// Nothing here is restated from infra/: the template is the only source of
// the wiring, so a change to the stack is what runs locally.
package lambdastack
