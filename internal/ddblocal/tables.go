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
	now := db.clock.Now()
	if _, exists := db.tables[s.name]; exists || db.deletingNamed(s.name, now) != nil {
		return finish[dynamodb.CreateTableOutput](c, nil, inUseError("Table already exists: "+s.name))
	}
	t := newTable(s)
	t.tags = tagMap(in.Tags)
	t.activeAt = now.Add(db.statusDelay)
	db.tables[s.name] = t
	db.syncStream(t, now, false)
	return finish(c, &dynamodb.CreateTableOutput{TableDescription: t.describeAt(now)}, nil)
}

// DescribeTable describes a table, completely enough for the SDK's
// TableExists waiter.
func (db *DB) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	name := aws.ToString(in.TableName)
	c, err := db.begin(ctx, "DescribeTable", name)
	if err != nil {
		return nil, err
	}
	if db.statusDelay > 0 {
		// A DescribeTable ends a transient state (lifecycle.go).
		db.mu.Lock()
		now := db.clock.Now()
		if t, ok := db.tables[name]; ok && t.transient(now) {
			t.settle(now)
		}
		delete(db.deleting, name)
		db.mu.Unlock()
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
	return finish(c, &dynamodb.DescribeTableOutput{Table: t.describeAt(db.clock.Now())}, nil)
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
	now := db.clock.Now()
	db.purgeDeleting(now)
	t, ok := db.tables[name]
	if !ok && db.deletingNamed(name, now) != nil {
		return finish[dynamodb.DeleteTableOutput](c, nil, inUseError("Attempt to change a resource which is still in use: Table is being deleted: "+name))
	}
	if ok {
		if err := t.inUse(now); err != nil {
			return finish[dynamodb.DeleteTableOutput](c, nil, err)
		}
	}
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
	if db.statusDelay > 0 {
		db.deleting[name] = &deletingTable{t: t, until: now.Add(db.statusDelay)}
	}
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
	now := db.clock.Now()
	for n := range db.deleting {
		if db.deletingNamed(n, now) != nil {
			names = append(names, n) // still DELETING
		}
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
