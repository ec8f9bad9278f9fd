package jsonerr_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/jsonerr"
)

type payload struct {
	Headers map[string]string `json:"headers"`
	To      []string          `json:"to"`
	N       int               `json:"n"`
	Ok      bool              `json:"ok"`
	Body    json.RawMessage   `json:"body"`
	Due     time.Time         `json:"due"`
	Sub     struct {
		A float64 `json:"a"`
	} `json:"sub"`
}

func decode(s string) error {
	var p payload
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	return dec.Decode(&p)
}

// TestDescribe pins the plain-English answer of each error encoding/json
// gives for a mistyped or unknown field, and that none of them names a Go
// type or struct.
func TestDescribe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in    string
		field string
		msg   string
	}{
		{`{"headers":1}`, "headers", "must be an object of strings, not a number"},
		{`{"headers":{"X-A":1}}`, "headers", "every value must be a string, not a number"},
		{`{"to":["a",2]}`, "to", "every element must be a string, not a number"},
		{`{"to":"a"}`, "to", "must be an array of strings, not a string"},
		{`{"n":1.5}`, "n", "must be an integer, not 1.5"},
		{`{"n":"1"}`, "n", "must be an integer, not a string"},
		{`{"ok":1}`, "ok", "must be a boolean (true or false), not a number"},
		{`{"sub":{"a":"x"}}`, "sub.a", "must be a number, not a string"},
		{`{"sub":[]}`, "sub", "must be an object, not an array"},
		{`{"x":1}`, "x", "unknown field"},
		{`[]`, "", "must be an object, not an array"},
		{`{"due":"tomorrow"}`, "", "holds a time that is not an RFC 3339 time such as 2026-12-01T00:00:00Z"},
		{`{"n":`, "", "is not valid JSON: it ends too early"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			err := decode(tc.in)
			require.Error(t, err)
			p := jsonerr.Describe(err, &payload{})
			require.Equal(t, tc.field, p.Field)
			require.Equal(t, tc.msg, p.Message)
			require.NotContains(t, p.Message, "Go ")
			require.NotContains(t, p.Message, "unmarshal")
		})
	}
	t.Run("Syntax", func(t *testing.T) {
		var v payload
		p := jsonerr.Describe(json.Unmarshal([]byte(`{"n":x}`), &v), &v)
		require.Equal(t, "is not valid JSON (at byte 6): invalid character 'x' looking for beginning of value", p.Message)
	})
}
