package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ferryhq/ferry/internal/operator"
)

// flagError is a refused flag in plain words, exit 2: `--partitions "abc":
// want a whole number` rather than pflag's `strconv.ParseInt: parsing
// "abc": invalid syntax`.
func flagError(err error) error {
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		f := bad.GetFlag()
		err = fmt.Errorf("--%s %q: want %s", f.Name, bad.GetValue(), flagWants(f.Value.Type()))
	}
	return &operator.Error{Code: operator.ExitUsage, Err: err}
}

// flagWants says what a flag of pflag's type takes.
func flagWants(typ string) string {
	switch typ {
	case "int", "int64", "int32":
		return "a whole number"
	case "uint", "uint64", "uint32":
		return "a whole number, 0 or more"
	case "float64", "float32":
		return "a number such as 0.25"
	case "duration":
		return "a duration such as 250ms, 30s, 5m or 1h30m"
	case "bool":
		return "true or false"
	}
	return "a " + typ
}

// checkEndpoint refuses a --dynamodb-endpoint (or the variable it came
// from) that is not an http or https URL with a host, before the AWS SDK
// turns it into `Post "/notaurl": unsupported protocol scheme ""`.
func checkEndpoint(name, endpoint string) error {
	if endpoint == "" {
		return nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.ContainsAny(endpoint, " \t") {
		return &operator.Error{Code: operator.ExitUsage,
			Err: fmt.Errorf("%s %q: want the endpoint's URL, such as http://127.0.0.1:8000 (ferry dynamodb's default)", name, endpoint)}
	}
	return nil
}
