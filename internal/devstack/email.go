package devstack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/ferryhq/ferry/internal/adapters/email"
	"github.com/ferryhq/ferry/internal/adapters/eventbridge"
	"github.com/ferryhq/ferry/internal/outbox"
)

// registerProviders registers the email adapter (the local mail sink under
// --mail-dir, or Amazon SES v2 when AWS_ENDPOINT_URL_SESV2 is set or --ses
// is given) and, only
// when AWS_ENDPOINT_URL_EVENTBRIDGE names an endpoint, the eventbridge
// adapter: ferry dev never sends to real AWS unless told to.
func (s *Stack) registerProviders(ctx context.Context, reg *outbox.Registry) error {
	var sender email.Sender
	if s.cfg.SESEndpoint != "" || s.cfg.UseSES {
		ses, err := email.NewSESClient(ctx)
		if err != nil {
			return err
		}
		sender = ses
		s.email = "Amazon SES v2 at " + s.cfg.SESEndpoint
		if s.cfg.SESEndpoint == "" {
			s.email = "Amazon SES v2 (--ses: the AWS credentials and region of the environment)"
		}
	} else {
		dir, err := filepath.Abs(s.cfg.MailDir)
		if err != nil {
			return fmt.Errorf("--mail-dir: %w", err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("--mail-dir: %w", err)
		}
		md, err := email.NewMailDirSender(dir, s.cfg.Clock)
		if err != nil {
			return fmt.Errorf("--mail-dir: %w", err)
		}
		sender = md
		s.email = "local mail sink, one .eml file per email in " + dir
	}
	em, err := email.New(email.Options{Sender: sender})
	if err != nil {
		return fmt.Errorf("error building the email adapter: %w", err)
	}
	if err := reg.Register(em); err != nil {
		return err
	}
	if ep := os.Getenv("AWS_ENDPOINT_URL_EVENTBRIDGE"); ep != "" {
		client, err := eventbridge.NewClient(ctx, config.WithRegion(regionOr("us-east-1")))
		if err != nil {
			return err
		}
		eb, err := eventbridge.New(eventbridge.Options{Client: client})
		if err != nil {
			return fmt.Errorf("error building the eventbridge adapter: %w", err)
		}
		if err := reg.Register(eb); err != nil {
			return err
		}
		s.events = "Amazon EventBridge at " + ep
	} else {
		s.events = "not available (set AWS_ENDPOINT_URL_EVENTBRIDGE to enable the eventbridge kind)"
	}
	return nil
}

func regionOr(def string) string {
	if r := os.Getenv("AWS_REGION"); r != "" {
		return r
	}
	return def
}
