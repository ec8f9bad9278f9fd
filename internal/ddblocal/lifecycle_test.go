package ddblocal_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

func lifecycleDB(t *testing.T) (*ddblocal.DB, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(epoch)
	return ddblocal.New(ddblocal.WithClock(clk), ddblocal.WithTableStatusDelay(time.Second)), clk
}

func createLifecycleTable(t *testing.T, db *ddblocal.DB) *dynamodb.CreateTableOutput {
	t.Helper()
	out, err := db.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName: aws.String(tbl), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}, {AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("by-g"), KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}},
	})
	require.NoError(t, err)
	return out
}

func putPK(db *ddblocal.DB, pk string) error {
	_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s(pk), "g": s("x")}})
	return err
}

func TestTableIsCreatingUntilTheDelayPasses(t *testing.T) {
	t.Parallel()
	db, clk := lifecycleDB(t)
	out := createLifecycleTable(t, db)
	require.Equal(t, types.TableStatusCreating, out.TableDescription.TableStatus)
	require.Equal(t, types.IndexStatusCreating, out.TableDescription.GlobalSecondaryIndexes[0].IndexStatus)
	var nf *types.ResourceNotFoundException
	require.ErrorAs(t, putPK(db, "a"), &nf, "a write before the table is ACTIVE")
	_, err := db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(tbl)})
	var inUse *types.ResourceInUseException
	require.ErrorAs(t, err, &inUse)
	lt, err := db.ListTables(context.Background(), &dynamodb.ListTablesInput{})
	require.NoError(t, err)
	require.Equal(t, []string{tbl}, lt.TableNames)
	clk.Advance(time.Second)
	require.NoError(t, putPK(db, "a"))
}

// TestDescribeTableEndsTheState: a client that waits (DescribeTable, as the
// SDK's TableExists waiter does) finds the table ACTIVE at its first look,
// so the waiter returns without sleeping.
func TestDescribeTableEndsTheState(t *testing.T) {
	t.Parallel()
	db, _ := lifecycleDB(t)
	createLifecycleTable(t, db)
	w := dynamodb.NewTableExistsWaiter(db)
	require.NoError(t, w.Wait(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(tbl)}, time.Minute))
	require.EqualValues(t, 1, db.Capacity(tbl).Calls["DescribeTable"], "one look")
	require.NoError(t, putPK(db, "a"))
}

func TestUpdateTableIsUpdatingAndTheNewIndexBackfills(t *testing.T) {
	t.Parallel()
	db, clk := lifecycleDB(t)
	createLifecycleTable(t, db)
	clk.Advance(time.Second)
	require.NoError(t, putPK(db, "a"))
	ctx := context.Background()
	out, err := db.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(tbl),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("h"), AttributeType: types.ScalarAttributeTypeS}},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{IndexName: aws.String("by-h"),
			KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("h"), KeyType: types.KeyTypeHash}}, Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}}})
	require.NoError(t, err)
	require.Equal(t, types.TableStatusUpdating, out.TableDescription.TableStatus)
	var created *types.GlobalSecondaryIndexDescription
	for i, g := range out.TableDescription.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == "by-h" {
			created = &out.TableDescription.GlobalSecondaryIndexes[i]
		}
	}
	require.NotNil(t, created)
	require.Equal(t, types.IndexStatusCreating, created.IndexStatus)
	require.True(t, aws.ToBool(created.Backfilling))
	require.NoError(t, putPK(db, "b"), "an UPDATING table takes writes")
	query := func() error {
		_, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("by-h"),
			KeyConditionExpression: aws.String("h = :h"), ExpressionAttributeValues: map[string]types.AttributeValue{":h": s("x")}})
		return err
	}
	require.ErrorContains(t, query(), "Cannot read from backfilling global secondary index: by-h")
	_, err = db.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(tbl), BillingMode: types.BillingModeProvisioned,
		ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(1), WriteCapacityUnits: aws.Int64(1)}})
	var inUse *types.ResourceInUseException
	require.ErrorAs(t, err, &inUse, "one update at a time")
	clk.Advance(time.Second)
	require.NoError(t, query())
}

func TestDeletingTableHoldsItsName(t *testing.T) {
	t.Parallel()
	db, clk := lifecycleDB(t)
	createLifecycleTable(t, db)
	clk.Advance(time.Second)
	ctx := context.Background()
	out, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(tbl)})
	require.NoError(t, err)
	require.Equal(t, types.TableStatusDeleting, out.TableDescription.TableStatus)
	var nf *types.ResourceNotFoundException
	require.ErrorAs(t, putPK(db, "a"), &nf)
	_, err = db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(tbl), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}}})
	var inUse *types.ResourceInUseException
	require.ErrorAs(t, err, &inUse, "the name is not free while DELETING")
	lt, err := db.ListTables(ctx, &dynamodb.ListTablesInput{})
	require.NoError(t, err)
	require.Equal(t, []string{tbl}, lt.TableNames)
	// The TableNotExists waiter's DescribeTable ends the state.
	require.NoError(t, dynamodb.NewTableNotExistsWaiter(db).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tbl)}, time.Minute))
	createLifecycleTable(t, db)
}

func TestTableStatusDelayDefaultsToZero(t *testing.T) {
	t.Parallel()
	db := ddblocal.New(ddblocal.WithClock(clock.NewManual(epoch)))
	out := createLifecycleTable(t, db)
	require.Equal(t, types.TableStatusActive, out.TableDescription.TableStatus)
	require.NoError(t, putPK(db, "a"))
}

// TestRestartEndsTransientStates: a table still CREATING when its engine
// stopped is ACTIVE when the data directory is opened again.
func TestRestartEndsTransientStates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clock.NewManual(epoch)
	db, err := ddblocal.Open(dir, ddblocal.WithClock(clk), ddblocal.WithTableStatusDelay(time.Hour))
	require.NoError(t, err)
	createLifecycleTable(t, db)
	ddblocal.CrashForTest(db)
	db, err = ddblocal.Open(dir, ddblocal.WithClock(clk), ddblocal.WithTableStatusDelay(time.Hour))
	require.NoError(t, err)
	require.NoError(t, putPK(db, "a"))
	require.NoError(t, db.Close())
}
