// Package fnconfig reads the Lambda functions' configuration from the
// environment (API.md, "The functions' environment").
//
// Every function validates its configuration at cold start and refuses to
// start with an error that names the offending variable, so a bad deploy
// fails on its first invocation instead of misbehaving later. The package
// takes a getenv function rather than reading os.Getenv itself so that tests
// and `ferry dev` can supply their own environment.
package fnconfig
