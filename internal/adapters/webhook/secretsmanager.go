package webhook

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/ferryhq/ferry/internal/clock"
)

// SecretsManagerAPI is the part of *secretsmanager.Client the
// SecretsManagerSource calls.
type SecretsManagerAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// SecretsManagerSource reads each workspace's webhook secrets from AWS
// Secrets Manager and caches them for a while. The secret named
// fmt.Sprintf(NameFormat, workspaceID) holds one or more "whsec_…" secrets
// separated by white space, newest first (add the new one in front to
// rotate; remove the old one once receivers have switched).
type SecretsManagerSource struct {
	client     SecretsManagerAPI
	nameFormat string
	clock      clock.Clock
	ttl        time.Duration

	mu    sync.Mutex
	cache map[string]cachedSecrets
}

type cachedSecrets struct {
	secrets []Secret
	until   time.Time
}

// DefaultSecretNameFormat names a workspace's secret in Secrets Manager.
const DefaultSecretNameFormat = "ferry/webhook/%s"

// NewSecretsManagerSource returns a source reading through client. An empty
// nameFormat means DefaultSecretNameFormat; ttl is how long a read is
// trusted (zero means 5 minutes), so a rotation reaches every drainer
// within ttl.
func NewSecretsManagerSource(client SecretsManagerAPI, nameFormat string, clk clock.Clock, ttl time.Duration) *SecretsManagerSource {
	if nameFormat == "" {
		nameFormat = DefaultSecretNameFormat
	}
	if ttl == 0 {
		ttl = 5 * time.Minute
	}
	return &SecretsManagerSource{client: client, nameFormat: nameFormat, clock: clk, ttl: ttl, cache: map[string]cachedSecrets{}}
}

// WebhookSecrets returns the workspace's secrets, from the cache while it is
// fresh. A missing secret wraps ErrNoSecret; other failures are returned as
// they are (the attempt is retried).
func (s *SecretsManagerSource) WebhookSecrets(ctx context.Context, workspaceID string) ([]Secret, error) {
	now := s.clock.Now()
	s.mu.Lock()
	c, ok := s.cache[workspaceID]
	s.mu.Unlock()
	if ok && now.Before(c.until) {
		return c.secrets, nil
	}
	name := fmt.Sprintf(s.nameFormat, workspaceID)
	out, err := s.client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &name})
	if err != nil {
		var nf *smtypes.ResourceNotFoundException
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("secret %q: %w", name, ErrNoSecret)
		}
		return nil, fmt.Errorf("reading secret %q: %w", name, err)
	}
	if out.SecretString == nil {
		return nil, fmt.Errorf("secret %q has no string value: %w", name, ErrNoSecret)
	}
	secrets, err := parseSecrets(strings.Fields(*out.SecretString))
	if err != nil {
		return nil, fmt.Errorf("secret %q: %w", name, err)
	}
	if len(secrets) == 0 {
		return nil, fmt.Errorf("secret %q is empty: %w", name, ErrNoSecret)
	}
	s.mu.Lock()
	s.cache[workspaceID] = cachedSecrets{secrets: secrets, until: now.Add(s.ttl)}
	s.mu.Unlock()
	return secrets, nil
}
