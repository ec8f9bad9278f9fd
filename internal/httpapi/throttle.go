package httpapi

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// throttleCodes are DynamoDB error codes that mean "too much at once": the
// caller should retry after a short wait (HTTP 429).
var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"RequestLimitExceeded":                   true,
	"ThrottlingException":                    true,
	"TransactionConflictException":           true,
	"TransactionInProgressException":         true,
}

// transientReasons are the cancellation reasons of a transaction that
// failed only because of load or a concurrent transaction.
var transientReasons = map[string]bool{
	"TransactionConflict":           true,
	"ThrottlingError":               true,
	"ProvisionedThroughputExceeded": true,
}

// isThrottle reports whether err, anywhere in its chain, is a DynamoDB
// throttle or transient conflict, alone or as the only reasons of a
// cancelled transaction.
func isThrottle(err error) bool {
	var tc *types.TransactionCanceledException
	if errors.As(err, &tc) {
		transient := false
		for _, r := range tc.CancellationReasons {
			code := ""
			if r.Code != nil {
				code = *r.Code
			}
			switch {
			case code == "" || code == "None":
			case transientReasons[code]:
				transient = true
			default:
				return false
			}
		}
		return transient
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && throttleCodes[ae.ErrorCode()]
}
