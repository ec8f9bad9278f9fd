package eventbridge

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/ferryhq/ferry/internal/adapters/payloadcheck"
)

// FuzzHeaders proves that no payload the adapter accepts puts a control
// character into the entry's fields beside the detail (source, detail
// type, bus), and that the detail sent is a JSON object carrying the
// action id.
func FuzzHeaders(f *testing.F) {
	for _, s := range []string{
		`{"source":"orders\r\nX: y","detail_type":"t","detail":{}}`,
		`{"source":"orders","detail_type":"Order Shipped","event_bus":"arn:aws:events:eu-west-1:123456789012:event-bus/orders","detail":{"a":[1,2]}}`,
		`{"source":"orders","detail_type":"t\u2028","detail":{}}`,
		`{"source":"orders","detail_type":"t","event_bus":"a\nb","detail":{"x":"\r\n"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, detail, err := decodePayload(raw)
		if err != nil {
			return
		}
		entry, err := buildEntry(p, detail, "1-1")
		if err != nil {
			t.Fatalf("accepted payload builds no entry: %v", err)
		}
		for _, v := range []string{aws.ToString(entry.Source), aws.ToString(entry.DetailType), aws.ToString(entry.EventBusName)} {
			if payloadcheck.ContainsControl(v) {
				t.Fatalf("accepted payload puts %q into an entry field", v)
			}
		}
		var sent map[string]json.RawMessage
		if err := json.Unmarshal([]byte(aws.ToString(entry.Detail)), &sent); err != nil {
			t.Fatalf("the detail sent is not a JSON object: %v", err)
		}
		if string(sent[ActionIDField]) != `"1-1"` {
			t.Fatalf("the detail carries %s as the action id", sent[ActionIDField])
		}
	})
}
