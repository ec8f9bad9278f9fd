// Package expr is the expression language and value semantics of Ferry's
// embedded DynamoDB: it parses and evaluates ConditionExpression,
// FilterExpression, UpdateExpression, ProjectionExpression and
// KeyConditionExpression, and it owns DynamoDB's rules for attribute values
// (number precision and range, ordering, equality, item sizes).
//
// Values are aws-sdk-go-v2 types (types.AttributeValue) so the storage engine
// and the HTTP front end share one representation with the SDK. Numbers are
// exact decimals (github.com/cockroachdb/apd/v3) with DynamoDB's 38
// significant digits, never float64.
//
// A request's expressions share one Usage (NewUsage): it resolves #names and
// :values, and afterwards CheckAllUsed refuses unused ones as DynamoDB does;
// Usage.Validate checks the maps themselves first. Parsed expressions
// (Condition, Update, Projection, KeyCondition) are immutable and safe for
// concurrent use; a Usage belongs to one request. KeyCondition.ForSchema
// places the partition and sort key conditions by the key schema, and
// Update.UpdatedAttributes gives what ReturnValues UPDATED_OLD/UPDATED_NEW
// return. CanonicalValue rewrites numbers the way DynamoDB returns them.
//
// Every refusal is an *Error, the ValidationException class, worded the way
// DynamoDB words it where the wording is known. The behaviour follows the AWS
// DynamoDB Developer Guide pages "Condition and filter expressions, operators,
// and functions", "Using update expressions", "Using projection
// expressions", "Expression attribute names (aliases)", "Using expression
// attribute values", "Item sizes and formats" and "Key condition
// expressions"; the subtle cases cite their source next to the code.
package expr
