package infra

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// TestTableMatchesEngine guards against drift between table.go and the
// engine's own executable layout (outbox.TableInput, what `ferry table
// create` and `ferry dev` create): keys, indexes, projections and stream.
func TestTableMatchesEngine(t *testing.T) {
	t.Parallel()
	in := outbox.TableInput("ferry")
	keys := func(ks []types.KeySchemaElement) [2]string {
		var out [2]string
		for _, k := range ks {
			if k.KeyType == types.KeyTypeHash {
				out[0] = aws.ToString(k.AttributeName)
			} else {
				out[1] = aws.ToString(k.AttributeName)
			}
		}
		return out
	}
	require.Equal(t, [2]string{AttrPK, AttrSK}, keys(in.KeySchema))
	require.Equal(t, string(TableStreamView), string(in.StreamSpecification.StreamViewType))
	require.Equal(t, types.BillingModePayPerRequest, in.BillingMode)

	engine := map[string]TableIndex{}
	for _, g := range in.GlobalSecondaryIndexes {
		k := keys(g.KeySchema)
		ix := TableIndex{Name: aws.ToString(g.IndexName), HashKey: k[0], SortKey: k[1]}
		if g.Projection.ProjectionType == types.ProjectionTypeInclude {
			ix.Include = g.Projection.NonKeyAttributes
		} else {
			require.Equal(t, types.ProjectionTypeKeysOnly, g.Projection.ProjectionType, ix.Name)
		}
		engine[ix.Name] = ix
	}
	require.Len(t, engine, len(TableIndexes))
	for _, ix := range TableIndexes {
		require.Equal(t, engine[ix.Name], ix, "index %s", ix.Name)
	}
	require.Equal(t, outbox.IndexDue, IndexDue)
	require.Equal(t, outbox.IndexSubject, IndexSubject)
	require.Equal(t, string(outbox.StateADMITTED), StateReady)
}
