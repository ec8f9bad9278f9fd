package email

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ferryhq/ferry/internal/outbox"
)

// SESEvent is one SES event publishing record (the detail of an
// EventBridge event from source aws.ses, or an SNS or Firehose record)
// about a Ferry email, as delivery evidence.
type SESEvent struct {
	// ActionID is the email's action, from its ferry_action_id tag.
	ActionID string
	// Type is the record's eventType (Send, Delivery, ...).
	Type string
	// ConfigurationSets are the record's ses:configuration-set tag values
	// (the configuration set the email was sent through).
	ConfigurationSets []string
	// DeliveryEvent's Ref is the record's mail.messageId: SES's id of the
	// email, which the action's readback_ref holds once it was sent.
	outbox.DeliveryEvent
}

// ConfigurationSetTag is the SES tag holding an email's configuration set.
const ConfigurationSetTag = "ses:configuration-set"

// SESDetailTypes maps an SES event record's eventType to the EventBridge
// detail-type SES publishes it as (the event types ParseSESEvent reads).
var SESDetailTypes = map[string]string{
	"Send":          "Email Sent",
	"Delivery":      "Email Delivered",
	"Bounce":        "Email Bounced",
	"Complaint":     "Email Complaint Received",
	"Reject":        "Email Rejected",
	"DeliveryDelay": "Email Delivery Delayed",
}

// ErrNotFerry says an SES event is not about a Ferry email: it carries no
// ferry_action_id tag.
var ErrNotFerry = errors.New("email: the SES event has no " + ActionIDTag + " tag")

// sesRecord is the part of an SES event record the evidence reads. The
// record carries recipients' addresses and the mail's headers; none of
// them is kept.
type sesRecord struct {
	EventType string `json:"eventType"`
	Mail      struct {
		Timestamp time.Time           `json:"timestamp"`
		MessageID string              `json:"messageId"`
		Tags      map[string][]string `json:"tags"`
	} `json:"mail"`
	Send     *struct{} `json:"send"`
	Delivery *struct {
		Timestamp            time.Time `json:"timestamp"`
		ProcessingTimeMillis int64     `json:"processingTimeMillis"`
		Recipients           []string  `json:"recipients"`
	} `json:"delivery"`
	Bounce *struct {
		BounceType        string    `json:"bounceType"`
		BounceSubType     string    `json:"bounceSubType"`
		Timestamp         time.Time `json:"timestamp"`
		BouncedRecipients []struct {
			Status string `json:"status"`
		} `json:"bouncedRecipients"`
	} `json:"bounce"`
	Complaint *struct {
		Timestamp             time.Time  `json:"timestamp"`
		ComplaintFeedbackType string     `json:"complaintFeedbackType"`
		ComplainedRecipients  []struct{} `json:"complainedRecipients"`
	} `json:"complaint"`
	Reject *struct {
		Reason string `json:"reason"`
	} `json:"reject"`
	DeliveryDelay *struct {
		Timestamp         time.Time  `json:"timestamp"`
		DelayType         string     `json:"delayType"`
		DelayedRecipients []struct{} `json:"delayedRecipients"`
	} `json:"deliveryDelay"`
}

// ParseSESEvent reads an SES event record (Send, Delivery, Bounce,
// Complaint, Reject or DeliveryDelay) about a Ferry email into its action
// id and delivery event. The detail holds no address and no header: only
// counts, types and status codes. A record without the ferry_action_id tag
// is ErrNotFerry; another event type (Open, Click, Rendering Failure,
// Subscription) is an error.
func ParseSESEvent(raw json.RawMessage) (SESEvent, error) {
	var r sesRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return SESEvent{}, fmt.Errorf("email: decoding an SES event: %w", err)
	}
	tags := r.Mail.Tags[ActionIDTag]
	if len(tags) == 0 || tags[0] == "" {
		return SESEvent{}, ErrNotFerry
	}
	id, err := ActionIDOfTag(tags[0])
	if err != nil {
		return SESEvent{}, err
	}
	ev := SESEvent{ActionID: id, Type: r.EventType, ConfigurationSets: r.Mail.Tags[ConfigurationSetTag]}
	ev.At, ev.Ref = r.Mail.Timestamp, r.Mail.MessageID
	at := func(t time.Time) {
		if !t.IsZero() {
			ev.At = t
		}
	}
	switch {
	case r.EventType == "Send":
		ev.Status, ev.Detail = outbox.DeliverySent, "accepted by SES"
	case r.EventType == "Delivery" && r.Delivery != nil:
		ev.Status = outbox.DeliveryDelivered
		at(r.Delivery.Timestamp)
		ev.Detail = fmt.Sprintf("delivered to %s in %d ms", recipients(len(r.Delivery.Recipients)), r.Delivery.ProcessingTimeMillis)
	case r.EventType == "Bounce" && r.Bounce != nil:
		ev.Status = outbox.DeliveryBounced
		at(r.Bounce.Timestamp)
		var codes []string
		for _, b := range r.Bounce.BouncedRecipients {
			if b.Status != "" && !slices.Contains(codes, b.Status) {
				codes = append(codes, b.Status)
			}
		}
		ev.Detail = fmt.Sprintf("%s bounce (%s) of %s", r.Bounce.BounceType, r.Bounce.BounceSubType, recipients(len(r.Bounce.BouncedRecipients)))
		if len(codes) > 0 {
			ev.Detail += ", status " + strings.Join(codes, ", ")
		}
	case r.EventType == "Complaint" && r.Complaint != nil:
		ev.Status = outbox.DeliveryComplained
		at(r.Complaint.Timestamp)
		kind := r.Complaint.ComplaintFeedbackType
		if kind == "" {
			kind = "unspecified"
		}
		ev.Detail = fmt.Sprintf("complaint (%s) from %s", kind, recipients(len(r.Complaint.ComplainedRecipients)))
	case r.EventType == "Reject" && r.Reject != nil:
		ev.Status, ev.Detail = outbox.DeliveryRejected, "rejected by SES: "+r.Reject.Reason
	case r.EventType == "DeliveryDelay" && r.DeliveryDelay != nil:
		ev.Status = outbox.DeliveryDelayed
		at(r.DeliveryDelay.Timestamp)
		ev.Detail = fmt.Sprintf("delivery to %s delayed (%s)", recipients(len(r.DeliveryDelay.DelayedRecipients)), r.DeliveryDelay.DelayType)
	default:
		return SESEvent{}, fmt.Errorf("email: SES event type %q is not delivery evidence", r.EventType)
	}
	if ev.At.IsZero() {
		return SESEvent{}, errors.New("email: the SES event has no timestamp")
	}
	ev.At = ev.At.UTC()
	return ev, nil
}

func recipients(n int) string {
	if n == 1 {
		return "1 recipient"
	}
	return fmt.Sprintf("%d recipients", n)
}

// ActionIDOfTag reads an action id back from its SES tag value (TagValue's
// inverse).
func ActionIDOfTag(v string) (string, error) {
	if rest, ok := strings.CutPrefix(v, "b64_"); ok {
		b, err := base64.RawURLEncoding.DecodeString(rest)
		if err != nil {
			return "", fmt.Errorf("email: tag %s=%q: %w", ActionIDTag, v, err)
		}
		return string(b), nil
	}
	return v, nil
}
