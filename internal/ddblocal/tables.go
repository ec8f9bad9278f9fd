package ddblocal

import (
	"context"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// CreateTable creates a table with its indexes. The table is ACTIVE at once.
func (db *DB) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	c, err := db.begin(ctx, "CreateTable", aws.ToString(in.TableName))
	if err != nil {
		return nil, err
	}
	s, err := buildSchema(in, db.clock.Now(), db.region, db.account)
	if err != nil {
		return finish[dynamodb.CreateTableOutput](c, nil, err)
	}
	if err := checkTags(in.Tags); err != nil {
		return finish[dynamodb.CreateTableOutput](c, nil, err)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	defer db.logMeta("CreateTable", s.name, in)
	if _, exists := db.tables[s.name]; exists {
		return finish[dynamodb.CreateTableOutput](c, nil, inUseError("Table already exists: "+s.name))
	}
	t := newTable(s)
	t.tags = tagMap(in.Tags)
	db.tables[s.name] = t
	db.syncStream(t, db.clock.Now(), false)
	return finish(c, &dynamodb.CreateTableOutput{TableDescription: t.describe(types.TableStatusActive)}, nil)
}

// DescribeTable describes a table, completely enough for the SDK's
// TableExists waiter.
func (db *DB) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	name := aws.ToString(in.TableName)
	c, err := db.begin(ctx, "DescribeTable", name)
	if err != nil {
		return nil, err
	}
	db.lockRead(name)
	defer db.mu.RUnlock()
	t, ok := db.tables[name]
	if !ok {
		if err := validateTableName(name, "tableName"); err != nil {
			return finish[dynamodb.DescribeTableOutput](c, nil, err)
		}
		return finish[dynamodb.DescribeTableOutput](c, nil, notFoundError("Requested resource not found: Table: "+name+" not found"))
	}
	return finish(c, &dynamodb.DescribeTableOutput{Table: t.describe(types.TableStatusActive)}, nil)
}

// DeleteTable deletes a table and everything in it.
func (db *DB) DeleteTable(ctx context.Context, in *dynamodb.DeleteTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error) {
	name := aws.ToString(in.TableName)
	c, err := db.begin(ctx, "DeleteTable", name)
	if err != nil {
		return nil, err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	defer db.logMeta("DeleteTable", name, in)
	t, ok := db.tables[name]
	if !ok {
		if err := validateTableName(name, "tableName"); err != nil {
			return finish[dynamodb.DeleteTableOutput](c, nil, err)
		}
		return finish[dynamodb.DeleteTableOutput](c, nil, notFoundError("Requested resource not found: Table: "+name+" not found"))
	}
	desc := deletedDescription(t.describe(types.TableStatusDeleting))
	db.syncStream(t, db.clock.Now(), true)
	for _, ix := range t.indexes {
		db.lagging.Add(-int64(len(ix.pending)))
	}
	delete(db.tables, name)
	return finish(c, &dynamodb.DeleteTableOutput{TableDescription: desc}, nil)
}

// ListTables lists table names in order, paginated like DynamoDB.
func (db *DB) ListTables(ctx context.Context, in *dynamodb.ListTablesInput, _ ...func(*dynamodb.Options)) (*dynamodb.ListTablesOutput, error) {
	c, err := db.begin(ctx, "ListTables", "")
	if err != nil {
		return nil, err
	}
	limit := 100
	if in.Limit != nil {
		l := int(aws.ToInt32(in.Limit))
		if l < 1 || l > 100 {
			return finish[dynamodb.ListTablesOutput](c, nil, validationError("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value between 1 and 100", l))
		}
		limit = l
	}
	db.mu.RLock()
	names := make([]string, 0, len(db.tables))
	for n := range db.tables {
		names = append(names, n)
	}
	db.mu.RUnlock()
	sort.Strings(names)
	start := aws.ToString(in.ExclusiveStartTableName)
	out := &dynamodb.ListTablesOutput{TableNames: []string{}}
	for _, n := range names {
		if start != "" && n <= start {
			continue
		}
		if len(out.TableNames) == limit {
			out.LastEvaluatedTableName = aws.String(out.TableNames[len(out.TableNames)-1])
			break
		}
		out.TableNames = append(out.TableNames, n)
	}
	return finish(c, out, nil)
}

// deletedDescription is the part of a TableDescription DeleteTable answers:
// DynamoDB leaves out the key schema, attribute definitions, indexes and
// creation time there (github.com/scylladb/scylladb issue 11472, checked
// against DynamoDB).
func deletedDescription(d *types.TableDescription) *types.TableDescription {
	return &types.TableDescription{
		TableName:             d.TableName,
		TableArn:              d.TableArn,
		TableId:               d.TableId,
		TableStatus:           d.TableStatus,
		ItemCount:             d.ItemCount,
		TableSizeBytes:        d.TableSizeBytes,
		BillingModeSummary:    d.BillingModeSummary,
		ProvisionedThroughput: d.ProvisionedThroughput,
	}
}
