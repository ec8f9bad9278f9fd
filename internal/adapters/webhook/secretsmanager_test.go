package webhook_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/adapters/webhook"
	"github.com/ferryhq/ferry/internal/clock"
)

type fakeSecretsManager struct {
	mu     sync.Mutex
	values map[string]string
	calls  int
	err    error
}

func (f *fakeSecretsManager) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	v, ok := f.values[*in.SecretId]
	if !ok {
		return nil, &smtypes.ResourceNotFoundException{Message: aws.String("not found")}
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(v)}, nil
}

func TestSecretsManagerSource(t *testing.T) {
	t.Parallel()
	s1, s2 := newSecret(t), newSecret(t)
	fake := &fakeSecretsManager{values: map[string]string{"ferry/webhook/ws1": s1.String()}}
	clk := clock.NewManual(start)
	src := webhook.NewSecretsManagerSource(fake, "", clk, time.Minute)
	ctx := context.Background()

	got, err := src.WebhookSecrets(ctx, "ws1")
	require.NoError(t, err)
	require.Equal(t, []webhook.Secret{s1}, got)

	// Rotation: the new secret is put in front; the cache hides it until
	// the TTL passes.
	fake.values["ferry/webhook/ws1"] = s2.String() + "\n" + s1.String()
	got, err = src.WebhookSecrets(ctx, "ws1")
	require.NoError(t, err)
	require.Equal(t, []webhook.Secret{s1}, got)
	require.Equal(t, 1, fake.calls)
	clk.Advance(time.Minute)
	got, err = src.WebhookSecrets(ctx, "ws1")
	require.NoError(t, err)
	require.Equal(t, []webhook.Secret{s2, s1}, got)

	_, err = src.WebhookSecrets(ctx, "ws-unknown")
	require.ErrorIs(t, err, webhook.ErrNoSecret)

	fake.values["ferry/webhook/ws-bad"] = "whsec_nope!"
	_, err = src.WebhookSecrets(ctx, "ws-bad")
	require.Error(t, err)
	require.NotErrorIs(t, err, webhook.ErrNoSecret)

	fake.err = errors.New("throttled")
	_, err = src.WebhookSecrets(ctx, "ws2")
	require.ErrorContains(t, err, "throttled")
	require.NotErrorIs(t, err, webhook.ErrNoSecret)
}
