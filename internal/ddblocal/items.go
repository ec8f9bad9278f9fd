package ddblocal

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/ddblocal/expr"
)

// conditionFailure books the write capacity a failed condition still costs
// and returns ConditionalCheckFailedException, with the item when ALL_OLD
// was asked.
func conditionFailure(old Item, rv types.ReturnValuesOnConditionCheckFailure) error {
	if rv == types.ReturnValuesOnConditionCheckFailureAllOld && old != nil {
		return conditionalFailedError(old)
	}
	return conditionalFailedError(nil)
}

func checkReturnValuesOnFailure(rv types.ReturnValuesOnConditionCheckFailure) error {
	switch rv {
	case "", types.ReturnValuesOnConditionCheckFailureNone, types.ReturnValuesOnConditionCheckFailureAllOld:
		return nil
	}
	return validationError("1 validation error detected: Value '%s' at 'returnValuesOnConditionCheckFailure' failed to satisfy constraint: Member must satisfy enum value set: [ALL_OLD, NONE]", rv)
}

// PutItem creates or replaces an item.
func (db *DB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	name := aws.ToString(in.TableName)
	c, err := db.begin(ctx, "PutItem", name)
	if err != nil {
		return nil, err
	}
	out, err := db.putItem(in)
	return finish(c, out, err)
}

