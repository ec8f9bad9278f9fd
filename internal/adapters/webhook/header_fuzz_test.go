package webhook

import (
	"bufio"
	"bytes"
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/internal/adapters/payloadcheck"
	"github.com/ferryhq/ferry/internal/adapters/ssrfguard"
)

// FuzzHeaders proves that no payload the adapter accepts can put CR, LF or
// NUL into the request's header block: for every accepted payload, the
// request as written on the wire parses back with exactly the payload's
// headers and Ferry's own, each with the value it was given, and no value
// holds a control character.
func FuzzHeaders(f *testing.F) {
	for _, s := range []string{
		`{"url":"https://example.com/hook","headers":{"X-A":"a\r\nX-B: b"}}`,
		`{"url":"https://example.com/hook","headers":{"X-A":"a\u0085b","X-C":"tab\there"},"body":{"a":1}}`,
		`{"url":"https://example.com/hook","method":"PUT","headers":{"Authorization":"Bearer t","Content-Type":"text/plain"},"body":"x"}`,
		`{"url":"https://example.com/a%0d%0aX-B:%20b","headers":{"X-A":"1","x-a":"2"}}`,
		`{"url":"http://127.0.0.1:9000/hook","method":"POST\r\nX-B: b"}`,
	} {
		f.Add([]byte(s))
	}
	secrets, err := NewStaticSecrets(nil, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		f.Fatal(err)
	}
	a, err := New(Options{Secrets: secrets, Policy: ssrfguard.Policy{AllowPrivate: true}})
	if err != nil {
		f.Fatal(err)
	}
	ws, err := secrets.WebhookSecrets(context.Background(), "ws")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := a.decodePayload(raw)
		if err != nil {
			return
		}
		req, err := a.newRequest(context.Background(), "1-1", 1700000000, p, ws)
		if err != nil {
			t.Fatalf("accepted payload builds no request: %v", err)
		}
		var wire bytes.Buffer
		if err := req.Write(&wire); err != nil {
			t.Fatalf("writing the request: %v", err)
		}
		got, err := http.ReadRequest(bufio.NewReader(&wire))
		if err != nil {
			t.Fatalf("the request as written does not parse: %v\n%q", err, wire.String())
		}
		want := http.Header{}
		for name, value := range p.Headers {
			want.Set(name, value)
		}
		if len(p.Body) > 0 {
			if want.Get("Content-Type") == "" {
				want.Set("Content-Type", "application/json")
			}
		}
		want.Set("User-Agent", a.opts.UserAgent)
		for _, name := range []string{"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature"} {
			want[name] = got.Header[name]
		}
		got.Header.Del("Content-Length")
		if names, wantNames := slices.Sorted(maps.Keys(got.Header)), slices.Sorted(maps.Keys(want)); !slices.Equal(names, wantNames) {
			t.Fatalf("headers on the wire %v, want %v\n%q", names, wantNames, wire.String())
		}
		for name, values := range got.Header {
			if len(values) != 1 {
				t.Fatalf("header %s appears %d times", name, len(values))
			}
			if payloadcheck.ContainsControl(values[0]) {
				t.Fatalf("header %s holds a control character: %q", name, values[0])
			}
			// HTTP drops a value's surrounding white space (RFC 9110 5.5).
			if name != "Webhook-Id" && name != "Webhook-Timestamp" && name != "Webhook-Signature" && values[0] != strings.Trim(want.Get(name), " \t") {
				t.Fatalf("header %s is %q on the wire, %q in the payload", name, values[0], want.Get(name))
			}
		}
		if got.Method != p.Method {
			t.Fatalf("method %q on the wire, %q in the payload", got.Method, p.Method)
		}
	})
}
