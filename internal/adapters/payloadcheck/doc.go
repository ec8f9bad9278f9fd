// Package payloadcheck holds the checks every built-in adapter applies to a
// payload at enqueue: a strict decode whose errors are plain English and
// name the field, and the rule for text that ends up in a protocol header
// (an email header, an HTTP header, an SES or EventBridge request field):
// no control character (CR, LF, NUL and the rest, tab aside) and a bounded
// length, so no payload can add a header or split one.
package payloadcheck
