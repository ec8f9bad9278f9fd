// Package operator is what the operator's commands of `ferry` do (ferry
// status, ferry actions list/get/cancel/admit, ferry subjects erase)
// against any Ferry table: a deployed one through the default AWS
// credential chain, or DynamoDB Local and `ferry dynamodb` through an
// endpoint. Every read and write goes through the engine
// (internal/outbox), so the commands keep the engine's conditions: a
// cancel is the engine's cancel, an erasure the engine's erasure. Every
// command meters the DynamoDB capacity it consumed and says so; its exit
// code says what happened (see ExitCode).
package operator
