package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

var testLimits = Limits{MaxBody: DefaultMaxBody, MaxPayload: DefaultMaxPayload}

func TestScanStrict(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{
		`{}`, ` {"a":[1,-2.5e+3,true,false,null,"\u00e9\ud83d\ude00\n"]} `, `"x"`, `0`, `-0.0E-0`,
		`{"a":{"a":{"a":1}},"b":{"a":2}}`, `["a","a"]`,
	} {
		require.NoError(t, scanStrict([]byte(ok)), ok)
		require.True(t, json.Valid([]byte(ok)), ok)
	}
	for _, bad := range []string{
		``, ` `, `{`, `{"a"}`, `{"a":1,}`, `[1,]`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `nul`,
		`{"a":1}{}`, `{"a":1} x`, `{"a":1,"a":1}`, `{"x":{"b":[{"c":1,"c":2}]}}`,
		"\"\xff\"", "\"\xed\xa0\x80\"", `"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\x"`, `"\u12"`,
		"\"a\tb\"", `{'a':1}`, `NaN`, `[1 2]`,
	} {
		require.Error(t, scanStrict([]byte(bad)), "%q", bad)
	}
	deep := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	require.NoError(t, scanStrict([]byte(deep)))
	require.Error(t, scanStrict([]byte("["+deep+"]")))
}

func TestDecodeEnqueue(t *testing.T) {
	t.Parallel()
	r, err := DecodeEnqueue([]byte(`{"kind":"webhook","payload": { "url" : "https://e.com/<a>&" },
		"expires_at":"2026-12-01T01:00:00.5+01:00","max_attempts":100,"propose":false,"lane_key":null}`), testLimits)
	require.NoError(t, err)
	require.Equal(t, "webhook", r.Kind)
	require.Equal(t, `{"url":"https://e.com/<a>&"}`, string(r.Payload), "payload is kept compact and unescaped")
	require.Equal(t, "2026-12-01T00:00:00.5Z", r.ExpiresAt.Format("2006-01-02T15:04:05.999Z07:00"))
	require.Equal(t, 100, *r.MaxAttempts)
	require.False(t, *r.Propose)
	require.Nil(t, r.LaneKey, "null is absent")

	_, err = DecodeEnqueue([]byte(`{"kind":"webhook","payload":{"p":"`+strings.Repeat("x", 100)+`"}}`), Limits{MaxPayload: 64})
	var ae *apiError
	require.True(t, errors.As(err, &ae))
	require.Equal(t, 413, ae.Status)
	require.Equal(t, "payload", ae.Field)
}

func enqueueSchema(t *testing.T) *jsonschema.Schema {
	return responseSchemaAt(t, "/components/schemas/EnqueueRequest")
}

// encodeEnqueue is how a client would send a decoded request back.
func encodeEnqueue(r *EnqueueRequest) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(r)
	return bytes.TrimSpace(buf.Bytes()), err
}

func presentKeys(t *testing.T, data []byte) []string {
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &m))
	var keys []string
	for k, v := range m {
		if string(v) != "null" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// FuzzDecodeEnqueue: the decoder never panics, and whatever it accepts
// re-encodes to valid JSON with the same fields and decodes to the same
// request.
func FuzzDecodeEnqueue(f *testing.F) {
	for _, seed := range []string{
		webhookBody,
		`{"kind":"email","workspace_id":"w","lane_key":"l","idempotency_key":"k","subject_id":"s","max_attempts":3,"expires_at":"2030-01-01T00:00:00Z","propose":true,"payload":{"to":["a@b.c"],"html":"<p>&</p>"}}`,
		`{"kind":"webhook","payload":{"a":{"a":{"a":[1,2,{"b":null}]}}}}`,
		`{"kind":"x","payload":{"s":"\u00e9\ud83d\ude00\\\"\/"}}`,
		`{"kind":"webhook","kind":"webhook","payload":{}}`,
		`{"kind":"webhook","payload":{}} {}`,
		"{\"kind\":\"\xff\",\"payload\":{}}",
		`{"KIND":"webhook","payload":{}}`,
		`{"kind":"webhook","max_attempts":1e2,"payload":{}}`,
		`{"kind":"webhook","lane_key":null,"payload":{"x":-0.0e-0}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeEnqueue(data, testLimits)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.Status < 400 || ae.Status > 499 || ae.Message == "" {
				t.Fatalf("error is not a 4xx apiError: %v", err)
			}
			return
		}
		require.True(t, json.Valid(data))
		// The OpenAPI document describes everything the decoder accepts.
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		require.NoError(t, err)
		require.NoError(t, enqueueSchema(t).Validate(doc), "%s", data)
		out, err := encodeEnqueue(r)
		require.NoError(t, err)
		require.True(t, json.Valid(out), "%s", out)
		require.Equal(t, presentKeys(t, data), presentKeys(t, out))
		again, err := DecodeEnqueue(out, testLimits)
		require.NoError(t, err, "%s", out)
		require.Equal(t, r, again)
		// The payload is the same JSON value as the one sent.
		var sent map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(data, &sent))
		var x, y any
		require.NoError(t, json.Unmarshal(sent["payload"], &x))
		require.NoError(t, json.Unmarshal(r.Payload, &y))
		require.Equal(t, x, y)
	})
}
