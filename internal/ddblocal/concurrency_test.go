package ddblocal_test

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// Transfers between accounts in two tables, by concurrent transactions,
// keep the total constant for every concurrent transactional reader: each
// transaction is atomic across tables, and the index follows every write.
func TestTransactionsAreAtomicAcrossTables(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.db.CreateTable(b.ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("other"),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	})
	require.NoError(t, err)
	const accounts = 4
	b.put(t, map[string]types.AttributeValue{"pk": s("acct"), "sk": s("0"), "bal": n("100"), "gpk": s("g"), "gsk": n("100")})
	for i := 1; i < accounts; i++ {
		_, err := b.db.PutItem(b.ctx, &dynamodb.PutItemInput{TableName: aws.String("other"), Item: map[string]types.AttributeValue{"pk": s(fmt.Sprint(i)), "bal": n("100")}})
		require.NoError(t, err)
	}
	ref := func(i int) (string, map[string]types.AttributeValue) {
		if i == 0 {
			return tbl, key("acct", "0")
		}
		return "other", map[string]types.AttributeValue{"pk": s(fmt.Sprint(i))}
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for k := 0; k < 40; k++ {
				from, to := (w+k)%accounts, (w+k+1)%accounts
				ft, fk := ref(from)
				tt, tk := ref(to)
				upd := func(table string, k map[string]types.AttributeValue, delta string, cond *string) types.TransactWriteItem {
					expr := "SET bal = bal + :d"
					if table == tbl {
						expr += ", gsk = gsk + :d"
					}
					return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(table), Key: k, UpdateExpression: aws.String(expr),
						ConditionExpression: cond, ExpressionAttributeValues: map[string]types.AttributeValue{":d": n(delta)}}}
				}
				_, err := b.db.TransactWriteItems(b.ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					upd(ft, fk, "-7", aws.String("bal >= :d")), upd(tt, tk, "7", nil),
				}})
				var tce *types.TransactionCanceledException
				if err != nil && !errors.As(err, &tce) {
					t.Error(err)
				}
			}
		}(w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 40; k++ {
				var gets []types.TransactGetItem
				for i := 0; i < accounts; i++ {
					table, k := ref(i)
					gets = append(gets, types.TransactGetItem{Get: &types.Get{TableName: aws.String(table), Key: k}})
				}
				out, err := b.db.TransactGetItems(b.ctx, &dynamodb.TransactGetItemsInput{TransactItems: gets})
				if err != nil {
					t.Error(err)
					return
				}
				total := 0
				for _, r := range out.Responses {
					v, _ := strconv.Atoi(r.Item["bal"].(*types.AttributeValueMemberN).Value)
					total += v
				}
				if total != 100*accounts {
					t.Errorf("a reader saw a total of %d", total)
				}
			}
		}()
	}
	wg.Wait()
	items := b.queryIndex(t, "g")
	require.Len(t, items, 1)
	require.Equal(t, b.get(t, "acct", "0")["bal"], items[0]["gsk"], "the index follows every transactional write")
}
