package operator

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/ferryhq/ferry/internal/outbox"
)

// The exit codes of the operator's commands: scripts may rely on them
// (docs/operations.md lists them).
const (
	ExitOK = 0
	// ExitFailed: the command failed (DynamoDB unreachable or answering an
	// error, an unexpected answer).
	ExitFailed = 1
	// ExitUsage: a flag or an argument is wrong.
	ExitUsage = 2
	// ExitNotFound: the table, or the action, does not exist (or an action
	// was erased, or its retention ended).
	ExitNotFound = 3
	// ExitRefused: the action's state does not allow what was asked (a
	// started or ended action cannot be cancelled; an ended action never
	// changes, so there is no retry).
	ExitRefused = 4
	// ExitNotConfirmed: a destructive command was not confirmed (answered
	// no, or no terminal to ask on and no --yes).
	ExitNotConfirmed = 5
	// ExitDenied: the credentials may not do what the command needs (the
	// message names the permission).
	ExitDenied = 6
	// ExitLayout: the table is not a Ferry table of this build's layout
	// (no marker, or another layout version: outbox.LayoutError); nothing
	// was written.
	ExitLayout = 7
)

// Error is a command's failure with its exit code.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func fail(code int, format string, args ...any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// ExitCode is the exit code for err: its *Error's code, or the code its
// cause calls for.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return classify(err).Code
}

// classify gives an engine or DynamoDB error its exit code and a message
// that names what is missing.
func classify(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var te *outbox.TransitionError
	var ve *outbox.ValidationError
	var nf *types.ResourceNotFoundException
	var api smithy.APIError
	switch {
	case errors.Is(err, outbox.ErrNotFound):
		return &Error{Code: ExitNotFound, Err: err}
	case errors.Is(err, outbox.ErrLayout):
		return &Error{Code: ExitLayout, Err: err}
	case errors.As(err, &te):
		return &Error{Code: ExitRefused, Err: err}
	case errors.As(err, &ve):
		return &Error{Code: ExitUsage, Err: err}
	case errors.As(err, &nf):
		return &Error{Code: ExitNotFound, Err: fmt.Errorf("the table was not found (check --table, --region, --dynamodb-endpoint): %w", err)}
	case errors.As(err, &api) && (api.ErrorCode() == "AccessDeniedException" || api.ErrorCode() == "UnrecognizedClientException"):
		return &Error{Code: ExitDenied, Err: fmt.Errorf("permission denied (the message names the action the credentials lack): %w", err)}
	case errors.Is(err, context.Canceled):
		return &Error{Code: ExitFailed, Err: errors.New("interrupted")}
	}
	return &Error{Code: ExitFailed, Err: err}
}
