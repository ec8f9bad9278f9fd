package payloadcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/ferryhq/ferry/internal/jsonerr"
	"github.com/ferryhq/ferry/internal/outbox"
)

// Decode decodes raw into v (a pointer to the kind's payload struct),
// refusing unknown fields and trailing data. kind names the payload in the
// messages ("not a webhook payload"). Errors are *outbox.PayloadError in
// plain English, naming the field when one is at fault.
func Decode(raw json.RawMessage, v any, kind string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		p := jsonerr.Describe(err, v)
		if p.Field == "" && !isTypeError(err) {
			return &outbox.PayloadError{Message: "not " + article(kind) + " " + kind + " payload: it " + p.Message}
		}
		return &outbox.PayloadError{Field: p.Field, Message: p.Message}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &outbox.PayloadError{Message: "trailing data after the payload object"}
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
