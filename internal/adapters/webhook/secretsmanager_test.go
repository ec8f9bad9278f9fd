package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
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

// TestSecretsManagerSourceThroughTheSDK reads secrets from a local stand-in
// speaking Secrets Manager's JSON 1.1 protocol, through the real SDK.
func TestSecretsManagerSourceThroughTheSDK(t *testing.T) {
	t.Parallel()
	s1 := newSecret(t)
	var targets []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ SecretId string }
		_ = json.NewDecoder(r.Body).Decode(&in)
		mu.Lock()
		targets = append(targets, r.Header.Get("X-Amz-Target")+" "+in.SecretId)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if in.SecretId != "ferry/webhook/ws1" {
			w.WriteHeader(400)
			_, _ = io.WriteString(w, `{"__type":"ResourceNotFoundException","Message":"Secrets Manager can't find the specified secret."}`)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"Name": in.SecretId, "SecretString": s1.String() + "\n"})
	}))
	t.Cleanup(srv.Close)
	client := secretsmanager.New(secretsmanager.Options{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDSTANDIN", "standin-secret", ""),
	})
	src := webhook.NewSecretsManagerSource(client, "", clock.NewManual(start), 0)
	got, err := src.WebhookSecrets(context.Background(), "ws1")
	require.NoError(t, err)
	require.Equal(t, []webhook.Secret{s1}, got)
	_, err = src.WebhookSecrets(context.Background(), "ws2")
	require.ErrorIs(t, err, webhook.ErrNoSecret)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"secretsmanager.GetSecretValue ferry/webhook/ws1", "secretsmanager.GetSecretValue ferry/webhook/ws2"}, targets)
}
