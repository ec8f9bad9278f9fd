// Package boundaries holds no code: its test enforces the package
// boundaries of the design (docs/design.md, "Packages and their
// boundaries") on the module's real import graph (`go list -deps`):
//
//   - the engine (internal/outbox and every package under it, storetest
//     included) imports neither the embedded DynamoDB (internal/ddblocal),
//     nor an adapter, nor aws-lambda-go, nor any provider SDK: of the AWS
//     SDK's services it knows DynamoDB alone;
//   - a function binary (functions/*) does not link the embedded DynamoDB;
//   - an adapter (a package under internal/adapters that implements a kind,
//     that is, imports internal/outbox) imports no other adapter;
//   - the Examples of public packages (the library's front page and
//     ferrytest) import no internal package.
package boundaries
