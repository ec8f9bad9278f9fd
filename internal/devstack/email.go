package devstack

import "github.com/ferryhq/ferry/internal/outbox"

// registerEmail registers the email adapter: the local mail sink under
// --mail-dir, or Amazon SES v2 when AWS_ENDPOINT_URL_SESV2 is set.
func (s *Stack) registerEmail(reg *outbox.Registry) error {
	s.email = "(email adapter not wired yet)"
	return nil
}