func (db *DB) putItem(in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
	in, err := legacyPutItem(in)
	if err != nil {
		return nil, err
	}
	switch in.ReturnValues {
	case "", types.ReturnValueNone, types.ReturnValueAllOld:
	default:
		return nil, validationError("ReturnValues can only be ALL_OLD or NONE")
	}
	if err := checkReturnValuesOnFailure(in.ReturnValuesOnConditionCheckFailure); err != nil {
		return nil, err
	}
	if in.Item == nil {
		return nil, validationError("1 validation error detected: Value null at 'item' failed to satisfy constraint: Member must not be null")
	}
	x, err := newExprs(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	if err != nil {
		return nil, err
	}
	cond, err := x.condition(in.ConditionExpression)
	if err != nil {
		return nil, err
	}
	if err := x.done(); err != nil {
		return nil, err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.table(aws.ToString(in.TableName))
	if err != nil {
		return nil, err
	}
	key, newSize, err := t.schema.checkItem(in.Item)
	if err != nil {
		return nil, err
	}
	var u usage
	defer db.record(&u)
	oldE, exists := t.get(key)
	var old Item
	if exists {
		old = oldE.item()
	}
	ok, err := holds(cond, old)
	if err != nil {
		return nil, err
	}
	var oldPtr *entry
	if exists {
		oldPtr = &oldE
	}
	if !ok {
		u.of(t).write += writeUnits(sizeOf(oldPtr))
		return nil, conditionFailure(old, in.ReturnValuesOnConditionCheckFailure)
	}
	w := t.commit(db, key, oldPtr, in.Item, newSize, db.clock.Now(), false)
	u.of(t).addWrite(writeUnits(max(newSize, sizeOf(oldPtr))), w, 1)
	out := &dynamodb.PutItemOutput{ConsumedCapacity: u.single(in.ReturnConsumedCapacity)}
	if in.ReturnValues == types.ReturnValueAllOld && old != nil {
		out.Attributes = old
	}
	return out, nil
}

// GetItem reads one item.
func (db *DB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	name := aws.ToString(in.TableName)
	c, err := db.begin(ctx, "GetItem", name)
	if err != nil {
		return nil, err
	}
	out, err := db.getItem(in)
	return finish(c, out, err)
}

func (db *DB) getItem(in *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
	in, err := legacyGetItem(in)
	if err != nil {
		return nil, err
	}
	x, err := newExprs(in.ExpressionAttributeNames, nil)
	if err != nil {
		return nil, err
	}
	proj, err := x.projection(in.ProjectionExpression)
	if err != nil {
		return nil, err
	}
	if err := x.done(); err != nil {
		return nil, err
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	t, err := db.table(aws.ToString(in.TableName))
	if err != nil {
		return nil, err
	}
	key, err := t.schema.keyOf(in.Key)
	if err != nil {
		return nil, err
	}
	var u usage
	defer db.record(&u)
	out := &dynamodb.GetItemOutput{}
	size := 0
	if e, ok := t.get(key); ok {
		item := e.item()
		size = int(e.size)
		out.Item = proj.apply(item)
	}
	u.of(t).read += readUnits(size, aws.ToBool(in.ConsistentRead))
	out.ConsumedCapacity = u.single(in.ReturnConsumedCapacity)
	return out, nil
}

// DeleteItem deletes one item.
func (db *DB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	name := aws.ToString(in.TableName)
	c, err := db.begin(ctx, "DeleteItem", name)
	if err != nil {
		return nil, err
	}
	out, err := db.deleteItem(in)
	return finish(c, out, err)
}

func (db *DB) deleteItem(in *dynamodb.DeleteItemInput) (*dynamodb.DeleteItemOutput, error) {
	in, err := legacyDeleteItem(in)
	if err != nil {
		return nil, err
	}
	switch in.ReturnValues {
	case "", types.ReturnValueNone, types.ReturnValueAllOld:
	default:
		return nil, validationError("ReturnValues can only be ALL_OLD or NONE")
	}
	if err := checkReturnValuesOnFailure(in.ReturnValuesOnConditionCheckFailure); err != nil {
		return nil, err
	}
	x, err := newExprs(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	if err != nil {
		return nil, err
	}
	cond, err := x.condition(in.ConditionExpression)
	if err != nil {
		return nil, err
	}
	if err := x.done(); err != nil {
		return nil, err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.table(aws.ToString(in.TableName))
	if err != nil {
		return nil, err
	}
	key, err := t.schema.keyOf(in.Key)
	if err != nil {
		return nil, err
	}
	var u usage
	defer db.record(&u)
	oldE, exists := t.get(key)
	var old Item
	if exists {
		old = oldE.item()
	}
	ok, err := holds(cond, old)
	if err != nil {
		return nil, err
	}
	if !ok {
		u.of(t).write += writeUnits(int(oldE.size))
		return nil, conditionFailure(old, in.ReturnValuesOnConditionCheckFailure)
	}
	out := &dynamodb.DeleteItemOutput{}
	if exists {
		w := t.commit(db, key, &oldE, nil, 0, db.clock.Now(), false)
		u.of(t).addWrite(writeUnits(int(oldE.size)), w, 1)
		if in.ReturnValues == types.ReturnValueAllOld {
			out.Attributes = old
		}
	} else {
		u.of(t).write += writeUnits(0)
	}
	out.ConsumedCapacity = u.single(in.ReturnConsumedCapacity)
	return out, nil
}

// UpdateItem edits (or creates) one item with an UpdateExpression.
func (db *DB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	name := aws.ToString(in.TableName)
	c, err := db.begin(ctx, "UpdateItem", name)
	if err != nil {
		return nil, err
	}
	out, err := db.updateItem(in)
	return finish(c, out, err)
}

func (db *DB) updateItem(in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
	in, legacy, err := legacyUpdateItem(in)
	if err != nil {
		return nil, err
	}
	switch in.ReturnValues {
	case "", types.ReturnValueNone, types.ReturnValueAllOld, types.ReturnValueAllNew, types.ReturnValueUpdatedOld, types.ReturnValueUpdatedNew:
	default:
		return nil, validationError("1 validation error detected: Value '%s' at 'returnValues' failed to satisfy constraint: Member must satisfy enum value set: [ALL_NEW, UPDATED_OLD, ALL_OLD, NONE, UPDATED_NEW]", in.ReturnValues)
	}
	if err := checkReturnValuesOnFailure(in.ReturnValuesOnConditionCheckFailure); err != nil {
		return nil, err
	}
	x, err := newExprs(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	if err != nil {
		return nil, err
	}
	upd, err := x.update(in.UpdateExpression)
	if err != nil {
		return nil, err
	}
	cond, err := x.condition(in.ConditionExpression)
	if err != nil {
		return nil, err
	}
	if err := x.done(); err != nil {
		return nil, err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.table(aws.ToString(in.TableName))
	if err != nil {
		return nil, err
	}
	key, err := t.schema.keyOf(in.Key)
	if err != nil {
		return nil, err
	}
	var u usage
	defer db.record(&u)
	oldE, exists := t.get(key)
	var old Item
	if exists {
		old = oldE.item()
	}
	ok, err := holds(cond, old)
	if err != nil {
		return nil, err
	}
	var oldPtr *entry
	if exists {
		oldPtr = &oldE
	}
	if !ok {
		u.of(t).write += writeUnits(sizeOf(oldPtr))
		return nil, conditionFailure(old, in.ReturnValuesOnConditionCheckFailure)
	}
	newItem, newSize, _, err := t.schema.applyUpdate(upd, old, in.Key)
	err = legacyUpdateError(err, legacy)
	if err != nil {
		return nil, err
	}
	if newItem == nil {
		u.of(t).write += writeUnits(0)
		return &dynamodb.UpdateItemOutput{ConsumedCapacity: u.single(in.ReturnConsumedCapacity)}, nil
	}
	w := t.commit(db, key, oldPtr, newItem, newSize, db.clock.Now(), false)
	u.of(t).addWrite(writeUnits(max(sizeOf(oldPtr), newSize)), w, 1)
	out := &dynamodb.UpdateItemOutput{ConsumedCapacity: u.single(in.ReturnConsumedCapacity)}
	out.Attributes = returnedAttributes(in.ReturnValues, upd, old, newItem)
	return out, nil
}

// applyUpdate applies upd (nil: nothing) to old (nil: a new item made of the
// key) and checks the result. It returns the new item and the top-level
// attributes the update touched; the item is nil when old is nil and the
// update only removes (nothing is written then).
func (s *tableSchema) applyUpdate(upd *expr.Update, old Item, key Item) (Item, int, []string, error) {
	base := old
	if base == nil {
		base = copyItem(key)
	}
	if upd == nil {
		return base, sizeOfItem(base), nil, nil
	}
	touched := upd.TopLevelAttributes()
	for _, a := range touched {
		if a == s.keys.hash.name || a == s.keys.rng.name {
			return nil, 0, nil, validationError("One or more parameter values were invalid: Cannot update attribute %s. This attribute is part of the key", a)
		}
	}
	if old == nil && upd.OnlyRemoves() {
		return nil, 0, nil, nil // nothing to remove from: no item is created
	}
	newItem, err := upd.Apply(base)
	if err != nil {
		return nil, 0, nil, asValidation(err)
	}
	if err := s.checkIndexKeys(newItem); err != nil {
		return nil, 0, nil, err
	}
	size := sizeOfItem(newItem)
	if size > maxItemSize {
		return nil, 0, nil, validationError("Item size to update has exceeded the maximum allowed size")
	}
	return newItem, size, touched, nil
}

// returnedAttributes picks what UpdateItem's ReturnValues asks for. The
// UPDATED_* options return only the updated paths, nested as in the item.
func returnedAttributes(rv types.ReturnValue, upd *expr.Update, old, newItem Item) Item {
	pick := func(from Item) Item {
		if from == nil || upd == nil {
			return nil
		}
		out := upd.UpdatedAttributes(from)
		if len(out) == 0 {
			return nil
		}
		return out
	}
	switch rv {
	case types.ReturnValueAllOld:
		return old
	case types.ReturnValueAllNew:
		return copyItem(newItem)
	case types.ReturnValueUpdatedOld:
		return pick(old)
	case types.ReturnValueUpdatedNew:
		return copyItem(pick(newItem))
	}
	return nil
}
