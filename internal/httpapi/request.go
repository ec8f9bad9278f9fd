package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ferryhq/ferry/internal/jsonerr"
)

// Documented limits of the enqueue body (see the OpenAPI document).
const (
	// MaxBatch is the most actions one POST /v1/actions:batch takes.
	MaxBatch = 25
	// MaxKeyBytes bounds every identifier field (kind, workspace_id,
	// lane_key, idempotency_key, subject_id).
	MaxKeyBytes = 256
	// MaxKindBytes bounds kind.
	MaxKindBytes = 64
	// MaxMaxAttempts bounds max_attempts.
	MaxMaxAttempts = 100
)

// EnqueueRequest is the body of POST /v1/actions and one element of a batch.
// Pointer fields are optional (absent or null); Payload is required and is
// kept compact. It marshals back to the JSON it was decoded from, field for
// field.
type EnqueueRequest struct {
	Kind           string          `json:"kind"`
	WorkspaceID    *string         `json:"workspace_id,omitempty"`
	LaneKey        *string         `json:"lane_key,omitempty"`
	IdempotencyKey *string         `json:"idempotency_key,omitempty"`
	Payload        json.RawMessage `json:"payload"`
	SubjectID      *string         `json:"subject_id,omitempty"`
	MaxAttempts    *int            `json:"max_attempts,omitempty"`
	ExpiresAt      *time.Time      `json:"expires_at,omitempty"`
	Propose        *bool           `json:"propose,omitempty"`
}

// enqueueWire is what the body is decoded into: expires_at as text so its
// error can be ours, not encoding/json's.
type enqueueWire struct {
	Kind           *string         `json:"kind"`
	WorkspaceID    *string         `json:"workspace_id"`
	LaneKey        *string         `json:"lane_key"`
	IdempotencyKey *string         `json:"idempotency_key"`
	Payload        json.RawMessage `json:"payload"`
	SubjectID      *string         `json:"subject_id"`
	MaxAttempts    *int            `json:"max_attempts"`
	ExpiresAt      *string         `json:"expires_at"`
	Propose        *bool           `json:"propose"`
}

type batchWire struct {
	Actions []json.RawMessage `json:"actions"`
}

// Limits are the size caps applied while decoding.
type Limits struct {
	MaxBody    int // bytes of a request body
	MaxPayload int // bytes of one action's payload, compacted
}

// DecodeEnqueue decodes and validates one enqueue body strictly. Errors are
// *apiError values naming the field (400, or 413 for the payload cap).
func DecodeEnqueue(body []byte, lim Limits) (*EnqueueRequest, error) {
	if err := scanStrict(body); err != nil {
		return nil, malformed(err)
	}
	return decodeEnqueueValue(body, "", lim)
}

