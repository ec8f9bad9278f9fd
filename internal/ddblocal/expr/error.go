package expr

import "fmt"

// Error is a DynamoDB ValidationException-class error. Message is DynamoDB's
// wording where it is known, so the HTTP front end can return it verbatim.
type Error struct {
	Message string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// errorf builds an *Error.
func errorf(format string, args ...any) *Error {
	return &Error{Message: fmt.Sprintf(format, args...)}
}

// Messages DynamoDB returns while applying an update to an item. They carry no
// "Invalid UpdateExpression" prefix because the expression itself is valid;
// the item is what makes it fail.
const (
	msgMissingOperand   = "The provided expression refers to an attribute that does not exist in the item"
	msgIncorrectOperand = "An operand in the update expression has an incorrect data type"
	msgInvalidPath      = "The document path provided in the update expression is invalid for update"
)
