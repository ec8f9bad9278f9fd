// Package storetest is the outbox's store conformance suite: one Exercise
// function that runs every protocol case of the engine against a DynamoDB
// backend (the embedded DynamoDB in-process or over HTTP, or a real
// endpoint). Every backend must pass all of it.
package storetest
