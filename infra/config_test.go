package infra

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConfigFromContext(t *testing.T) {
	t.Parallel()
	var fromCDKJSON any
	require.NoError(t, json.Unmarshal([]byte(`{
		"stackName": "FerryProd", "tableName": "ferry-prod", "partitions": 32,
		"lease": "10m", "writeMargin": "90s", "retention": "2160h",
		"functions": {"drainer": {"memoryMB": 1024, "timeout": "5m"}},
		"jwtIssuer": "https://id.example.com", "jwtAudience": ["ferry"],
		"eventBusArns": ["arn:aws:events:eu-west-1:111122223333:event-bus/orders"],
		"alarms": {"oldestDueAge": "15m", "failed": 20},
		"tracing": "off"
	}`), &fromCDKJSON))
	c, err := ConfigFromContext(fromCDKJSON)
	require.NoError(t, err)
	require.Equal(t, "FerryProd", c.StackName)
	p, err := c.Props()
	require.NoError(t, err)
	require.Equal(t, "ferry-prod", p.TableName)
	require.Equal(t, 32, p.Partitions)
	require.Equal(t, 10*time.Minute, p.Lease)
	require.Equal(t, 90*time.Second, p.WriteMargin)
	require.Equal(t, 90*24*time.Hour, p.Retention)
	require.Equal(t, FunctionSize{MemoryMB: 1024, Timeout: 5 * time.Minute}, p.Functions.Drainer)
	require.Equal(t, []string{"ferry"}, p.JWTAudience)
	require.Equal(t, 15*time.Minute, p.Alarms.OldestDueAge)
	require.Equal(t, 20, p.Alarms.Failed)
	require.Equal(t, TracingOff, p.Tracing)
	p = p.WithDefaults()
	require.NoError(t, p.Validate())

	// `cdk synth -c ferry='{…}'` passes a string.
	c, err = ConfigFromContext(`{"partitions": 8}`)
	require.NoError(t, err)
	require.Equal(t, 8, c.Partitions)

	c, err = ConfigFromContext(nil)
	require.NoError(t, err)
	require.Equal(t, Config{}, c)
}

func TestConfigFromContextRefusesMistakes(t *testing.T) {
	t.Parallel()
	_, err := ConfigFromContext(`{"partition": 8}`)
	require.ErrorContains(t, err, `unknown field "partition"`)

	c, err := ConfigFromContext(`{"lease": "5 minutes", "functions": {"sender": {"memoryMB": 128}}}`)
	require.NoError(t, err)
	_, err = c.Props()
	require.ErrorContains(t, err, `lease ("5 minutes") is not a duration`)
	require.ErrorContains(t, err, "functions.sender: no such function")
}

func TestFunctionEnvironment(t *testing.T) {
	t.Parallel()
	p := Props{}.WithDefaults()
	shared := map[string]string{
		EnvTable: "ferry", EnvPartitions: "16", EnvLease: "5m", EnvWriteMargin: "60s", EnvLogLevel: "info",
		EnvRetention: "720h", EnvRowCap: "500000", EnvStack: "Ferry", EnvClockSkew: "5s", EnvProviderTimeout: "30s",
		EnvMaxDeferrals: "50", EnvMaxDeferTime: "24h",
	}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range shared {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for fn, want := range map[FunctionName]map[string]string{
		FunctionEnqueue:   with(map[string]string{EnvIAMWorkspaces: "{}"}),
		FunctionDrainer:   with(nil),
		FunctionReaper:    with(nil),
		FunctionRetention: with(nil),
	} {
		got, err := FunctionEnvironment(fn, &p, "ferry", "Ferry")
		require.NoError(t, err)
		require.Equal(t, want, got, "%s", fn)
	}

	p = Props{
		JWTIssuer: "https://id.example.com", JWTAudience: []string{"ferry"}, WorkspaceClaim: "groups",
		WebhookSecretsARN: testSecret, SESIdentityARNs: []string{testIdentity}, SESConfigurationSet: "ferry",
		Tracing: TracingOpenTelemetry, OTelLayerARN: "arn:aws:lambda:eu-west-1:111122223333:layer:otel:1",
	}.WithDefaults()
	require.NoError(t, p.Validate())
	enq, err := FunctionEnvironment(FunctionEnqueue, &p, "ferry", "Ferry")
	require.NoError(t, err)
	require.Equal(t, "groups", enq[EnvWorkspaceClaim])

	// The deferral bounds and the clock skew reach the functions.
	c, err := ConfigFromContext(`{"clockSkew": "2s", "maxDeferrals": 7, "maxDeferTime": "90m"}`)
	require.NoError(t, err)
	q, err := c.Props()
	require.NoError(t, err)
	q = q.WithDefaults()
	require.NoError(t, q.Validate())
	drn, err := FunctionEnvironment(FunctionDrainer, &q, "ferry", "Ferry")
	require.NoError(t, err)
	require.Equal(t, "2s", drn[EnvClockSkew])
	require.Equal(t, "7", drn[EnvMaxDeferrals])
	require.Equal(t, "1h30m", drn[EnvMaxDeferTime])
	require.NotContains(t, enq, EnvIAMWorkspaces)
	require.Equal(t, "ferry-enqueue", enq[EnvOTelServiceName])
	drainer, err := FunctionEnvironment(FunctionDrainer, &p, "ferry", "Ferry")
	require.NoError(t, err)
	require.Equal(t, testSecret, drainer[EnvWebhookSecretsARN])
	require.Equal(t, "ferry", drainer[EnvSESConfigurationSet])
	require.Equal(t, "http://localhost:4318", drainer[EnvOTelEndpoint])

	p.LocalEndpoints = true
	reaper, err := FunctionEnvironment(FunctionReaper, &p, "ferry", "Ferry")
	require.NoError(t, err)
	for _, v := range LocalEndpointVariables {
		require.Contains(t, reaper, v)
		require.Empty(t, reaper[v], "declared for sam local to override")
	}

	_, err = FunctionEnvironment("sender", &p, "ferry", "Ferry")
	require.ErrorContains(t, err, `unknown function "sender"`)
}

func TestDrainerStreamFilter(t *testing.T) {
	t.Parallel()
	var pattern map[string]any
	require.NoError(t, json.Unmarshal([]byte(DrainerStreamFilter()), &pattern))
	img := pattern["dynamodb"].(map[string]any)["NewImage"].(map[string]any)
	require.Equal(t, map[string]any{"S": []any{map[string]any{"exists": true}}}, img[AttrDuePK])
	require.Equal(t, map[string]any{"S": []any{"ADMITTED"}}, img[AttrState])
}
