package ddbhttp_test

import (
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
)

// TestBoto3LegacyClient runs testdata/boto3_legacy.py (when python3 with
// boto3 is installed): an older-style client that uses only the legacy
// parameters (Expected, KeyConditions, QueryFilter, ScanFilter,
// AttributesToGet, AttributeUpdates), boto3's Table resource and its
// dynamodbstreams client, against the handler.
func TestBoto3LegacyClient(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	if exec.Command(py, "-c", "import boto3").Run() != nil {
		t.Skip("boto3 is not installed")
	}
	db := ddblocal.New(ddblocal.WithTableStatusDelay(ddblocal.DefaultServerTableStatusDelay))
	srv := httptest.NewServer(ddbhttp.NewHandler(db))
	t.Cleanup(srv.Close)
	cmd := exec.Command(py, "testdata/boto3_legacy.py", srv.URL)
	cmd.Env = cliEnv()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, []string{
		"conditional put refused: ConditionalCheckFailedException",
		"query KeyConditions BETWEEN 1..3 minus v=x2: ['1', '3']",
		"scan IN (0,4): ['0', '4']",
		"update AttributeUpdates: {'n': {'N': '5'}, 'pk': {'S': 'a'}, 'sk': {'N': '0'}}",
		"resource get_item: {'pk': 'a', 'sk': Decimal('1'), 'v': 'x1'}",
		"stream records: [('INSERT', ['pk', 'sk', 'v']), ('INSERT', ['pk', 'sk', 'v']), ('INSERT', ['pk', 'sk', 'v']), ('INSERT', ['pk', 'sk', 'v']), ('INSERT', ['pk', 'sk', 'v']), ('MODIFY', ['n', 'pk', 'sk'])]",
	}, strings.Split(strings.TrimSpace(string(out)), "\n"))
}
