package infra

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPropsDefaultsAreValid(t *testing.T) {
	t.Parallel()
	p := Props{}.WithDefaults()
	require.NoError(t, p.Validate())
	require.Equal(t, "ferry", p.TableName)
	require.Equal(t, 16, p.Partitions)
	require.Equal(t, 5*time.Minute, p.Lease)
	require.Equal(t, 60*time.Second, p.WriteMargin)
	require.Equal(t, DefaultFunctionSizes, p.Functions)
	require.Equal(t, TracingXRay, p.Tracing)
	require.Empty(t, p.WorkspaceClaim, "IAM by default: no JWT claim")
	require.Equal(t, DefaultWorkspaceClaim, Props{JWTIssuer: "https://id.example.com", JWTAudience: []string{"ferry"}}.WithDefaults().WorkspaceClaim)
}

func TestPropsValidateNamesTheProps(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		change func(p *Props)
		want   string
	}{
		{"WriteMarginNotShorterThanLease", func(p *Props) { p.WriteMargin, p.Lease = 60*time.Second, 30*time.Second },
			"WriteMargin (1m0s) must be shorter than Lease (30s): lower WriteMargin below 30s or raise Lease above 1m0s"},
		{"ProviderCallOutlivesMargin", func(p *Props) { p.ProviderTimeout = 60 * time.Second },
			"ProviderTimeout (60s) + ClockSkew (5s) must be shorter than WriteMargin (60s)"},
		{"DrainerTooShort", func(p *Props) { p.Functions.Drainer.Timeout = 80 * time.Second },
			"Functions.Drainer.Timeout (80s) must exceed WriteMargin (60s) + ProviderTimeout (30s)"},
		{"LeaseShorterThanDrainer", func(p *Props) { p.Lease = 2 * time.Minute },
			"Lease (120s) must exceed Functions.Drainer.Timeout (120s) + ClockSkew (5s)"},
		{"EnqueueOverAPILimit", func(p *Props) { p.Functions.Enqueue.Timeout = 30 * time.Second },
			"Functions.Enqueue.Timeout (30s) must be shorter than 30s"},
		{"TimeoutOverLambdaLimit", func(p *Props) { p.Functions.Retention.Timeout = 16 * time.Minute },
			"Functions.Retention.Timeout (16m) must be whole seconds between 1s and 15m"},
		{"MemoryTooSmall", func(p *Props) { p.Functions.Reaper.MemoryMB = 64 }, "Functions.Reaper.MemoryMB (64) must be between 128 and 10240"},
		{"TableName", func(p *Props) { p.TableName = "a b" }, `TableName ("a b")`},
		{"Partitions", func(p *Props) { p.Partitions = 2000 }, "Partitions (2000) must be between 1 and 1024"},
		{"RetentionTooShort", func(p *Props) { p.Retention = time.Minute }, "Retention (60s) must be at least 1h"},
		{"LogLevel", func(p *Props) { p.LogLevel = "loud" }, `LogLevel ("loud")`},
		{"LogRetentionDays", func(p *Props) { p.LogRetentionDays = 10 }, "LogRetentionDays (10) must be one of"},
		{"IssuerWithoutAudience", func(p *Props) { p.JWTIssuer = "https://id.example.com" }, "JWTAudience must be set when JWTIssuer"},
		{"AudienceWithoutIssuer", func(p *Props) { p.JWTAudience = []string{"ferry"} }, "JWTIssuer must be set when JWTAudience is"},
		{"IssuerNotHTTPS", func(p *Props) { p.JWTIssuer, p.JWTAudience = "http://id.example.com", []string{"ferry"} }, "must be an https URL"},
		{"IAMWorkspacesWithJWT", func(p *Props) {
			p.JWTIssuer, p.JWTAudience = "https://id.example.com", []string{"ferry"}
			p.IAMWorkspaces = map[string][]string{"arn:aws:iam::111122223333:role/app": {"default"}}
		}, "IAMWorkspaces only applies to IAM authorization"},
		{"WorkspaceClaimWithIAM", func(p *Props) { p.WorkspaceClaim = "groups" }, "WorkspaceClaim only applies to JWT"},
		{"IAMWorkspacesKey", func(p *Props) { p.IAMWorkspaces = map[string][]string{"app": {"default"}} }, `IAMWorkspaces key "app" must be a principal ARN`},
		{"IAMWorkspacesEmpty", func(p *Props) { p.IAMWorkspaces = map[string][]string{"arn:aws:iam::111122223333:role/app": nil} }, "has no workspaces"},
		{"SESIdentityARN", func(p *Props) { p.SESIdentityARNs = []string{"arn:aws:sns:eu-west-1:111122223333:identity/x"} }, "SESIdentityARNs[0]"},
		{"ConfigurationSetWithoutIdentity", func(p *Props) { p.SESConfigurationSet = "ferry" }, "SESConfigurationSet (\"ferry\") needs SESIdentityARNs"},
		{"EventBusARN", func(p *Props) { p.EventBusARNs = []string{"default"} }, "EventBusARNs[0]"},
		{"SecretARN", func(p *Props) { p.WebhookSecretsARN = "arn:aws:ssm:eu-west-1:111122223333:parameter/x" }, "WebhookSecretsARN"},
		{"SecretName", func(p *Props) { p.WebhookSecretsARN = "ferry webhooks!" }, `WebhookSecretsARN ("ferry webhooks!") must be a secret ARN, a secret name, or a name format`},
		{"KMSKeyARN", func(p *Props) { p.KMSKeyARN = "alias/ferry" }, "KMSKeyARN"},
		{"TopicAndEmail", func(p *Props) {
			p.AlarmTopicARN, p.AlarmEmail = "arn:aws:sns:eu-west-1:111122223333:alarms", "ops@example.com"
		}, "AlarmTopicARN and AlarmEmail are exclusive"},
		{"OTelWithoutLayer", func(p *Props) { p.Tracing = TracingOpenTelemetry }, "OTelLayerARN must name"},
		{"LayerWithoutOTel", func(p *Props) { p.OTelLayerARN = "arn:aws:lambda:eu-west-1:111122223333:layer:otel:1" }, "OTelLayerARN only applies"},
		{"UnknownTracing", func(p *Props) { p.Tracing = "jaeger" }, `Tracing ("jaeger")`},
		{"StreamWindow", func(p *Props) { p.StreamBatchingWindow = 10 * time.Minute }, "StreamBatchingWindow (10m)"},
		{"OldestDueAge", func(p *Props) { p.Alarms.OldestDueAge = 10 * time.Second }, "Alarms.OldestDueAge (10s) must be at least 1m"},
		{"AlarmCount", func(p *Props) { p.Alarms.Failed = -1 }, "Alarms.Failed (-1) must be at least 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := Props{}.WithDefaults()
			tc.change(&p)
			err := p.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestPropsValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	p := Props{}.WithDefaults()
	p.Partitions = -1
	p.LogLevel = "loud"
	err := p.Validate()
	require.ErrorContains(t, err, "Partitions (-1)")
	require.ErrorContains(t, err, `LogLevel ("loud")`)
}

func TestFmtDur(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		60 * time.Second:               "60s",
		90 * time.Second:               "90s",
		5 * time.Minute:                "5m",
		16 * time.Minute:               "16m",
		90 * time.Minute:               "1h30m",
		720 * time.Hour:                "720h",
		500 * time.Millisecond:         "500ms",
		5*time.Minute + 30*time.Second: "5m30s",
	} {
		require.Equal(t, want, fmtDur(d), "%v", d)
		parsed, err := time.ParseDuration(want)
		require.NoError(t, err, "the functions parse it back")
		require.Equal(t, d, parsed)
	}
}
