// Package jsonerr turns encoding/json's decoding errors into plain English
// for API answers: the field at fault as a dotted path, and a message that
// says what the field must be ("must be an object of strings, not a
// number") without Go's type or struct names.
//
// The HTTP API uses it for request bodies and the built-in adapters for
// payloads, so a client never reads "cannot unmarshal number into Go struct
// field Payload.headers of type map[string]string".
package jsonerr
