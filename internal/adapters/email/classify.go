package email

import (
	"errors"
	"fmt"
	"net"
	"strings"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/ferryhq/ferry/internal/outbox"
)

// authErrorCodes are refusals by AWS's front door (authentication and
// authorisation): the request was refused before SES looked at the message,
// and new credentials or a policy fix can make a later attempt work.
var authErrorCodes = map[string]bool{
	"UnrecognizedClientException": true, "InvalidSignatureException": true, "SignatureDoesNotMatch": true,
	"ExpiredTokenException": true, "ExpiredToken": true, "IncompleteSignature": true,
	"MissingAuthenticationToken": true, "InvalidClientTokenId": true, "AccessDeniedException": true,
	"AccessDenied": true, "RequestExpired": true,
}

// classify maps a SendEmail error to an outcome. It relies on how the AWS
// SDK layers errors (smithy-go):
//
//  1. The HTTP handler wraps a failed round trip in RequestSendError, or
//     replaces it with CanceledError when the context ended. A dial error
//     (including DNS resolution) inside RequestSendError proves nothing left
//     the machine → Retry. Anything else there (reset, EOF, timeout while
//     waiting, cancellation) may have reached SES → Uncertain.
//  2. An API error means SES answered: throttling (the per-second rate, or
//     the daily quota when the message says so), LimitExceeded and paused
//     sending → Defer; rejection, unverified sender, invalid request, unknown
//     configuration set, suspended account and other 4xx → Failed;
//     authentication refusals → Retry; 5xx and anything unknown → Uncertain
//     (SES may have accepted the message before failing).
//  3. A ResponseError without an API error (an unreadable answer) →
//     Uncertain.
//  4. No RequestSendError, CanceledError or ResponseError at all: the
//     handler, which always produces a response and so always gets its
//     error wrapped in a ResponseError, never ran. The error comes from
//     serialising, resolving the endpoint, fetching credentials or
//     signing, all before the request left → Retry. (A Sender that is not
//     the SDK, like MailDir, reports its own failures this way too: a
//     MailDir write that failed delivered nothing.)
func (a *Adapter) classify(err error) outbox.Result {
	err = fmt.Errorf("email: %w", err)

	var canceled *smithy.CanceledError
	if errors.As(err, &canceled) {
		return outbox.Uncertain(err)
	}
	var sendErr *smithyhttp.RequestSendError
	if errors.As(err, &sendErr) {
		if provenNotSent(sendErr.Err) {
			return outbox.Retry(err)
		}
		return outbox.Uncertain(err)
	}

	var (
		throttled  *types.TooManyRequestsException
		limit      *types.LimitExceededException
		paused     *types.SendingPausedException
		rejected   *types.MessageRejected
		mailFrom   *types.MailFromDomainNotVerifiedException
		badRequest *types.BadRequestException
		notFound   *types.NotFoundException
		suspended  *types.AccountSuspendedException
	)
	switch {
	case errors.As(err, &throttled):
		return outbox.Defer(a.opts.ThrottleWait, err)
	case errors.As(err, &limit):
		return outbox.Defer(a.opts.QuotaWait, err)
	case errors.As(err, &paused):
		return outbox.Defer(a.opts.PausedWait, err)
	case errors.As(err, &rejected):
		return outbox.Failed(outbox.StopRejected, err)
	case errors.As(err, &mailFrom):
		return outbox.Failed(StopSenderNotVerified, err)
	case errors.As(err, &badRequest), errors.As(err, &notFound):
		return outbox.Failed(outbox.StopRejected, err)
	case errors.As(err, &suspended):
		return outbox.Failed(StopAccountSuspended, err)
	}

	status := 0
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		status = respErr.HTTPStatusCode()
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch code := apiErr.ErrorCode(); {
		case code == "Throttling" || code == "ThrottlingException":
			// SES reports both of its sending limits this way (its guide,
			// "Errors related to the sending quotas"); only the message
			// tells the daily quota from the per-second rate.
			if strings.Contains(strings.ToLower(apiErr.ErrorMessage()), "quota") {
				return outbox.Defer(a.opts.QuotaWait, err)
			}
			return outbox.Defer(a.opts.ThrottleWait, err)
		case authErrorCodes[code]:
			return outbox.Retry(err)
		case status == 429:
			return outbox.Defer(a.opts.ThrottleWait, err)
		case status >= 400 && status <= 499:
			return outbox.Failed(outbox.StopRejected, err)
		}
		return outbox.Uncertain(err)
	}
	if respErr != nil {
		return outbox.Uncertain(err)
	}
	return outbox.Retry(err)
}

// provenNotSent reports whether a round-trip error happened while dialling:
// the DNS lookup or the TCP connect failed, so no byte of the request was
// written.
func provenNotSent(err error) bool {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}
