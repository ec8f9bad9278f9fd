//go:build lambdastack

package lambdastack

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLocalStackOneVersion is issue 19's "done when": what `make build`
// stamped (bin/VERSION), `ferry version` of the CLI `make ferry` builds, the
// cold-start line of every function the stack runs, /healthz through the
// stack's front, and the tags of the stack synthesized from those
// bootstraps (the stack's own, in the cloud assembly, and each function's,
// in the template) all say the same version.
func TestLocalStackOneVersion(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testBin, "VERSION"))
	require.NoError(t, err)
	want := strings.TrimSpace(string(raw))
	require.NotEmpty(t, want)
	require.NotEqual(t, "devel", want, "make build stamps git describe")

	// ferry version, built by make like make dev and make local build it.
	ferry := filepath.Join(t.TempDir(), "ferry")
	cmd := exec.Command("make", "--no-print-directory", "ferry", "FERRY_BIN="+ferry)
	cmd.Dir = testRoot
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(ferry, "version").Output()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(out), "ferry "+want+" ("), "ferry version: %s, bin/VERSION: %s", out, want)

	// The stack's own tags (the cloud assembly's manifest) and each
	// function's (the template).
	manifest, err := os.ReadFile(filepath.Join(filepath.Dir(testTemplate), "manifest.json"))
	require.NoError(t, err)
	var m struct {
		Artifacts map[string]struct {
			Type       string `json:"type"`
			Properties struct {
				Tags map[string]string `json:"tags"`
			} `json:"properties"`
		} `json:"artifacts"`
	}
	require.NoError(t, json.Unmarshal(manifest, &m))
	stacks := 0
	for name, a := range m.Artifacts {
		if a.Type == "aws:cloudformation:stack" {
			require.Equal(t, want, a.Properties.Tags["ferry:version"], "stack %s", name)
			stacks++
		}
	}
	require.Equal(t, 1, stacks)
	fnDirs, err := os.ReadDir(filepath.Join(testRoot, "functions"))
	require.NoError(t, err)
	rawTmpl, err := os.ReadFile(testTemplate)
	require.NoError(t, err)
	var doc struct {
		Resources map[string]struct {
			Type       string `json:"Type"`
			Properties struct {
				Tags json.RawMessage `json:"Tags"` // a list on a function, a map on some types
			} `json:"Properties"`
		} `json:"Resources"`
	}
	require.NoError(t, json.Unmarshal(rawTmpl, &doc))
	functions := 0
	for id, r := range doc.Resources {
		if r.Type != "AWS::Lambda::Function" {
			continue
		}
		functions++
		var tags []struct{ Key, Value string }
		require.NoError(t, json.Unmarshal(r.Properties.Tags, &tags), id)
		var got string
		for _, tag := range tags {
			if tag.Key == "ferry:version" {
				got = tag.Value
			}
		}
		require.Equal(t, want, got, "function %s", id)
	}
	// One function per functions/ directory, besides the CDK's provider
	// function of the table marker's custom resource (infra/marker.go),
	// which ferry local does not run.
	tmpl, err := ReadTemplate(testTemplate, DefaultLocal)
	require.NoError(t, err)
	require.Len(t, tmpl.Functions, len(fnDirs), "one function ferry local runs per functions/ directory")
	require.Equal(t, len(fnDirs)+1, functions, "the functions and the marker's provider, each tagged")

	// The running stack: /healthz through the front, then every function
	// the stack invoked logged its cold start with the version.
	b := startStack(t, testTemplate, map[string]time.Duration{"reaper": time.Second, "retention": time.Second})
	// /healthz is an IAM-authorized route in the stack; ferry local takes
	// the dev token for it, as for every route.
	status, health := b.api(t, http.MethodGet, "/healthz", "")
	require.Equal(t, http.StatusOK, status, "%v", health)
	require.Equal(t, want, health["version"], "%v", health)
	b.enqueue(t, `{"kind":"email","payload":{"from":"shop@example.com","to":["ann@example.com"],"subject":"Hi","text":"Hello."}}`)

	invoked := []string{"enqueue", "drainer", "reaper", "retention"}
	coldStarts := func() map[string]string {
		seen := map[string]string{}
		for _, line := range strings.Split(b.out.String(), "\n") {
			_, js, ok := strings.Cut(line, "| ")
			if !ok {
				continue
			}
			var l struct{ Msg, Function, Version string }
			if json.Unmarshal([]byte(js), &l) == nil && l.Msg == "cold start" {
				require.Equal(t, want, l.Version, "%s", line)
				seen[l.Function] = l.Version
			}
		}
		return seen
	}
	require.Eventually(t, func() bool {
		seen := coldStarts()
		for _, fn := range invoked {
			if seen[fn] == "" {
				return false
			}
		}
		return true
	}, 60*time.Second, 100*time.Millisecond, "a cold-start line of each of %v", invoked)
}
