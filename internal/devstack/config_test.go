package devstack

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// TestConfigFollowsTheEngine ties `ferry dev`'s engine settings to the
// engine: the lease, margin, retry base and table default to outbox.Config's,
// and a lease/margin pair the engine refuses is refused naming the flag, with
// the engine's own reason.
func TestConfigFollowsTheEngine(t *testing.T) {
	t.Parallel()
	c := Config{}.WithDefaults()
	engine := outbox.Config{}.WithDefaults()
	require.Equal(t, engine.Lease, c.Lease)
	require.Equal(t, engine.WriteMargin, c.WriteMargin)
	require.Equal(t, engine.RetryBase, c.RetryBase)
	require.Equal(t, outbox.DefaultTable, c.Table)
	require.NoError(t, c.Validate())

	for _, lm := range [][2]time.Duration{{time.Minute, time.Minute}, {30 * time.Second, time.Minute}, {5 * time.Minute, 5 * time.Second}, {5 * time.Minute, 6 * time.Second}} {
		d := c
		d.Lease, d.WriteMargin = lm[0], lm[1]
		engineErr := d.outbox().WithDefaults().Validate()
		err := d.Validate()
		if engineErr == nil {
			require.NoError(t, err, lm)
			continue
		}
		var ve *outbox.ValidationError
		require.ErrorAs(t, engineErr, &ve)
		require.ErrorContains(t, err, "--write-margin: "+ve.Message, lm)
	}
}
