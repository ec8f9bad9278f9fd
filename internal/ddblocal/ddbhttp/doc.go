// Package ddbhttp serves an in-memory DynamoDB engine over DynamoDB's own
// wire protocol (JSON 1.0), so that the AWS SDKs, the AWS CLI and SAM can talk
// to Ferry's embedded DynamoDB unmodified.
//
// The package knows nothing about storage: it decodes each request body into
// the aws-sdk-go-v2 input struct of the operation named by X-Amz-Target,
// calls the matching method of a Backend (which has the method set of
// *dynamodb.Client), and encodes the output struct, or the error, exactly as
// DynamoDB does on the wire: AttributeValue unions as {"S":"x"}, blobs as
// base64, timestamps as epoch seconds, errors as a 400 (or 500) with a
// namespaced "__type", and an X-Amz-Crc32 header over every response body so
// that SDK checksum validation passes.
//
// Signatures are not verified: any SigV4 credentials are accepted.
package ddbhttp
