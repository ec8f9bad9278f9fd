package infra

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/require"
)

// TestVersionTags: the stack and every taggable resource, the functions
// first, carry the version `make build` wrote beside the bootstraps.
func TestVersionTags(t *testing.T) {
	s := defaultStack(t)
	require.Equal(t, testVersion, s.stack.Props.Version)
	require.Equal(t, testVersion, *(*s.stack.Stack.Tags().TagValues())[VersionTagKey])

	tagged := func(typ string) {
		t.Helper()
		rs := s.resources(typ)
		require.NotEmpty(t, rs, typ)
		for id, r := range rs {
			var found bool
			for _, tag := range r["Properties"].(map[string]any)["Tags"].([]any) {
				tag := tag.(map[string]any)
				if tag["Key"] == VersionTagKey {
					require.Equal(t, testVersion, tag["Value"], id)
					found = true
				}
			}
			require.True(t, found, "%s %s has no %s tag", typ, id, VersionTagKey)
		}
	}
	tagged("AWS::Lambda::Function")
	require.Len(t, s.ferryFunctions(), len(Functions))
	tagged("AWS::DynamoDB::Table")
	tagged("AWS::IAM::Role")
}

func TestStackVersion(t *testing.T) {
	dir := t.TempDir()
	v, err := stackVersion(&Props{}, dir)
	require.NoError(t, err)
	require.Equal(t, UnknownVersion, v, "no VERSION file")

	require.NoError(t, os.WriteFile(filepath.Join(dir, VersionFile), []byte(" v0.1.0\n"), 0o644))
	v, err = stackVersion(&Props{}, dir)
	require.NoError(t, err)
	require.Equal(t, "v0.1.0", v)

	v, err = stackVersion(&Props{Version: "v0.2.0-rc.1+build.5"}, dir)
	require.NoError(t, err)
	require.Equal(t, "v0.2.0-rc.1+build.5", v, "Props.Version wins")

	_, err = stackVersion(&Props{Version: "v1;rm -rf"}, dir)
	require.ErrorContains(t, err, "Version")
	require.NoError(t, os.WriteFile(filepath.Join(dir, VersionFile), []byte("\n"), 0o644))
	_, err = stackVersion(&Props{}, dir)
	require.ErrorContains(t, err, VersionFile)
}

func TestStackTagsKeepTheCallers(t *testing.T) {
	own := map[string]*string{"team": jsii.String("payments")}
	got := stackTags(&own, "v0.1.0")
	require.Equal(t, map[string]*string{"team": jsii.String("payments"), VersionTagKey: jsii.String("v0.1.0")}, *got)
	require.Len(t, own, 1, "the caller's map is left alone")
	require.Equal(t, map[string]*string{VersionTagKey: jsii.String("v0.1.0")}, *stackTags(nil, "v0.1.0"))
}
