package paritytest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

const docBillingSummary = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BillingModeSummary.html"

func billingCases() []parityCase {
	return []parityCase{
		// LastUpdateToPayPerRequestDateTime: "the date and time when
		// PAY_PER_REQUEST was last set as the read/write capacity mode" — a
		// PROVISIONED table that never was on demand has none.
		{"PayPerRequestTimeOnlyWhenOnDemand", docBillingSummary, func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			c := nc(t)
			name := fmt.Sprintf("parity_%s_%d", runID, tableCount.Add(1))
			_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModeProvisioned,
				ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(1), WriteCapacityUnits: aws.Int64(1)},
				AttributeDefinitions:  []types.AttributeDefinition{def("pk", "S")}, KeySchema: []types.KeySchemaElement{hash("pk")}})
			require.NoError(t, err)
			t.Cleanup(func() {
				_, _ = c.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
			})
			w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 500 * time.Millisecond })
			require.NoError(t, w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Minute))
			d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
			require.NoError(t, err)
			if s := d.Table.BillingModeSummary; s != nil {
				require.Nil(t, s.LastUpdateToPayPerRequestDateTime, "a PROVISIONED table never on demand")
			}
			b := setup(ctx, t, nc, layoutHashOnly)
			d, err = b.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(b.table)})
			require.NoError(t, err)
			require.Equal(t, types.BillingModePayPerRequest, d.Table.BillingModeSummary.BillingMode)
			require.NotNil(t, d.Table.BillingModeSummary.LastUpdateToPayPerRequestDateTime)
		}},
	}
}