// DecodeBatch decodes and validates a batch body: {"actions":[…]} with 1 to
// MaxBatch actions. Errors name the field as actions[i].field.
func DecodeBatch(body []byte, lim Limits) ([]*EnqueueRequest, error) {
	if err := scanStrict(body); err != nil {
		return nil, malformed(err)
	}
	var w batchWire
	if err := strictUnmarshal(body, &w, "", "actions"); err != nil {
		return nil, err
	}
	switch {
	case w.Actions == nil:
		return nil, fieldError("actions", "is required (an array of 1 to %d actions)", MaxBatch)
	case len(w.Actions) == 0:
		return nil, fieldError("actions", "must hold at least one action")
	case len(w.Actions) > MaxBatch:
		return nil, fieldError("actions", "holds %d actions; at most %d are allowed", len(w.Actions), MaxBatch)
	}
	out := make([]*EnqueueRequest, len(w.Actions))
	for i, raw := range w.Actions {
		r, err := decodeEnqueueValue(raw, fmt.Sprintf("actions[%d].", i), lim)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

func malformed(err error) *apiError {
	var se *syntaxError
	field := ""
	if errors.As(err, &se) {
		field = se.Path
	}
	return &apiError{Status: http.StatusBadRequest, Code: CodeMalformedJSON, Field: field, Message: err.Error()}
}

// strictUnmarshal decodes a document already checked by scanStrict,
// refusing unknown fields and mistyped values with errors naming the field
// (prefix is prepended: "actions[3].").
func strictUnmarshal(data []byte, v any, prefix string, known ...string) error {
	if err := checkFieldNames(data, prefix, known); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field == "" {
		return &apiError{Status: http.StatusBadRequest, Code: CodeInvalidField, Field: strings.TrimSuffix(prefix, "."),
			Message: fmt.Sprintf("%s: must be a JSON object, not %s", orBody(strings.TrimSuffix(prefix, ".")), jsonerr.Held(te))}
	}
	p := jsonerr.Describe(err, v)
	if te != nil || p.Message == "unknown field" {
		return fieldError(prefix+p.Field, "%s", p.Message)
	}
	return &apiError{Status: http.StatusBadRequest, Code: CodeMalformedJSON, Field: strings.TrimSuffix(prefix, "."),
		Message: orBody(strings.TrimSuffix(prefix, ".")) + ": " + p.Message}
}

// rfc3339 is RFC 3339's date-time grammar (upper-case T and Z).
var rfc3339 = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$`)

// enqueueFields are the exact names of an enqueue body's fields.
var enqueueFields = []string{"kind", "workspace_id", "lane_key", "idempotency_key", "payload", "subject_id", "max_attempts", "expires_at", "propose"}

// checkFieldNames refuses object keys that are not exactly one of known.
// encoding/json matches field names case-insensitively ("KIND" fills kind),
// which would let a strict reader and this one disagree; this check makes
// the match exact. Data that is not an object is left to the decoder.
func checkFieldNames(data []byte, prefix string, known []string) error {
	if len(known) == 0 {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return nil
	}
	var unknown []string
	for k := range obj {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return fieldError(prefix+unknown[0], "unknown field")
}

func orBody(s string) string {
	if s == "" {
		return "body"
	}
	return s
}

func decodeEnqueueValue(data []byte, prefix string, lim Limits) (*EnqueueRequest, error) {
	var w enqueueWire
	if err := strictUnmarshal(data, &w, prefix, enqueueFields...); err != nil {
		return nil, err
	}
	r := &EnqueueRequest{
		WorkspaceID:    w.WorkspaceID,
		LaneKey:        w.LaneKey,
		IdempotencyKey: w.IdempotencyKey,
		SubjectID:      w.SubjectID,
		MaxAttempts:    w.MaxAttempts,
		Propose:        w.Propose,
	}
	if w.Kind == nil {
		return nil, fieldError(prefix+"kind", "is required")
	}
	r.Kind = *w.Kind
	if err := checkKey(prefix+"kind", r.Kind, MaxKindBytes); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		v    *string
	}{
		{"workspace_id", r.WorkspaceID},
		{"lane_key", r.LaneKey},
		{"idempotency_key", r.IdempotencyKey},
		{"subject_id", r.SubjectID},
	} {
		if f.v == nil {
			continue
		}
		if err := checkKey(prefix+f.name, *f.v, MaxKeyBytes); err != nil {
			return nil, err
		}
	}
	if r.WorkspaceID != nil {
		if err := checkWorkspace(prefix+"workspace_id", *r.WorkspaceID); err != nil {
			return nil, err
		}
	}
	if r.SubjectID != nil {
		if err := checkSubject(prefix+"subject_id", *r.SubjectID); err != nil {
			return nil, err
		}
	}
	if r.MaxAttempts != nil && (*r.MaxAttempts < 1 || *r.MaxAttempts > MaxMaxAttempts) {
		return nil, fieldError(prefix+"max_attempts", "must be between 1 and %d", MaxMaxAttempts)
	}
	if w.ExpiresAt != nil {
		t, err := time.Parse(time.RFC3339Nano, *w.ExpiresAt)
		// time.Parse is lenient (a one-digit hour passes); the regexp holds
		// the text to RFC 3339's grammar.
		if err != nil || !rfc3339.MatchString(*w.ExpiresAt) {
			return nil, fieldError(prefix+"expires_at", "must be an RFC 3339 time such as 2026-12-01T00:00:00Z")
		}
		t = t.UTC()
		r.ExpiresAt = &t
	}
	payload := bytes.TrimSpace(w.Payload)
	if len(payload) == 0 || bytes.Equal(payload, []byte("null")) {
		return nil, fieldError(prefix+"payload", "is required")
	}
	if payload[0] != '{' {
		return nil, fieldError(prefix+"payload", "must be a JSON object")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, payload); err != nil {
		return nil, &apiError{Status: http.StatusBadRequest, Code: CodeMalformedJSON, Field: prefix + "payload", Message: prefix + "payload: " + err.Error()}
	}
	if lim.MaxPayload > 0 && compact.Len() > lim.MaxPayload {
		return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Code: CodePayloadTooLarge, Field: prefix + "payload",
			Message: fmt.Sprintf("%spayload: %d bytes (compacted) is over the limit of %d bytes", prefix, compact.Len(), lim.MaxPayload)}
	}
	r.Payload = compact.Bytes()
	return r, nil
}

// checkKey refuses empty, oversized and control-character identifiers:
// they end up in DynamoDB keys, logs and metrics dimensions.
func checkKey(field, v string, max int) error {
	switch {
	case v == "":
		return fieldError(field, "must not be empty (omit the field instead)")
	case len(v) > max:
		return fieldError(field, "is %d bytes; at most %d are allowed", len(v), max)
	case !utf8.ValidString(v):
		return fieldError(field, "is not valid UTF-8")
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return fieldError(field, "must not contain control characters")
		}
	}
	return nil
}

// checkWorkspace refuses '#' and white space in a workspace id: the table's
// idempotency key joins workspace and key with '#', so a '#' in the
// workspace could make two workspaces' keys collide.
func checkWorkspace(field, v string) error {
	if strings.ContainsAny(v, "# \t") {
		return fieldError(field, "must not contain '#' or white space")
	}
	return nil
}

// checkSubject refuses the subject ids DELETE /v1/subjects/{subject_id}
// cannot address: "." and "..". A subject id is addressed as one path
// segment, percent-encoded ("a/b" as a%2Fb); these two are dot segments,
// which clients, proxies and routers remove from a path even
// percent-encoded (RFC 3986 6.2.2), so their actions could not be erased
// by their path.
func checkSubject(field, v string) error {
	if v == "." || v == ".." {
		return fieldError(field, "must not be %q: DELETE /v1/subjects/{subject_id} could not address it (a dot segment of a path)", v)
	}
	return nil
}
