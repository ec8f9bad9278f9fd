package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Payload is the webhook kind's payload (API.md, "Built-in kinds").
type Payload struct {
	URL     string            `json:"url"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
}

// DefaultMethods are the methods a payload may use unless configured
// otherwise. Safe methods (GET, HEAD) are left out: a webhook delivers data.
var DefaultMethods = []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// reservedHeaders may not be set by a payload: hop-by-hop headers belong to
// the connection, and the rest are set by the adapter (or by net/http from
// the request itself).
var reservedHeaders = []string{
	"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
	"proxy-authenticate", "proxy-authorization", "host", "content-length", "expect",
}

// decodePayload decodes and checks a payload; errors are *outbox.PayloadError.
func (a *Adapter) decodePayload(raw json.RawMessage) (*Payload, error) {
	var p Payload
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, &outbox.PayloadError{Message: fmt.Sprintf("not a webhook payload: %v", err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &outbox.PayloadError{Message: "trailing data after the payload object"}
	}
	if p.URL == "" {
		return nil, &outbox.PayloadError{Field: "url", Message: "required"}
	}
	if _, err := a.opts.Policy.CheckURL(p.URL); err != nil {
		return nil, &outbox.PayloadError{Field: "url", Message: err.Error()}
	}
	if p.Method == "" {
		p.Method = http.MethodPost
	}
	if !slices.Contains(a.opts.Methods, p.Method) {
		return nil, &outbox.PayloadError{Field: "method", Message: fmt.Sprintf("must be one of %s", strings.Join(a.opts.Methods, ", "))}
	}
	for name, value := range p.Headers {
		field := "headers." + name
		if !validHeaderName(name) {
			return nil, &outbox.PayloadError{Field: field, Message: "not a valid header name"}
		}
		lower := strings.ToLower(name)
		if slices.Contains(reservedHeaders, lower) || strings.HasPrefix(lower, "webhook-") {
			return nil, &outbox.PayloadError{Field: field, Message: "set by Ferry; a payload may not override it"}
		}
		if strings.ContainsAny(value, "\r\n\x00") {
			return nil, &outbox.PayloadError{Field: field, Message: "value must not contain CR, LF or NUL"}
		}
	}
	if len(p.Body) > 0 && !json.Valid(p.Body) {
		return nil, &outbox.PayloadError{Field: "body", Message: "not valid JSON"}
	}
	return &p, nil
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
