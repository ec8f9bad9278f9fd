package release

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOpenAPIFingerprintIgnoresLayoutAndInfoVersion(t *testing.T) {
	a, err := OpenAPIFingerprint([]byte(`{"openapi":"3.1.0","info":{"title":"Ferry","version":"devel"},"paths":{"/a":{}}}`))
	require.NoError(t, err)
	b, err := OpenAPIFingerprint([]byte("{\n  \"paths\": {\"/a\": {}},\n  \"info\": {\"version\": \"v0.1.0\", \"title\": \"Ferry\"},\n  \"openapi\": \"3.1.0\"\n}"))
	require.NoError(t, err)
	require.Equal(t, a, b)
	c, err := OpenAPIFingerprint([]byte(`{"openapi":"3.1.0","info":{"title":"Ferry","version":"devel"},"paths":{"/b":{}}}`))
	require.NoError(t, err)
	require.NotEqual(t, a, c, "a changed path changes the fingerprint")
	_, err = OpenAPIFingerprint([]byte(`{`))
	require.Error(t, err)
}

func TestTableFingerprintIsStable(t *testing.T) {
	a, err := TableFingerprint()
	require.NoError(t, err)
	b, err := TableFingerprint()
	require.NoError(t, err)
	require.Equal(t, a, b)
	require.Len(t, a, 16)
}

func TestFingerprintLineParses(t *testing.T) {
	f := Fingerprint{Table: "0123456789abcdef", OpenAPI: "fedcba9876543210"}
	c, err := Parse([]byte(UnreleasedHeading + "\n\n" + f.Line() + "\n"))
	require.NoError(t, err)
	require.Equal(t, f, c.Unreleased.Fingerprint)
}
