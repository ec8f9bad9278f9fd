package lambdastack

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/ferryhq/ferry/internal/adapters/email"
)

// StandIns answers, on loopback, the AWS calls the functions make besides
// DynamoDB: SES v2 SendEmail (each message written to the mail sink as an
// .eml file), Secrets Manager GetSecretValue (the local webhook signing
// secret, for any secret name) and EventBridge PutEvents (accepted and
// logged). Anything else is refused with UnrecognizedClientException, so
// a call ferry local does not stand in for fails loudly instead of leaving
// the machine. Every function's AWS_ENDPOINT_URL points here.
type StandIns struct {
	Mail          *email.MailDir
	WebhookSecret string
	Logs          *Logs

	mu      sync.Mutex
	emails  int
	events  int
	refused []string
}

// Counts returns the emails sent, events put and requests refused so far.
func (s *StandIns) Counts() (emails, events int, refused []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emails, s.events, append([]string(nil), s.refused...)
}

func (s *StandIns) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 40<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	target := r.Header.Get("X-Amz-Target")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v2/email/outbound-emails":
		s.sendEmail(w, r, body)
	case target == "secretsmanager.GetSecretValue":
		var in struct{ SecretId string }
		_ = json.Unmarshal(body, &in)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		out, _ := json.Marshal(map[string]any{"Name": in.SecretId, "ARN": "arn:aws:secretsmanager:us-east-1:000000000000:secret:" + in.SecretId + "-local",
			"SecretString": s.WebhookSecret, "VersionId": "local"})
		_, _ = w.Write(out)
	case target == "AWSEvents.PutEvents":
		s.putEvents(w, body)
	default:
		op := r.Method + " " + r.URL.Path
		if target != "" {
			op = target
		}
		s.mu.Lock()
		s.refused = append(s.refused, op)
		s.mu.Unlock()
		if s.Logs != nil {
			s.Logs.Event("aws", "aws", "refused "+op+": ferry local stands in for SES v2 SendEmail, Secrets Manager GetSecretValue and EventBridge PutEvents only")
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"UnrecognizedClientException","message":"%s is not served by ferry local"}`, strings.ReplaceAll(op, `"`, ""))
	}
}

func (s *StandIns) sendEmail(w http.ResponseWriter, r *http.Request, body []byte) {
	var in sesv2.SendEmailInput
	if err := json.Unmarshal(body, &in); err != nil {
		w.Header().Set("X-Amzn-Errortype", "BadRequestException")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"message":%q}`, err.Error())
		return
	}
	out, err := s.Mail.SendEmail(r.Context(), &in)
	if err != nil {
		w.Header().Set("X-Amzn-Errortype", "BadRequestException")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"message":%q}`, err.Error())
		return
	}
	s.mu.Lock()
	s.emails++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"MessageId":%q}`, *out.MessageId)
}

func (s *StandIns) putEvents(w http.ResponseWriter, body []byte) {
	var in struct {
		Entries []struct{ Source, DetailType, EventBusName string }
	}
	_ = json.Unmarshal(body, &in)
	type entry struct {
		EventID string `json:"EventId"`
	}
	out := struct {
		Entries          []entry
		FailedEntryCount int
	}{}
	s.mu.Lock()
	for _, e := range in.Entries {
		s.events++
		out.Entries = append(out.Entries, entry{EventID: fmt.Sprintf("local-%d", s.events)})
		if s.Logs != nil {
			s.Logs.Event("aws", "aws", fmt.Sprintf("EventBridge PutEvents: bus %q, source %q, detail-type %q", e.EventBusName, e.Source, e.DetailType))
		}
	}
	s.mu.Unlock()
	raw, _ := json.Marshal(out)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_, _ = w.Write(raw)
}
