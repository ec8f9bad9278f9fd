package coldstart

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/outbox"
)

// TestProviderTimeoutBoundsEachCall: an SES endpoint that never answers is
// given up after FERRY_PROVIDER_TIMEOUT, long before the caller's own
// deadline (the engine's call budget): the configured bound is the one the
// adapters run with.
func TestProviderTimeoutBoundsEachCall(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // hold the request until the client gives up or the test ends
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)

	awsCfg := aws.Config{
		Region: "eu-west-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("x", "y", ""),
	}
	reg, err := Registry(awsCfg, clock.System{}, env(map[string]string{EnvProviderTimeout: "200ms"}))
	require.NoError(t, err)
	em, ok := reg.Lookup("email")
	require.True(t, ok)

	payload, _ := json.Marshal(map[string]any{"from": "shop@example.com", "to": []string{"ann@example.com"}, "subject": "s", "text": "t"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	att := &outbox.Attempt{Action: outbox.Action{ID: "1-1", Kind: "email", Payload: payload}, Number: 1}
	if p, ok := em.(outbox.Preparer); ok {
		require.Equal(t, outbox.OutcomeNone, p.Prepare(ctx, att).Outcome)
	}
	res := em.Execute(ctx, att)
	require.NoError(t, ctx.Err(), "the call ended on the provider timeout, not the caller's deadline")
	require.Equal(t, outbox.OutcomeUncertain, res.Outcome, "after the fence, an unanswered send may have gone: %v", res.Err)
}

func TestProviderTimeoutIsValidated(t *testing.T) {
	t.Parallel()
	d, err := ProviderTimeout(env(nil))
	require.NoError(t, err)
	require.Equal(t, DefaultProviderTimeout, d)
	d, err = ProviderTimeout(env(map[string]string{EnvProviderTimeout: "45s"}))
	require.NoError(t, err)
	require.Equal(t, 45*time.Second, d)
	for _, bad := range []string{"soon", "0s", "-1s"} {
		_, err := ProviderTimeout(env(map[string]string{EnvProviderTimeout: bad}))
		require.ErrorContains(t, err, EnvProviderTimeout)
	}
	_, err = New(context.Background(), "drainer", env(map[string]string{"FERRY_TABLE": "t", EnvProviderTimeout: "soon"}))
	require.ErrorContains(t, err, EnvProviderTimeout, "a function refuses to start")
}

// TestMetricsCarryTheStack: FERRY_STACK becomes the Stack dimension.
func TestMetricsCarryTheStack(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	m := Metrics(&out, clock.System{}, "reaper", env(map[string]string{EnvStack: "FerryOrders", "AWS_LAMBDA_FUNCTION_NAME": "fn"}))
	m.Count("Attempts", 1)
	require.NoError(t, m.Flush())
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	require.Equal(t, "FerryOrders", doc["Stack"])
	require.Equal(t, "reaper", doc["function"])
	require.Equal(t, "fn", doc["function_name"])
	dims := doc["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Dimensions"]
	require.Equal(t, []any{[]any{"Stack"}}, dims)
}
