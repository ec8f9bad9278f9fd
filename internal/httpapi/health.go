package httpapi

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/ferryhq/ferry/internal/clock"
)

// Health defaults: how long a check's answer is reused, and how long one
// check may take.
const (
	DefaultHealthTTL     = 2 * time.Second
	DefaultHealthTimeout = 2 * time.Second
)

// healthBody answers GET /healthz.
type healthBody struct {
	Status   string `json:"status"`             // "ok" or "unavailable"
	DynamoDB string `json:"dynamodb,omitempty"` // "reachable" or "unreachable", when checked
	Reason   string `json:"reason,omitempty"`   // why unavailable
	Version  string `json:"version"`            // the build (internal/version)
}

// healthCheck runs the DynamoDB check at most once per ttl (on the injected
// clock), so a flood of /healthz costs DynamoDB one read per ttl.
type healthCheck struct {
	check   func(context.Context) error
	clock   clock.Clock
	ttl     time.Duration
	timeout time.Duration

	mu     sync.Mutex
	at     time.Time
	reason string // "" when reachable
	valid  bool
}

// status answers the cached result, checking again once it is older than
// ttl. Concurrent callers wait for the one check in progress.
func (c *healthCheck) status(ctx context.Context) (reason string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if c.valid && now.Sub(c.at) < c.ttl {
		return c.reason, nil
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	err = c.check(cctx)
	c.at, c.valid, c.reason = c.clock.Now(), true, unavailableReason(err)
	if ctx.Err() != nil {
		c.valid = false // the caller gave up: tell the next one afresh
	}
	return c.reason, err
}

// unavailableReason says, for anyone who may call /healthz, why DynamoDB
// cannot be used, without the error's details (addresses, request ids):
// those go to the log.
func unavailableReason(err error) string {
	if err == nil {
		return ""
	}
	var nf *types.ResourceNotFoundException
	var api smithy.APIError
	switch {
	case errors.As(err, &nf):
		return "the table does not exist"
	case errors.Is(err, context.DeadlineExceeded):
		return "DynamoDB did not answer in time"
	case errors.As(err, &api):
		return "DynamoDB refused the request: " + api.ErrorCode()
	}
	return "DynamoDB is unreachable"
}

// isUnavailable reports whether err says DynamoDB could not be used: the
// connection failed (refused, reset, timed out: a write may or may not
// have landed, as with any lost answer), the table is gone, or DynamoDB
// answered that it cannot serve now — a server fault (InternalServerError,
// ServiceUnavailable: the SDK's retries ran out, or the embedded DynamoDB's
// data directory has no room to log a write).
func isUnavailable(err error) bool {
	var send *smithyhttp.RequestSendError
	var nf *types.ResourceNotFoundException
	var api smithy.APIError
	return errors.As(err, &send) || errors.As(err, &nf) || (errors.As(err, &api) && api.ErrorFault() == smithy.FaultServer)
}
