package othergen

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReleaseLeavesHeldRowsAlone runs internal/sim/othersim's
// TestOlderBuildLeavesHeldRowsAlone with the engine of release v0.1.0,
// generated from the tag's own source into an overlay (ADR 0019, "Mixed
// builds"): v0.1.0's retention, trimming and drainer beside this build's
// held lane members leave them held and the lane in order. Skipped in a
// clone without the tag.
func TestReleaseLeavesHeldRowsAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release's engine")
	}
	root := repoRoot(t)
	if err := exec.Command("git", "-C", root, "rev-parse", "--verify", "-q", "v0.1.0^{commit}").Run(); err != nil {
		t.Skip("no v0.1.0 tag in this clone")
	}
	files, err := Files(Params{Root: root, Ref: "v0.1.0"})
	require.NoError(t, err)
	ov, err := Overlay(root, t.TempDir(), files)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// -vet=off: vet cannot run on packages placed by an overlay alone.
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-vet=off", "-tags", "otherbuild", "-overlay", ov,
		"./internal/sim/othersim", "-run", "^TestOlderBuildLeavesHeldRowsAlone$", "-v")
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), "v0.1.0 beside this build's held rows:\n%s", out.String())
	require.Contains(t, out.String(), "--- PASS: TestOlderBuildLeavesHeldRowsAlone/trimming")
	require.Contains(t, out.String(), "--- PASS: TestOlderBuildLeavesHeldRowsAlone/sweeping")
}
