package paritytest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
)

// Client is what the suite drives: the engine, an SDK client pointed at the
// HTTP face, or an SDK client pointed at a real endpoint.
type Client = ddblocal.API

var (
	runID      = newRunID()
	tableCount atomic.Int64
)

func newRunID() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// bundle is one case's client and table.
type bundle struct {
	ctx    context.Context
	client Client
	table  string
}

// layout is the key schema of a case's table.
type layout int

const (
	// layoutStrings: pk S HASH, sk S RANGE; GSI "gsi" (gpk S, gsk N, ALL);
	// GSI "keys" (kpk S, KEYS_ONLY); LSI "lsi" (pk, lsk N, KEYS_ONLY).
	layoutStrings layout = iota
	// layoutNumbers: pk S HASH, sk N RANGE.
	layoutNumbers
	// layoutHashOnly: pk S HASH.
	layoutHashOnly
)

func def(name string, typ types.ScalarAttributeType) types.AttributeDefinition {
	return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: typ}
}

func hash(name string) types.KeySchemaElement {
	return types.KeySchemaElement{AttributeName: aws.String(name), KeyType: types.KeyTypeHash}
}

func rng(name string) types.KeySchemaElement {
	return types.KeySchemaElement{AttributeName: aws.String(name), KeyType: types.KeyTypeRange}
}

// setup makes a fresh table of the layout and deletes it when the case ends.
func setup(ctx context.Context, t *testing.T, newClient func(t *testing.T) Client, l layout) *bundle {
	t.Helper()
	c := newClient(t)
	name := fmt.Sprintf("parity_%s_%d", runID, tableCount.Add(1))
	in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest}
	switch l {
	case layoutStrings:
		in.AttributeDefinitions = []types.AttributeDefinition{def("pk", "S"), def("sk", "S"), def("gpk", "S"), def("gsk", "N"), def("kpk", "S"), def("lsk", "N")}
		in.KeySchema = []types.KeySchemaElement{hash("pk"), rng("sk")}
		in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{
			{IndexName: aws.String("gsi"), KeySchema: []types.KeySchemaElement{hash("gpk"), rng("gsk")}, Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}},
			{IndexName: aws.String("keys"), KeySchema: []types.KeySchemaElement{hash("kpk")}, Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}},
		}
		in.LocalSecondaryIndexes = []types.LocalSecondaryIndex{
			{IndexName: aws.String("lsi"), KeySchema: []types.KeySchemaElement{hash("pk"), rng("lsk")}, Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}},
		}
	case layoutNumbers:
		in.AttributeDefinitions = []types.AttributeDefinition{def("pk", "S"), def("sk", "N")}
		in.KeySchema = []types.KeySchemaElement{hash("pk"), rng("sk")}
	case layoutHashOnly:
		in.AttributeDefinitions = []types.AttributeDefinition{def("pk", "S")}
		in.KeySchema = []types.KeySchemaElement{hash("pk")}
	}
	_, err := c.CreateTable(ctx, in)
	require.NoError(t, err)
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 500 * time.Millisecond })
	require.NoError(t, w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Minute))
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return &bundle{ctx: ctx, client: c, table: name}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

type item = map[string]types.AttributeValue

func key(pk, sk string) item { return item{"pk": s(pk), "sk": s(sk)} }

func (b *bundle) put(t *testing.T, it item) {
	t.Helper()
	_, err := b.client.PutItem(b.ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: it})
	require.NoError(t, err)
}

func (b *bundle) get(t *testing.T, k item) item {
	t.Helper()
	out, err := b.client.GetItem(b.ctx, &dynamodb.GetItemInput{TableName: aws.String(b.table), Key: k, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	return out.Item
}

// requireAPIError checks the DynamoDB error code and that the message
// contains msg.
func requireAPIError(t *testing.T, err error, code, msg string) {
	t.Helper()
	require.Error(t, err)
	var ae smithy.APIError
	require.True(t, errors.As(err, &ae), "not an API error: %v", err)
	require.Equal(t, code, ae.ErrorCode(), err.Error())
	require.Contains(t, ae.ErrorMessage(), msg)
}

// eventually retries check for what DynamoDB makes only eventually true
// (global secondary index reads). The engine without lag passes the first
// time; a real endpoint may need a few seconds.
func eventually(t *testing.T, check func() bool) {
	t.Helper()
	for i := 0; i < 40; i++ {
		if check() {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatal("condition never became true")
}

func strs(items []item, attr string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		switch v := it[attr].(type) {
		case *types.AttributeValueMemberS:
			out[i] = v.Value
		case *types.AttributeValueMemberN:
			out[i] = v.Value
		}
	}
	return out
}

func repeat(c string, n int) string { return strings.Repeat(c, n) }
