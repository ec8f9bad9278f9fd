package operator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// DescribeDynamoDBError says in plain words what went wrong in a DynamoDB
// call, without the AWS SDK's wrapping (the operation, the attempts, the
// retry quota, request ids, Go's URL and dial errors): "cannot connect
// (connection refused)", "the table does not exist", "the endpoint
// answered HTTP 404, not as DynamoDB does". The error itself, whole, is
// for the log.
func DescribeDynamoDBError(err error) string {
	var nf *types.ResourceNotFoundException
	var send *smithyhttp.RequestSendError
	var quota ratelimit.QuotaExceededError
	var api smithy.APIError
	var garbled *smithy.DeserializationError
	switch {
	case errors.As(err, &nf):
		return "the table does not exist"
	case errors.Is(err, context.DeadlineExceeded):
		return "DynamoDB did not answer in time"
	case errors.As(err, &send):
		return "cannot connect (" + connectCause(send.Err) + ")"
	case errors.As(err, &api):
		return describeAPIError(err, api)
	case errors.As(err, &garbled):
		return notDynamoDB(err)
	case errors.As(err, &quota):
		return "DynamoDB kept failing and the client stopped retrying for now"
	}
	return err.Error()
}

// notDynamoDB says that what answered does not speak DynamoDB's protocol
// (an HTTP API, a web server, a proxy's error page).
func notDynamoDB(err error) string {
	var resp *smithyhttp.ResponseError
	status := 0
	if errors.As(err, &resp) {
		status = resp.HTTPStatusCode()
	}
	return fmt.Sprintf("the endpoint answered HTTP %d, not as DynamoDB does: is it a DynamoDB endpoint? (ferry dev's API is not; ferry dynamodb is)", status)
}

// describeAPIError words an answer DynamoDB (or whatever answered) gave.
func describeAPIError(err error, api smithy.APIError) string {
	if code := api.ErrorCode(); code != "" && code != "UnknownError" {
		if msg := api.ErrorMessage(); msg != "" {
			return fmt.Sprintf("DynamoDB refused the request: %s: %s", code, msg)
		}
		return "DynamoDB refused the request: " + code
	}
	// No DynamoDB error type in the answer.
	return notDynamoDB(err)
}

// connectCause is why a request could not be sent: the system's words
// ("connection refused", "no such host x") without Go's wrapping.
func connectCause(err error) string {
	var dns *net.DNSError
	var sys *os.SyscallError
	var ue *url.Error
	switch {
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "no such host " + dns.Name
		}
		return "cannot resolve " + dns.Name + ": " + dns.Err
	case errors.As(err, &sys):
		return sys.Err.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "timed out"
	case errors.As(err, &ue):
		return ue.Err.Error()
	}
	return err.Error()
}

// Message is err's text for a person: where an AWS SDK error is inside,
// its text is replaced by DescribeDynamoDBError's, so "error reading table
// "ferry" at http://127.0.0.1:1: operation error DynamoDB: DescribeTable,
// exceeded maximum number of attempts, 4, https response error StatusCode:
// 0, RequestID: , request send failed, Post …" reads "error reading table
// "ferry" at http://127.0.0.1:1: cannot connect (connection refused)".
func Message(err error) string {
	var op *smithy.OperationError
	if !errors.As(err, &op) {
		return err.Error()
	}
	return strings.Replace(err.Error(), op.Error(), DescribeDynamoDBError(op), 1)
}
