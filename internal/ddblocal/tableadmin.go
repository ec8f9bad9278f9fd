package ddblocal

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The table-administration calls tools make (SAM, the CDK, the AWS CLI,
// NoSQL Workbench) beyond the core API: UpdateTable, tags, limits and
// backup status. The HTTP face serves them when the backend has them.

// UpdateTable changes a table's billing mode, throughput or stream, or
// creates or deletes one global secondary index. Changes take effect at
// once (a new index is backfilled before the call returns).
func (db *DB) UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	c, err := db.begin(ctx, "UpdateTable", aws.ToString(in.TableName))
	if err != nil {
		return nil, err
	}
	out, err := db.updateTable(in)
	return finish(c, out, err)
}

func (db *DB) updateTable(in *dynamodb.UpdateTableInput) (*dynamodb.UpdateTableOutput, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	defer db.logMeta("UpdateTable", aws.ToString(in.TableName), in)
	now := db.clock.Now()
	if t0, ok := db.tables[aws.ToString(in.TableName)]; ok {
		if err := t0.inUse(now); err != nil {
			return nil, err
		}
	}
	t, err := db.table(aws.ToString(in.TableName))
	if err != nil {
		return nil, err
	}
	s := t.schema
	if len(in.GlobalSecondaryIndexUpdates) > 1 {
		return nil, validationError("Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table")
	}
	for _, u := range in.GlobalSecondaryIndexUpdates {
		if u.Create == nil && u.Update == nil && u.Delete == nil {
			// DynamoDB's exact wording is not documented; it names the
			// member, as this does.
			return nil, validationError("One or more parameter values were invalid: One of GlobalSecondaryIndexUpdate.Create, GlobalSecondaryIndexUpdate.Update or GlobalSecondaryIndexUpdate.Delete must be specified")
		}
	}
	changed := false
	if err := checkThroughput(in.ProvisionedThroughput, "provisionedThroughput"); err != nil {
		return nil, err
	}
	// A BillingMode equal to the table's is accepted (and changes nothing),
	// as DynamoDB accepts it: tools send the whole desired state.
	if in.BillingMode != "" {
		switch in.BillingMode {
		case s.billing:
		case types.BillingModePayPerRequest:
			s.billing, s.throughput = in.BillingMode, nil
			s.payPerRequestSince = now
		case types.BillingModeProvisioned:
			if in.ProvisionedThroughput == nil {
				return nil, validationError("One or more parameter values were invalid: ProvisionedThroughput must be specified when BillingMode is PROVISIONED")
			}
			s.billing = in.BillingMode
		default:
			return nil, validationError("1 validation error detected: Value '%s' at 'billingMode' failed to satisfy constraint: Member must satisfy enum value set: [PROVISIONED, PAY_PER_REQUEST]", in.BillingMode)
		}
		changed = true
	}
	if in.ProvisionedThroughput != nil {
		if s.billing == types.BillingModePayPerRequest {
			return nil, validationError("One or more parameter values were invalid: Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST")
		}
		s.throughput = in.ProvisionedThroughput
		changed = true
	}
	if spec := in.StreamSpecification; spec != nil {
		enabled := s.stream != nil && aws.ToBool(s.stream.StreamEnabled)
		switch {
		case aws.ToBool(spec.StreamEnabled) && enabled:
			return nil, validationError("Table already has an enabled stream: TableName: %s", s.name)
		case !aws.ToBool(spec.StreamEnabled) && !enabled:
			// DynamoDB's text, as recorded by the ACK controller's probes.
			return nil, validationError("Table has no stream to disable: TableName: %s", s.name)
		case aws.ToBool(spec.StreamEnabled):
			if spec.StreamViewType == "" {
				return nil, validationError("1 validation error detected: Value null at 'streamSpecification.streamViewType' failed to satisfy constraint: Member must not be null")
			}
			if err := checkStreamViewType(spec.StreamViewType); err != nil {
				return nil, err
			}
			s.stream = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: spec.StreamViewType}
			s.streamLabel = db.clock.Now().UTC().Format("2006-01-02T15:04:05.000")
		default:
			s.stream = nil
		}
		db.syncStream(t, db.clock.Now(), false)
		changed = true
	}
	for _, u := range in.GlobalSecondaryIndexUpdates {
		switch {
		case u.Create != nil:
			if err := db.createIndex(t, u.Create, in.AttributeDefinitions); err != nil {
				return nil, err
			}
		case u.Delete != nil:
			if err := db.deleteIndex(t, aws.ToString(u.Delete.IndexName)); err != nil {
				return nil, err
			}
		default:
			continue
		}
		changed = true
	}
	if in.DeletionProtectionEnabled != nil {
		changed = true
	}
	if !changed {
		return nil, validationError("At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates, SSESpecification, ReplicaUpdates, MultiAccountReplicaReady, ReplicaTransitRoleArn, MultiRegionConsistency, DeletionProtectionEnabled, OnDemandThroughput, WarmThroughput or TableClass is required")
	}
	t.updatingUntil = now.Add(db.statusDelay)
	for _, u := range in.GlobalSecondaryIndexUpdates {
		if u.Create != nil {
			if ix := t.indexByName(aws.ToString(u.Create.IndexName)); ix != nil {
				ix.activeAt = now.Add(db.statusDelay)
			}
		}
	}
	return &dynamodb.UpdateTableOutput{TableDescription: t.describeAt(now)}, nil
}

