package outbox_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

// TestEnsureTableEnablesTTLOnAnExistingTable: a table created without its
// TTL setting (a run that died between its marker and UpdateTimeToLive, or
// a stack whose template has no TTL) gets TTL from the next EnsureTable,
// and EnsureTable may run any number of times.
func TestEnsureTableEnablesTTLOnAnExistingTable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	db := ddblocal.New(ddblocal.WithClock(clk))
	_, err := db.CreateTable(ctx, outbox.TableInput("ferry"))
	require.NoError(t, err)
	// The stack's way: the marker of the layout, nothing else.
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("ferry"), Item: outbox.LayoutMarker()})
	require.NoError(t, err)
	eng, err := outbox.New(db, clk, outbox.NewRegistry(), outbox.Config{Table: "ferry"})
	require.NoError(t, err)
	for range 2 {
		require.NoError(t, eng.EnsureTable(ctx))
		out, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("ferry")})
		require.NoError(t, err)
		require.Equal(t, types.TimeToLiveStatusEnabled, out.TimeToLiveDescription.TimeToLiveStatus)
		require.Equal(t, "ttl", aws.ToString(out.TimeToLiveDescription.AttributeName))
	}
}
