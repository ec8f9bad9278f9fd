// Package iamaction maps a DynamoDB request to the IAM permissions it
// needs: each action with the resource it applies to (a table, one of its
// indexes, or its stream).
//
// IAM authorizes some requests by more than their operation's name. A
// TransactWriteItems is authorized item by item (Put as dynamodb:PutItem,
// Update as dynamodb:UpdateItem, Delete as dynamodb:DeleteItem,
// ConditionCheck as dynamodb:ConditionCheckItem; "dynamodb:TransactWriteItems"
// is no IAM action), a TransactGetItems likewise (Get as dynamodb:GetItem),
// and a Query or Scan of an index needs its action on the index's ARN, not
// the table's. See "Using IAM with DynamoDB transactions" and "Actions,
// resources, and condition keys for Amazon DynamoDB" in AWS's
// documentation.
//
// Ferry uses it twice: a test records every request each function's code
// makes and derives the function's role from it (internal/functionroles),
// and a local Lambda stack can enforce a role on each request it serves.
package iamaction