// createIndex validates a new global secondary index the way CreateTable
// would, then builds it from the table's items.
func (db *DB) createIndex(t *table, act *types.CreateGlobalSecondaryIndexAction, defs []types.AttributeDefinition) error {
	s := t.schema
	name := aws.ToString(act.IndexName)
	if s.index(name) != nil {
		return validationError("One or more parameter values were invalid: Index with name %s already exists", name)
	}
	for i, e := range act.KeySchema {
		if n := aws.ToString(e.AttributeName); len(n) > maxKeyNameLength {
			return validationError("1 validation error detected: Value '%s' at 'globalSecondaryIndexUpdates.1.member.create.keySchema.%d.member.attributeName' failed to satisfy constraint: Member must have length less than or equal to %d", n, i+1, maxKeyNameLength)
		}
	}
	for i, d := range defs {
		if n := aws.ToString(d.AttributeName); len(n) > maxKeyNameLength {
			return validationError("1 validation error detected: Value '%s' at 'attributeDefinitions.%d.member.attributeName' failed to satisfy constraint: Member must have length less than or equal to %d", n, i+1, maxKeyNameLength)
		}
	}
	known := map[string]types.AttributeDefinition{}
	for _, d := range s.attrDefs {
		known[aws.ToString(d.AttributeName)] = d
	}
	for _, d := range defs {
		an := aws.ToString(d.AttributeName)
		if old, ok := known[an]; ok && old.AttributeType != d.AttributeType {
			return validationError("Cannot change the type of an existing attribute definition: %s", an)
		}
		known[an] = d
	}
	// Validate through CreateTable's rules: the table's keys plus the new
	// index, with just the definitions they use.
	used := map[string]bool{}
	for _, n := range s.keys.names() {
		used[n] = true
	}
	for _, e := range act.KeySchema {
		used[aws.ToString(e.AttributeName)] = true
	}
	probe := &dynamodb.CreateTableInput{
		TableName:             aws.String(s.name),
		KeySchema:             s.keys.describe(),
		BillingMode:           s.billing,
		ProvisionedThroughput: s.throughput,
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: act.IndexName, KeySchema: act.KeySchema, Projection: act.Projection, ProvisionedThroughput: act.ProvisionedThroughput,
		}},
	}
	for n := range used {
		d, ok := known[n]
		if !ok {
			return validationError("One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. Keys: [%s], AttributeDefinitions: [%s]", strings.Join(keyNames(act.KeySchema), ", "), strings.Join(sortedKeys(known), ", "))
		}
		probe.AttributeDefinitions = append(probe.AttributeDefinitions, d)
	}
	built, err := buildSchema(probe, s.created, db.region, db.account)
	if err != nil {
		return err
	}
	ixs := built.indexes[0]
	for n := range used {
		if _, ok := findDef(s.attrDefs, n); !ok {
			s.attrDefs = append(s.attrDefs, known[n])
		}
	}
	ix := &index{schema: ixs, tree: newTree()}
	t.items.Ascend(func(e entry) bool {
		item := e.item()
		if k, ok := s.indexKey(ixs, item, e.key()); ok {
			p := ixs.project(item, s.keys)
			ix.apply(pendingIndexOp{put: ptr(makeEntry(&db.scratch, k, p, sizeOfItem(p)))})
		}
		return true
	})
	s.indexes = append(s.indexes, ixs)
	t.indexes = append(t.indexes, ix)
	return nil
}

