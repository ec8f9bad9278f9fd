package eventbridge_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// TestHeaderFieldsRefuseInjection: source, detail_type and event_bus
// travel as request fields beside the event; each refuses control
// characters, overlong values and (event_bus) anything that is not a bus
// name or ARN at enqueue, naming the field. Before issue 13 only their
// lengths were checked.
func TestHeaderFieldsRefuseInjection(t *testing.T) {
	t.Parallel()
	a := newAdapter(t, "http://127.0.0.1:1")
	for _, tc := range []struct {
		name  string
		field string
		value string
	}{
		{"SourceCRLF", "source", "orders\r\nX-B: b"},
		{"SourceNUL", "source", "orders\x00"},
		{"SourceAWSPrefix", "source", "aws.s3"},
		{"SourceTooLong", "source", strings.Repeat("s", 257)},
		{"DetailTypeLF", "detail_type", "Order\nShipped"},
		{"DetailTypeTooLong", "detail_type", strings.Repeat("t", 129)},
		{"EventBusCRLF", "event_bus", "orders\r\nX-B: b"},
		{"EventBusSpace", "event_bus", "my bus"},
		{"EventBusNotAnARN", "event_bus", "arn:aws:sqs:eu-west-1:123456789012:queue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := map[string]any{"source": "orders", "detail_type": "Order Shipped", "detail": map[string]any{}}
			p[tc.field] = tc.value
			raw, err := json.Marshal(p)
			require.NoError(t, err)
			var pe *outbox.PayloadError
			require.ErrorAs(t, a.Validate("", raw), &pe)
			require.Equal(t, tc.field, pe.Field, "%v", pe)
		})
	}
	for _, bus := range []string{"orders", "default", "arn:aws:events:eu-west-1:123456789012:event-bus/orders", "partner/acme.com/x_y-z"} {
		raw, err := json.Marshal(map[string]any{"source": "orders", "detail_type": "Order Shipped", "detail": map[string]any{}, "event_bus": bus})
		require.NoError(t, err)
		require.NoError(t, a.Validate("", raw), bus)
	}
}
