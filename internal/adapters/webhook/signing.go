package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SecretPrefix starts every Standard Webhooks secret.
const SecretPrefix = "whsec_"

// ErrNoSecret is returned by a SecretSource that holds no signing secret for
// a workspace.
var ErrNoSecret = errors.New("no webhook signing secret")

// Secret is a decoded signing key.
type Secret []byte

// ParseSecret decodes a "whsec_<base64>" secret. Keys shorter than 16 bytes
// are refused: they are too weak to sign with.
func ParseSecret(s string) (Secret, error) {
	b64, ok := strings.CutPrefix(strings.TrimSpace(s), SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("webhook secret must start with %q", SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("webhook secret is not base64 after %q: %w", SecretPrefix, err)
	}
	if len(key) < 16 {
		return nil, fmt.Errorf("webhook secret is %d bytes; at least 16 are required", len(key))
	}
	return Secret(key), nil
}

// String returns the secret in "whsec_<base64>" form.
func (s Secret) String() string { return SecretPrefix + base64.StdEncoding.EncodeToString(s) }

// SecretSource gives the signing secrets of a workspace, newest first.
// Several secrets are returned while a secret is being rotated; each
// produces its own signature, so receivers holding either one accept the
// message. A source returns an error wrapping ErrNoSecret when the workspace
// has none.
type SecretSource interface {
	WebhookSecrets(ctx context.Context, workspaceID string) ([]Secret, error)
}

// StaticSecrets is a SecretSource from configuration: secrets per workspace,
// and a fallback for workspaces not listed (ferry dev's --webhook-secret).
type StaticSecrets struct {
	byWorkspace map[string][]Secret
	fallback    []Secret
}

// NewStaticSecrets parses "whsec_…" secrets per workspace and a fallback
// list used for any other workspace (either may be empty).
func NewStaticSecrets(byWorkspace map[string][]string, fallback ...string) (*StaticSecrets, error) {
	s := &StaticSecrets{byWorkspace: make(map[string][]Secret, len(byWorkspace))}
	for ws, list := range byWorkspace {
		parsed, err := parseSecrets(list)
		if err != nil {
			return nil, fmt.Errorf("webhook secrets of workspace %q: %w", ws, err)
		}
		s.byWorkspace[ws] = parsed
	}
	parsed, err := parseSecrets(fallback)
	if err != nil {
		return nil, fmt.Errorf("fallback webhook secrets: %w", err)
	}
	s.fallback = parsed
	return s, nil
}

func parseSecrets(list []string) ([]Secret, error) {
	out := make([]Secret, 0, len(list))
	for i, raw := range list {
		sec, err := ParseSecret(raw)
		if err != nil {
			return nil, fmt.Errorf("secret %d: %w", i, err)
		}
		out = append(out, sec)
	}
	return out, nil
}

// WebhookSecrets returns the workspace's secrets, or the fallback.
func (s *StaticSecrets) WebhookSecrets(_ context.Context, workspaceID string) ([]Secret, error) {
	if list, ok := s.byWorkspace[workspaceID]; ok && len(list) > 0 {
		return list, nil
	}
	if len(s.fallback) > 0 {
		return s.fallback, nil
	}
	return nil, fmt.Errorf("workspace %q: %w", workspaceID, ErrNoSecret)
}

// Sign returns the webhook-signature header value for a message: one
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>" per secret, separated by
// spaces.
func Sign(secrets []Secret, id string, timestamp int64, body []byte) string {
	signed := make([]byte, 0, len(id)+len(body)+24)
	signed = append(signed, id...)
	signed = append(signed, '.')
	signed = strconv.AppendInt(signed, timestamp, 10)
	signed = append(signed, '.')
	signed = append(signed, body...)
	sigs := make([]string, 0, len(secrets))
	for _, key := range secrets {
		mac := hmac.New(sha256.New, key)
		mac.Write(signed)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(sigs, " ")
}