func ptr[T any](v T) *T { return &v }

func findDef(defs []types.AttributeDefinition, name string) (types.AttributeDefinition, bool) {
	for _, d := range defs {
		if aws.ToString(d.AttributeName) == name {
			return d, true
		}
	}
	return types.AttributeDefinition{}, false
}

func (db *DB) deleteIndex(t *table, name string) error {
	s := t.schema
	for i, ixs := range s.indexes {
		if ixs.name != name {
			continue
		}
		if !ixs.global {
			return validationError("One or more parameter values were invalid: Local secondary indexes cannot be deleted: %s", name)
		}
		db.lagging.Add(-int64(len(t.indexes[i].pending)))
		s.indexes = append(s.indexes[:i:i], s.indexes[i+1:]...)
		t.indexes = append(t.indexes[:i:i], t.indexes[i+1:]...)
		// Drop the attribute definitions no key uses any more.
		used := map[string]bool{}
		for _, n := range s.keys.names() {
			used[n] = true
		}
		for _, ix := range s.indexes {
			for _, n := range ix.keys.names() {
				used[n] = true
			}
		}
		var defs []types.AttributeDefinition
		for _, d := range s.attrDefs {
			if used[aws.ToString(d.AttributeName)] {
				defs = append(defs, d)
			}
		}
		s.attrDefs = defs
		return nil
	}
	return notFoundError("Requested resource not found: Index: " + name + " not found")
}

// DescribeLimits reports DynamoDB's default account and table limits.
func (db *DB) DescribeLimits(ctx context.Context, _ *dynamodb.DescribeLimitsInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeLimitsOutput, error) {
	c, err := db.begin(ctx, "DescribeLimits", "")
	if err != nil {
		return nil, err
	}
	return finish(c, &dynamodb.DescribeLimitsOutput{
		AccountMaxReadCapacityUnits:  aws.Int64(80000),
		AccountMaxWriteCapacityUnits: aws.Int64(80000),
		TableMaxReadCapacityUnits:    aws.Int64(40000),
		TableMaxWriteCapacityUnits:   aws.Int64(40000),
	}, nil)
}

// DescribeContinuousBackups reports continuous backups and point-in-time
// recovery as disabled: the engine keeps no backups. (A new table on AWS
// starts DISABLED too, and reports ENABLED a few seconds later, when its
// on-demand backup machinery is ready.)
func (db *DB) DescribeContinuousBackups(ctx context.Context, in *dynamodb.DescribeContinuousBackupsInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeContinuousBackupsOutput, error) {
	name := aws.ToString(in.TableName)
	c, err := db.begin(ctx, "DescribeContinuousBackups", name)
	if err != nil {
		return nil, err
	}
	if err := validateTableName(name, "tableName"); err != nil {
		return finish[dynamodb.DescribeContinuousBackupsOutput](c, nil, err)
	}
	db.mu.RLock()
	_, ok := db.tables[name]
	db.mu.RUnlock()
	if !ok {
		return finish[dynamodb.DescribeContinuousBackupsOutput](c, nil, &types.TableNotFoundException{Message: aws.String("Table not found: " + name)})
	}
	return finish(c, &dynamodb.DescribeContinuousBackupsOutput{ContinuousBackupsDescription: &types.ContinuousBackupsDescription{
		ContinuousBackupsStatus:        types.ContinuousBackupsStatusDisabled,
		PointInTimeRecoveryDescription: &types.PointInTimeRecoveryDescription{PointInTimeRecoveryStatus: types.PointInTimeRecoveryStatusDisabled},
	}}, nil)
}
