// Package ddbhttp serves an in-memory DynamoDB engine over DynamoDB's own
// wire protocol (JSON 1.0), so that the AWS SDKs, the AWS CLI and SAM can talk
// to Ferry's embedded DynamoDB unmodified (`ferry dynamodb`).
//
// The package knows nothing about storage: it decodes each request body into
// the aws-sdk-go-v2 input struct of the operation named by X-Amz-Target,
// calls the matching method of a Backend (which has the method set of
// *dynamodb.Client), and encodes the output struct, or the error, as DynamoDB
// does on the wire: AttributeValue unions as {"S":"x"}, blobs as base64,
// enums as strings, timestamps as epoch seconds, errors as a 400 (500 for
// InternalServerError) with DynamoDB's namespaced "__type" and every member
// of the modeled error (Item, CancellationReasons, ThrottlingReasons), and an
// X-Amz-Crc32 header over every response body so that SDK checksum
// validation passes.
//
// Choices where DynamoDB's behaviour is not observable or not wanted here:
//   - Signatures are never verified; unsigned requests are served too unless
//     RequireAuthorization is given.
//   - Unknown request members are ignored and null means absent, so newer
//     clients keep working; a member of the wrong JSON type is a
//     SerializationException, an AttributeValue naming no type or several a
//     ValidationException, both before the backend is called.
//   - Enum values and every other semantic rule are the backend's to check,
//     so the HTTP face and the in-process face answer alike.
//   - Operations beyond the sixteen of Backend (UpdateTable, tags,
//     DescribeLimits, ...) are served when the backend has the method, and
//     answer UnknownOperationException otherwise.
//   - A backend error that is not an AWS API error, and a recovered panic,
//     answer InternalServerError without their text.
package ddbhttp
