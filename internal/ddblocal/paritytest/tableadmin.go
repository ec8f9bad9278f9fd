package paritytest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

const (
	docUpdateTable = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTable.html"
	docDeleteTable = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_DeleteTable.html"
	docBackups     = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_DescribeContinuousBackups.html"
)

// admin is the table-administration API beyond Client: the engine, the
// SDK client and the HTTP face's clients all have it.
type admin interface {
	UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
	DescribeContinuousBackups(ctx context.Context, in *dynamodb.DescribeContinuousBackupsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeContinuousBackupsOutput, error)
}

func asAdmin(t *testing.T, c Client) admin {
	t.Helper()
	a, ok := c.(admin)
	require.True(t, ok, "the client has no table-administration API")
	return a
}

// tableAdminCases: table administration (issue 20, item 6).
func tableAdminCases() []parityCase {
	return []parityCase{
		// UpdateTable with the table's own BillingMode is accepted (tools
		// send the whole desired state); with nothing to change it is a
		// ValidationException naming what it takes (observed text).
		{"UpdateTableSameBillingMode", docUpdateTable, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutHashOnly)
			a := asAdmin(t, b.client)
			out, err := a.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(b.table), BillingMode: types.BillingModePayPerRequest})
			require.NoError(t, err)
			require.Equal(t, types.BillingModePayPerRequest, out.TableDescription.BillingModeSummary.BillingMode)
			_, err = a.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(b.table)})
			requireAPIError(t, err, "ValidationException", "At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates")
		}},
		// DeleteTable answers a short description: name, ARN, id, DELETING,
		// billing and throughput, but no key schema, attribute definitions,
		// indexes or creation time (github.com/scylladb/scylladb issue
		// 11472, checked against DynamoDB).
		{"DeleteTableDescription", docDeleteTable, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutStrings)
			out, err := b.client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(b.table)})
			require.NoError(t, err)
			d := out.TableDescription
			require.Equal(t, b.table, aws.ToString(d.TableName))
			require.Equal(t, types.TableStatusDeleting, d.TableStatus)
			require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, aws.ToString(d.TableId))
			require.Contains(t, aws.ToString(d.TableArn), ":table/"+b.table)
			require.Equal(t, types.BillingModePayPerRequest, d.BillingModeSummary.BillingMode)
			require.NotNil(t, d.BillingModeSummary.LastUpdateToPayPerRequestDateTime)
			require.Equal(t, int64(0), aws.ToInt64(d.ProvisionedThroughput.ReadCapacityUnits))
			require.Nil(t, d.KeySchema)
			require.Nil(t, d.AttributeDefinitions)
			require.Nil(t, d.GlobalSecondaryIndexes)
			require.Nil(t, d.LocalSecondaryIndexes)
			require.Nil(t, d.CreationDateTime)
		}},
		// DescribeContinuousBackups: point-in-time recovery is DISABLED on a
		// new table (continuous backups are DISABLED right after creation;
		// AWS reports ENABLED a few seconds later, so both are accepted
		// here); a missing table is TableNotFoundException, an improperly
		// named one a ValidationException.
		{"DescribeContinuousBackups", docBackups, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			b := setup(ctx, t, nc, layoutHashOnly)
			a := asAdmin(t, b.client)
			out, err := a.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(b.table)})
			require.NoError(t, err)
			require.Equal(t, types.PointInTimeRecoveryStatusDisabled, out.ContinuousBackupsDescription.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus)
			require.Contains(t, []types.ContinuousBackupsStatus{types.ContinuousBackupsStatusDisabled, types.ContinuousBackupsStatusEnabled}, out.ContinuousBackupsDescription.ContinuousBackupsStatus)
			_, err = a.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(b.table + "_missing")})
			requireAPIError(t, err, "TableNotFoundException", "")
			_, err = a.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String("a$b")})
			requireAPIError(t, err, "ValidationException", "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+")
		}},
	}
}
