package email_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// sesStandIn is a local stand-in for the SES v2 API speaking its REST-JSON
// wire format for SendEmail (POST /v2/email/outbound-emails). It records
// every request it receives and answers with respond.
type sesStandIn struct {
	*httptest.Server
	mu       sync.Mutex
	requests []sendEmailRequest
	paths    []string
	respond  http.HandlerFunc
	release  chan struct{}
}

// sendEmailRequest is the part of the SendEmail JSON body the tests check.
type sendEmailRequest struct {
	FromEmailAddress string
	Destination      struct {
		ToAddresses  []string
		CcAddresses  []string
		BccAddresses []string
	}
	ReplyToAddresses []string
	Content          struct {
		Simple struct {
			Subject struct{ Data, Charset string }
			Body    struct {
				Text *struct{ Data string }
				Html *struct{ Data string }
			}
		}
	}
	EmailTags            []struct{ Name, Value string }
	ConfigurationSetName string
}

func newSESStandIn(t *testing.T, respond http.HandlerFunc) *sesStandIn {
	t.Helper()
	s := &sesStandIn{respond: respond, release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var req sendEmailRequest
		_ = json.Unmarshal(raw, &req)
		s.mu.Lock()
		s.requests = append(s.requests, req)
		s.paths = append(s.paths, r.Method+" "+r.URL.Path)
		respond := s.respond
		s.mu.Unlock()
		respond(w, r)
	}))
	t.Cleanup(func() {
		close(s.release)
		s.Close()
	})
	return s
}

// setRespond changes the answer of later requests.
func (s *sesStandIn) setRespond(h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.respond = h
}

func (s *sesStandIn) received() []sendEmailRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sendEmailRequest(nil), s.requests...)
}

func accept(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"MessageId":"010001-standin-message"}`)
}

// awsError answers like an AWS REST-JSON service refusing a request.
func awsError(status int, code string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", code)
		w.Header().Set("X-Amzn-RequestId", "standin-request")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"message":"stand-in says `+code+`"}`)
	}
}

// awsErrorMessage answers like awsError, with a chosen message.
func awsErrorMessage(status int, code, message string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", code)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"message":"`+message+`"}`)
	}
}

// stall accepts the request and never answers (until the test ends).
func (s *sesStandIn) stall(http.ResponseWriter, *http.Request) { <-s.release }

// drop accepts the request and closes the connection without an answer.
func drop(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}
