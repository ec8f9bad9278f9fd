package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

// TestRunWritesTheAssembly runs the app as the CDK CLI does: configuration
// in the context (CDK_CONTEXT_JSON), output directory in CDK_OUTDIR.
func TestRunWritesTheAssembly(t *testing.T) {
	assets := t.TempDir()
	for _, fn := range []string{"enqueue", "drainer", "reaper", "retention", "sesevents"} {
		require.NoError(t, os.MkdirAll(filepath.Join(assets, fn), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(assets, fn, "bootstrap"), []byte("placeholder"), 0o755))
	}
	out := t.TempDir()
	ctx, err := json.Marshal(map[string]any{"ferry": map[string]any{
		"stackName": "FerryTest", "assetDir": assets, "tableName": "ferry-test",
	}})
	require.NoError(t, err)
	env := map[string]string{"CDK_CONTEXT_JSON": string(ctx), "CDK_OUTDIR": out}

	require.NoError(t, run(func(k string) string { return env[k] }))

	raw, err := os.ReadFile(filepath.Join(out, "FerryTest.template.json"))
	require.NoError(t, err)
	var tmpl struct {
		Resources map[string]struct {
			Type       string
			Properties map[string]any
		}
	}
	require.NoError(t, json.Unmarshal(raw, &tmpl))
	var tables []string
	for _, r := range tmpl.Resources {
		if r.Type == "AWS::DynamoDB::Table" {
			tables = append(tables, r.Properties["TableName"].(string))
		}
	}
	require.Equal(t, []string{"ferry-test"}, tables)
	require.FileExists(t, filepath.Join(out, "AwsSolutions--FerryTest-NagReport.csv"), "cdk-nag ran")
}

func TestRunRefusesBadContext(t *testing.T) {
	env := map[string]string{"CDK_CONTEXT_JSON": `{"ferry": {"lease": "forever"}}`, "CDK_OUTDIR": t.TempDir()}
	require.ErrorContains(t, run(func(k string) string { return env[k] }), `lease ("forever") is not a duration`)
}
