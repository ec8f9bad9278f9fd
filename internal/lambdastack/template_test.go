package lambdastack

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testdata/Ferry.template.json is a template `make synth` wrote (through
// ferry-infra, offline) with the default configuration.
func readTestTemplate(t *testing.T) *Template {
	t.Helper()
	tmpl, err := ReadTemplate(filepath.Join("testdata", "Ferry.template.json"), DefaultLocal)
	require.NoError(t, err)
	return tmpl
}

func TestReadTemplate(t *testing.T) {
	t.Parallel()
	tmpl := readTestTemplate(t)

	require.Equal(t, "ferry", tmpl.Table.Name)
	require.Equal(t, "NEW_AND_OLD_IMAGES", tmpl.Table.StreamView)
	require.Equal(t, "ttl", tmpl.Table.TTLAttribute)
	require.Len(t, tmpl.Table.Create.GlobalSecondaryIndexes, 2)
	require.Equal(t, "due", *tmpl.Table.Create.GlobalSecondaryIndexes[0].IndexName)
	require.True(t, *tmpl.Table.Create.StreamSpecification.StreamEnabled)
	var names []string
	for _, f := range tmpl.Functions {
		names = append(names, f.Name)
	}
	require.ElementsMatch(t, []string{"enqueue", "drainer", "reaper", "retention"}, names)

	drainer := tmpl.Function("drainer")
	require.NotNil(t, drainer)
	require.Equal(t, "bootstrap", drainer.Handler)
	require.Equal(t, "provided.al2023", drainer.Runtime)
	require.Equal(t, []string{"arm64"}, drainer.Architectures)
	require.Equal(t, 512, drainer.MemoryMB)
	require.Equal(t, 2*time.Minute, drainer.Timeout)
	require.Equal(t, "ferry", drainer.Environment["FERRY_TABLE"], "Ref Table resolves to the table's name")
	require.Equal(t, "16", drainer.Environment["FERRY_PARTITIONS"])

	// The role's statements, references resolved in the local account.
	var tableGrant, indexGrant, streamGrant *Statement
	for i, s := range drainer.Role.Statements {
		for _, r := range s.Resources {
			switch r {
			case "arn:aws:dynamodb:us-east-1:000000000000:table/ferry":
				tableGrant = &drainer.Role.Statements[i]
			case "arn:aws:dynamodb:us-east-1:000000000000:table/ferry/index/due":
				indexGrant = &drainer.Role.Statements[i]
			case "arn:aws:dynamodb:us-east-1:000000000000:table/ferry/stream/*":
				if len(s.Actions) > 1 {
					streamGrant = &drainer.Role.Statements[i]
				}
			}
		}
	}
	require.NotNil(t, tableGrant)
	require.Contains(t, tableGrant.Actions, "dynamodb:ConditionCheckItem")
	require.NotNil(t, indexGrant)
	require.Equal(t, []string{"dynamodb:Query"}, indexGrant.Actions)
	require.NotNil(t, streamGrant)
	require.Contains(t, streamGrant.Actions, "dynamodb:GetRecords")

	require.Len(t, tmpl.Routes, 9)
	for _, r := range tmpl.Routes {
		require.Equal(t, "enqueue", r.Function, r.Path)
		require.Equal(t, "2.0", r.PayloadFormat)
		require.Equal(t, "AWS_IAM", r.Authorization)
	}

	every := map[string]time.Duration{}
	for _, s := range tmpl.Schedules {
		require.True(t, s.Enabled)
		every[s.Function] = s.Every
	}
	require.Equal(t, map[string]time.Duration{"drainer": time.Minute, "reaper": time.Minute, "retention": 24 * time.Hour}, every)

	require.Len(t, tmpl.Mappings, 1)
	m := tmpl.Mappings[0]
	require.Equal(t, "drainer", m.Function)
	require.Equal(t, 100, m.BatchSize)
	require.Equal(t, time.Second, m.BatchingWindow)
	require.Equal(t, "LATEST", m.StartingPosition)
	require.True(t, m.ReportItemErrors)
	require.Equal(t, 2, m.MaxRetries)
	require.Equal(t, time.Hour, m.MaxRecordAge)
	require.False(t, m.Bisect)
	require.Len(t, m.Filters, 1)
	require.Equal(t, "arn:aws:dynamodb:us-east-1:000000000000:table/ferry/stream/*", m.StreamARN)
}

func TestReadTemplateStreamLabel(t *testing.T) {
	t.Parallel()
	local := DefaultLocal
	local.StreamLabel = "2026-12-01T00:00:00.000"
	tmpl, err := ReadTemplate(filepath.Join("testdata", "Ferry.template.json"), local)
	require.NoError(t, err)
	require.Equal(t, "arn:aws:dynamodb:us-east-1:000000000000:table/ferry/stream/2026-12-01T00:00:00.000", tmpl.Mappings[0].StreamARN)
}

func TestStackTemplate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(manifest string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(manifest), 0o644))
	}
	write(`{"artifacts":{"Ferry.assets":{"type":"cdk:asset-manifest"},"Ferry":{"type":"aws:cloudformation:stack","properties":{"templateFile":"Ferry.template.json"}}}}`)
	p, err := StackTemplate(dir, "")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "Ferry.template.json"), p)
	_, err = StackTemplate(dir, "Other")
	require.ErrorContains(t, err, `no stack "Other" (stacks: Ferry)`)

	write(`{"artifacts":{"A":{"type":"aws:cloudformation:stack","properties":{"templateFile":"A.template.json"}},"B":{"type":"aws:cloudformation:stack","properties":{"templateFile":"B.template.json"}}}}`)
	_, err = StackTemplate(dir, "")
	require.ErrorContains(t, err, "several stacks (A, B)")
	p, err = StackTemplate(dir, "B")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "B.template.json"), p)
}

