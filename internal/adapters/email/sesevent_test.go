package email

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// sesSample loads events/<name> and returns its EventBridge detail.
func sesSample(t *testing.T, name string) json.RawMessage {
	t.Helper()
	detail, _ := sesSampleTyped(t, name)
	return detail
}

// sesSampleTyped loads events/<name> and returns its EventBridge detail
// and detail-type.
func sesSampleTyped(t *testing.T, name string) (json.RawMessage, string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "events", name))
	require.NoError(t, err)
	var ev struct {
		Source     string          `json:"source"`
		DetailType string          `json:"detail-type"`
		Detail     json.RawMessage `json:"detail"`
	}
	require.NoError(t, json.Unmarshal(raw, &ev))
	require.Equal(t, "aws.ses", ev.Source)
	return ev.Detail, ev.DetailType
}

// sampleMessageID is SES's message id in every sample of events/.
const sampleMessageID = "0102019a1b2c3d4e-5f6a7b8c-9d0e-4f1a-8b2c-3d4e5f6a7b8c-000000"

// TestParseSESEvent reads each SES event sample in events/ and keeps no
// address and no header of it.
func TestParseSESEvent(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]outbox.DeliveryEvent{
		"ses-send.json": {Status: outbox.DeliverySent, At: time.Date(2026, 12, 1, 10, 0, 0, 120e6, time.UTC), Detail: "accepted by SES"},
		"ses-delivery.json": {Status: outbox.DeliveryDelivered, At: time.Date(2026, 12, 1, 10, 0, 1, 456e6, time.UTC),
			Detail: "delivered to 1 recipient in 1336 ms"},
		"ses-bounce.json": {Status: outbox.DeliveryBounced, At: time.Date(2026, 12, 1, 10, 0, 2, 789e6, time.UTC),
			Detail: "Permanent bounce (General) of 1 recipient, status 5.1.1"},
		"ses-complaint.json": {Status: outbox.DeliveryComplained, At: time.Date(2026, 12, 1, 10, 59, 58, 0, time.UTC),
			Detail: "complaint (abuse) from 1 recipient"},
		"ses-reject.json": {Status: outbox.DeliveryRejected, At: time.Date(2026, 12, 1, 10, 0, 0, 120e6, time.UTC), Detail: "rejected by SES: Bad content"},
		"ses-delivery-delay.json": {Status: outbox.DeliveryDelayed, At: time.Date(2026, 12, 1, 10, 29, 59, 0, time.UTC),
			Detail: "delivery to 1 recipient delayed (TransientCommunicationFailure)"},
	} {
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			t.Parallel()
			detail, detailType := sesSampleTyped(t, name)
			ev, err := ParseSESEvent(detail)
			require.NoError(t, err)
			require.Equal(t, "01m8kjt9g0bvpgyzgh00b1", ev.ActionID)
			want.Ref = sampleMessageID
			require.Equal(t, want, ev.DeliveryEvent)
			require.Equal(t, detailType, SESDetailTypes[ev.Type], "the detail-type SES publishes the record as")
			require.Equal(t, []string{"ferry"}, ev.ConfigurationSets)
			require.NotContains(t, ev.Detail, "@", "no address in the evidence")
		})
	}
}

func TestParseSESEventRefuses(t *testing.T) {
	t.Parallel()
	_, err := ParseSESEvent(json.RawMessage(`{"eventType":"Send","mail":{"timestamp":"2026-12-01T10:00:00Z","tags":{"ses:configuration-set":["ferry"]}},"send":{}}`))
	require.ErrorIs(t, err, ErrNotFerry)
	_, err = ParseSESEvent(json.RawMessage(`{"eventType":"Open","mail":{"timestamp":"2026-12-01T10:00:00Z","tags":{"ferry_action_id":["1-1"]}},"open":{}}`))
	require.ErrorContains(t, err, `"Open" is not delivery evidence`)
	_, err = ParseSESEvent(json.RawMessage(`[1]`))
	require.Error(t, err)
	_, err = ParseSESEvent(json.RawMessage(`{"eventType":"Send","mail":{"tags":{"ferry_action_id":["1-1"]}},"send":{}}`))
	require.ErrorContains(t, err, "no timestamp")
}

// TestActionIDOfTagInvertsTagValue: ids that are not tag-safe travel
// base64url-encoded and come back as they were.
func TestActionIDOfTagInvertsTagValue(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"3-17", "01JDQ7ZC3V0000000000000000", "ws/odd id+ü"} {
		got, err := ActionIDOfTag(TagValue(id))
		require.NoError(t, err)
		require.Equal(t, id, got)
	}
	_, err := ActionIDOfTag("b64_!!")
	require.Error(t, err)
}

func FuzzParseSESEvent(f *testing.F) {
	f.Add([]byte(`{"eventType":"Bounce","mail":{"timestamp":"2026-12-01T10:00:00Z","tags":{"ferry_action_id":["b64_MS0x"]}},"bounce":{"bounceType":"Permanent","bouncedRecipients":[{"status":"5.1.1"}]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ev, err := ParseSESEvent(raw)
		if err != nil {
			return
		}
		if !ev.Status.Valid() || ev.At.IsZero() || ev.ActionID == "" {
			t.Fatalf("accepted %q as %+v", raw, ev)
		}
	})
}
