package webhook

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/ferryhq/ferry/internal/adapters/payloadcheck"
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

// Limits of the header-bound fields (API.md, "webhook"). Receivers and
// proxies commonly refuse request header blocks over 8 to 16 KiB; these
// keep a payload's headers well inside that.
const (
	// MaxHeaders is the most headers a payload may set.
	MaxHeaders = 50
	// MaxHeaderName bounds a header name, in bytes.
	MaxHeaderName = 256
	// MaxHeaderValue bounds a header value, in bytes.
	MaxHeaderValue = 8192
	// MaxURL bounds the URL, in bytes (it is the request line, and its
	// host the Host header).
	MaxURL = 8192
)

// decodePayload decodes and checks a payload; errors are *outbox.PayloadError.
// Everything that reaches the request line or a header (url, method,
// headers) is checked for control characters and length, so no payload can
// add or split a header (issue 13).
func (a *Adapter) decodePayload(raw json.RawMessage) (*Payload, error) {
	var p Payload
	if problem := payloadcheck.Decode(raw, &p, Kind); problem != nil {
		return nil, &outbox.PayloadError{Field: problem.Field, Message: problem.Message}
	}
	if p.URL == "" {
		return nil, &outbox.PayloadError{Field: "url", Message: "required"}
	}
	if problem := payloadcheck.HeaderText(p.URL, MaxURL); problem != "" {
		return nil, &outbox.PayloadError{Field: "url", Message: problem}
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
	if err := checkHeaders(p.Headers); err != nil {
		return nil, err
	}
	if len(p.Body) > 0 && !json.Valid(p.Body) {
		return nil, &outbox.PayloadError{Field: "body", Message: "not valid JSON"}
	}
	return &p, nil
}

// checkHeaders checks the payload's headers: at most MaxHeaders, each name
// an RFC 9110 token of at most MaxHeaderName bytes that neither Ferry nor
// the connection owns, named once (names are case-insensitive), and each
// value free of control characters (as net/http requires: no CR, LF, NUL
// or other control character but tab) and at most MaxHeaderValue bytes.
func checkHeaders(headers map[string]string) error {
	if len(headers) > MaxHeaders {
		return &outbox.PayloadError{Field: "headers", Message: fmt.Sprintf("%d headers; at most %d are allowed", len(headers), MaxHeaders)}
	}
	seen := make(map[string]string, len(headers))
	// Sorted, so the same payload always names the same field.
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		if len(name) > MaxHeaderName || !validHeaderName(name) {
			return &outbox.PayloadError{Field: "headers",
				Message: fmt.Sprintf("%.64q is not a valid header name (a token of at most %d bytes)", name, MaxHeaderName)}
		}
		field := "headers." + name
		lower := strings.ToLower(name)
		if slices.Contains(reservedHeaders, lower) || strings.HasPrefix(lower, "webhook-") {
			return &outbox.PayloadError{Field: field, Message: "set by Ferry; a payload may not override it"}
		}
		if first, ok := seen[lower]; ok {
			return &outbox.PayloadError{Field: field, Message: fmt.Sprintf("names the same header as %q (header names are case-insensitive)", first)}
		}
		seen[lower] = name
		if problem := payloadcheck.HeaderText(headers[name], MaxHeaderValue); problem != "" {
			return &outbox.PayloadError{Field: field, Message: problem}
		}
	}
	return nil
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