func TestFunctionNameFromPathMetadata(t *testing.T) {
	t.Parallel()
	r := &resolver{res: map[string]rawResource{
		"SeseventsFunctionAB12CD34": {Type: "AWS::Lambda::Function", Metadata: map[string]any{"aws:cdk:path": "Ferry/Sesevents/Function/Resource"}},
		"EnqueueFunction7C3706D6":   {Type: "AWS::Lambda::Function"},
	}}
	require.Equal(t, "sesevents", r.functionName("SeseventsFunctionAB12CD34"))
	require.Equal(t, "enqueue", r.functionName("EnqueueFunction7C3706D6"))
}

// TestCustomPuts: a custom resource whose Create is a DynamoDB PutItem is
// read as that call (its Fn::Join resolved), and its provider function is
// not one of the stack's functions; any other custom resource is refused.
func TestCustomPuts(t *testing.T) {
	t.Parallel()
	r := &resolver{local: DefaultLocal, res: map[string]rawResource{
		"Table":    {Type: "AWS::DynamoDB::Table", Properties: map[string]any{"TableName": "ferry"}},
		"Provider": {Type: "AWS::Lambda::Function"},
		"Marker": {Type: "Custom::FerryTableMarker", Properties: map[string]any{
			"ServiceToken": map[string]any{"Fn::GetAtt": []any{"Provider", "Arn"}},
			"Create": map[string]any{"Fn::Join": []any{"", []any{
				`{"service":"DynamoDB","action":"PutItem","parameters":{"TableName":"`, map[string]any{"Ref": "Table"},
				`","Item":{"pk":{"S":"M#table"}}}}`}}},
		}},
	}}
	puts, providers, err := r.customPuts([]string{"Marker", "Provider", "Table"})
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"Provider": true}, providers)
	require.Len(t, puts, 1)
	require.JSONEq(t, `{"TableName":"ferry","Item":{"pk":{"S":"M#table"}}}`, string(puts[0].Input))

	r.res["Marker"].Properties["Create"] = `{"service":"S3","action":"PutObject","parameters":{}}`
	_, _, err = r.customPuts([]string{"Marker"})
	require.ErrorContains(t, err, "only DynamoDB PutItem")
}
