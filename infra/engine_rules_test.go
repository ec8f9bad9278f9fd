package infra

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// TestPropsFollowTheEngine ties the stack's engine settings to the engine:
// the defaults are outbox.Config's, and a lease/margin/skew combination the
// engine refuses is refused here too (and one it accepts is not refused for
// the engine's reasons).
func TestPropsFollowTheEngine(t *testing.T) {
	t.Parallel()
	p := Props{AssetDir: testAssetDir}.WithDefaults()
	want := outbox.Config{Table: DefaultTableName}.WithDefaults()
	require.Equal(t, want, p.engineConfig())
	// One bound on the partition count everywhere (issue 28, item 5).
	q := p
	q.Partitions = outbox.MaxPartitionCount
	require.NoError(t, q.Validate())
	q.Partitions++
	require.ErrorContains(t, q.Validate(), "Partitions (1025) must be between 1 and 1024")
	require.Error(t, q.engineConfig().Validate(), "the engine refuses it too")

	for _, c := range []struct{ lease, margin, skew time.Duration }{
		{5 * time.Minute, time.Minute, 5 * time.Second},
		{30 * time.Second, time.Minute, 5 * time.Second},
		{time.Minute, time.Minute, 5 * time.Second},
		{5 * time.Minute, 4 * time.Second, 5 * time.Second},
		{5 * time.Minute, time.Minute, time.Minute},
	} {
		q := p
		q.Lease, q.WriteMargin, q.ClockSkew = c.lease, c.margin, c.skew
		engineErr := outbox.Config{Table: "t", Lease: c.lease, WriteMargin: c.margin, ClockSkew: c.skew}.WithDefaults().Validate()
		var ve *outbox.ValidationError
		err := q.Validate()
		if engineErr != nil {
			require.ErrorAs(t, engineErr, &ve)
			require.ErrorContains(t, err, ve.Message, "%+v", c)
		} else if err != nil {
			require.NotContains(t, err.Error(), "must be shorter than Lease", "%+v", c)
		}
	}
}
