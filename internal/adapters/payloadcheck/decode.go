package payloadcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/ferryhq/ferry/internal/jsonerr"
)

// Decode decodes raw into v (a pointer to the kind's payload struct),
// refusing unknown fields and trailing data. kind names the payload in the
// messages ("not a webhook payload"). A refusal comes back as a problem in
// plain English, naming the field when one is at fault, for the adapter to
// return as an *outbox.PayloadError; nil means v holds the payload. The
// package imports no engine type, so it is no adapter of its own.
func Decode(raw json.RawMessage, v any, kind string) *jsonerr.Problem {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		p := jsonerr.Describe(err, v)
		if p.Field == "" && !isTypeError(err) {
			p.Message = "not " + article(kind) + " " + kind + " payload: it " + p.Message
		}
		return &p
	}
	if _, err := dec.Token(); err != io.EOF {
		return &jsonerr.Problem{Message: "trailing data after the payload object"}
	}
	return nil
}

func isTypeError(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te)
}

func article(word string) string {
	if word != "" && bytes.ContainsRune([]byte("aeiou"), rune(word[0])) {
		return "an"
	}
	return "a"
}
