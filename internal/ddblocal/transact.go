package ddblocal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/ferryhq/ferry/internal/ddblocal/expr"
)

// Transactions follow
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html
// and the TransactWriteItems API reference: at most 100 actions and 4 MB,
// at most one action per item, all or nothing, cancellation reasons in
// request order, ClientRequestToken idempotency for 10 minutes.

const (
	maxTxActions = 100
	maxTxBytes   = 4 * 1024 * 1024
)

// tokenRecord remembers a successful TransactWriteItems by its
// ClientRequestToken.
type tokenRecord struct {
	token  string
	digest [32]byte
	at     time.Time
}

// txAction is one parsed action of a TransactWriteItems request.
type txAction struct {
	kind    string // Put, Update, Delete, ConditionCheck
	table   *table
	key     []byte
	keyItem Item
	put     Item
	putSize int
	update  *expr.Update
	cond    *expr.Condition
	rvFail  types.ReturnValuesOnConditionCheckFailure
}

// TransactWriteItems applies up to 100 writes atomically.
func (db *DB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c, err := db.begin(ctx, "TransactWriteItems", firstWriteTable(in))
	if err != nil {
		return nil, err
	}
	out, err := db.transactWrite(c, in)
	return finish(c, out, err)
}

func firstWriteTable(in *dynamodb.TransactWriteItemsInput) string {
	if len(in.TransactItems) == 0 {
		return ""
	}
	ti := in.TransactItems[0]
	switch {
	case ti.Put != nil:
		return aws.ToString(ti.Put.TableName)
	case ti.Update != nil:
		return aws.ToString(ti.Update.TableName)
	case ti.Delete != nil:
		return aws.ToString(ti.Delete.TableName)
	case ti.ConditionCheck != nil:
		return aws.ToString(ti.ConditionCheck.TableName)
	}
	return ""
}

// parseTxAction parses one action's expressions (outside the lock: they
// need no table).
func parseTxAction(ti types.TransactWriteItem) (*txAction, string, Item, error) {
	n := 0
	for _, p := range []bool{ti.Put != nil, ti.Update != nil, ti.Delete != nil, ti.ConditionCheck != nil} {
		if p {
			n++
		}
	}
	if n != 1 {
		return nil, "", nil, validationError("TransactItems can only contain one of Check, Put, Update or Delete")
	}
	a := &txAction{}
	var (
		tableName string
		key       Item
		names     map[string]string
		values    map[string]types.AttributeValue
		condS     *string
		updS      *string
	)
	switch {
	case ti.Put != nil:
		a.kind, tableName, a.put = "Put", aws.ToString(ti.Put.TableName), ti.Put.Item
		names, values, condS, a.rvFail = ti.Put.ExpressionAttributeNames, ti.Put.ExpressionAttributeValues, ti.Put.ConditionExpression, ti.Put.ReturnValuesOnConditionCheckFailure
		if a.put == nil {
			return nil, "", nil, validationError("1 validation error detected: Value null at 'transactItems.1.member.put.item' failed to satisfy constraint: Member must not be null")
		}
	case ti.Update != nil:
		a.kind, tableName, key = "Update", aws.ToString(ti.Update.TableName), ti.Update.Key
		names, values, condS, a.rvFail = ti.Update.ExpressionAttributeNames, ti.Update.ExpressionAttributeValues, ti.Update.ConditionExpression, ti.Update.ReturnValuesOnConditionCheckFailure
		updS = ti.Update.UpdateExpression
		if updS == nil {
			return nil, "", nil, validationError("1 validation error detected: Value null at 'transactItems.1.member.update.updateExpression' failed to satisfy constraint: Member must not be null")
		}
	case ti.Delete != nil:
		a.kind, tableName, key = "Delete", aws.ToString(ti.Delete.TableName), ti.Delete.Key
		names, values, condS, a.rvFail = ti.Delete.ExpressionAttributeNames, ti.Delete.ExpressionAttributeValues, ti.Delete.ConditionExpression, ti.Delete.ReturnValuesOnConditionCheckFailure
	default:
		a.kind, tableName, key = "ConditionCheck", aws.ToString(ti.ConditionCheck.TableName), ti.ConditionCheck.Key
		names, values, condS, a.rvFail = ti.ConditionCheck.ExpressionAttributeNames, ti.ConditionCheck.ExpressionAttributeValues, ti.ConditionCheck.ConditionExpression, ti.ConditionCheck.ReturnValuesOnConditionCheckFailure
		if condS == nil {
			return nil, "", nil, validationError("1 validation error detected: Value null at 'transactItems.1.member.conditionCheck.conditionExpression' failed to satisfy constraint: Member must not be null")
		}
	}
	if err := checkReturnValuesOnFailure(a.rvFail); err != nil {
		return nil, "", nil, err
	}
	x, err := newExprs(names, values)
	if err != nil {
		return nil, "", nil, err
	}
	if a.update, err = x.update(updS); err != nil {
		return nil, "", nil, err
	}
	if a.cond, err = x.condition(condS); err != nil {
		return nil, "", nil, err
	}
	if err := x.done(); err != nil {
		return nil, "", nil, err
	}
	return a, tableName, key, nil
}

func (db *DB) transactWrite(c *call, in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
	if len(in.TransactItems) == 0 {
		return nil, validationError("1 validation error detected: Value null at 'transactItems' failed to satisfy constraint: Member must not be null")
	}
	if len(in.TransactItems) > maxTxActions {
		return nil, validationError("1 validation error detected: Value '[%d items]' at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to %d", len(in.TransactItems), maxTxActions)
	}
	token := aws.ToString(in.ClientRequestToken)
	if len(token) > 36 {
		return nil, validationError("1 validation error detected: Value '%s' at 'clientRequestToken' failed to satisfy constraint: Member must have length less than or equal to 36", token)
	}
	actions := make([]*txAction, len(in.TransactItems))
	tableNames := make([]string, len(in.TransactItems))
	keys := make([]Item, len(in.TransactItems))
	for i, ti := range in.TransactItems {
		a, tn, k, err := parseTxAction(ti)
		if err != nil {
			return nil, err
		}
		actions[i], tableNames[i], keys[i] = a, tn, k
	}
	var digest [32]byte
	if token != "" {
		digest = writeRequestDigest(in)
	}

	db.mu.Lock()
	defer db.mu.Unlock()
	now := db.clock.Now()
	if token != "" {
		db.expireTokens(now)
		if rec, ok := db.tokens[token]; ok {
			if rec.digest != digest {
				return nil, &types.IdempotentParameterMismatchException{Message: aws.String("Request token has already been used with different parameters")}
			}
			return db.replayTransaction(in, actions, tableNames, keys), nil
		}
	}
	reqBytes := 0
	seen := map[string]bool{}
	for i, a := range actions {
		t, err := db.table(tableNames[i])
		if err != nil {
			return nil, err
		}
		a.table = t
		if a.put != nil {
			if a.key, a.putSize, err = t.schema.checkItem(a.put); err != nil {
				return nil, err
			}
			a.keyItem = t.schema.keyItem(a.put)
			reqBytes += a.putSize
		} else {
			if a.key, err = t.schema.keyOf(keys[i]); err != nil {
				return nil, err
			}
			a.keyItem = keys[i]
			reqBytes += sizeOfItem(keys[i])
		}
		id := tableNames[i] + "\x00" + string(a.key)
		if seen[id] {
			return nil, validationError(msgTxMultipleOps)
		}
		seen[id] = true
	}
	if reqBytes > maxTxBytes {
		return nil, validationError("Transaction request size exceeds the maximum allowed size of 4 MB")
	}

	var u usage
	defer db.record(&u)
	reasons := make([]types.CancellationReason, len(actions))
	olds := make([]*entry, len(actions))
	oldItems := make([]Item, len(actions))
	news := make([]Item, len(actions))
	newSizes := make([]int, len(actions))
	cancelled := false
	for i, a := range actions {
		reasons[i] = types.CancellationReason{Code: aws.String(reasonNone)}
		if e, ok := a.table.get(a.key); ok {
			olds[i] = &e
			oldItems[i] = e.item()
		}
		if i == 0 && (c.fault.Kind == FaultConflict || c.fault.Kind == FaultThrottle) {
			reasons[i] = faultReason(c.fault.Kind)
			cancelled = true
			continue
		}
		ok, err := holds(a.cond, oldItems[i])
		if err != nil {
			reasons[i] = types.CancellationReason{Code: aws.String(reasonValidation), Message: aws.String(err.Error())}
			cancelled = true
			continue
		}
		if !ok {
			reasons[i] = types.CancellationReason{Code: aws.String(reasonConditionalFailed), Message: aws.String(msgConditionalFailed)}
			if a.rvFail == types.ReturnValuesOnConditionCheckFailureAllOld && oldItems[i] != nil {
				reasons[i].Item = oldItems[i]
			}
			cancelled = true
			continue
		}
		switch a.kind {
		case "Put":
			news[i], newSizes[i] = a.put, a.putSize
		case "Update":
			ni, size, _, err := a.table.schema.applyUpdate(a.update, oldItems[i], a.keyItem)
			if err != nil {
				reasons[i] = types.CancellationReason{Code: aws.String(reasonValidation), Message: aws.String(validationMessage(err))}
				cancelled = true
				continue
			}
			news[i], newSizes[i] = ni, size
		}
	}
	if cancelled {
		// A cancelled transaction still costs the prepare phase of each
		// action it read.
		for i, a := range actions {
			u.of(a.table).write += writeUnits(sizeOf(olds[i]))
		}
		return nil, txCanceledError(reasons)
	}
	for i, a := range actions {
		units := writeUnits(max(sizeOf(olds[i]), newSizes[i]))
		switch a.kind {
		case "ConditionCheck":
			u.of(a.table).write += 2 * writeUnits(sizeOf(olds[i]))
			continue
		case "Delete", "Update":
			if olds[i] == nil && news[i] == nil { // nothing to delete, or an update that only removes
				u.of(a.table).write += 2 * writeUnits(0)
				continue
			}
		}
		w := a.table.commit(db, a.key, olds[i], news[i], newSizes[i], now, false)
		// The base write costs double (prepare and commit); index writes
		// are propagated once, after the commit.
		u.of(a.table).addWrite(2*units, w, 1)
	}
	out := &dynamodb.TransactWriteItemsOutput{ConsumedCapacity: u.report(in.ReturnConsumedCapacity)}
	if token != "" {
		rec := tokenRecord{token: token, digest: digest, at: now}
		db.tokens[token] = rec
		db.tokenOrder = append(db.tokenOrder, rec)
		db.logToken(rec)
	}
	return out, nil
}

func validationMessage(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorMessage()
	}
	return err.Error()
}

// expireTokens forgets tokens older than the idempotency window, oldest
// first, in time proportional to what it forgets.
func (db *DB) expireTokens(now time.Time) {
	n := 0
	for n < len(db.tokenOrder) && now.Sub(db.tokenOrder[n].at) >= db.tokenWindow {
		r := db.tokenOrder[n]
		if cur, ok := db.tokens[r.token]; ok && cur.at.Equal(r.at) {
			delete(db.tokens, r.token)
		}
		n++
	}
	db.tokenOrder = db.tokenOrder[n:]
}

// writeRequestDigest fingerprints a TransactWriteItems request (everything
// but the token and the ReturnConsumedCapacity choice), to tell a retry from
// a different request with the same token.
func writeRequestDigest(in *dynamodb.TransactWriteItemsInput) [32]byte {
	var b bytes.Buffer
	str := func(s *string) {
		if s == nil {
			b.WriteByte(0)
			return
		}
		b.WriteByte(1)
		b.Write(binary.AppendUvarint(nil, uint64(len(*s))))
		b.WriteString(*s)
	}
	item := func(it Item) { b.Write(encodeItem(nil, it)) }
	names := func(m map[string]string) {
		keys := sortedKeys(m)
		b.Write(binary.AppendUvarint(nil, uint64(len(keys))))
		for _, k := range keys {
			v := m[k]
			str(&k)
			str(&v)
		}
	}
	for _, ti := range in.TransactItems {
		switch {
		case ti.Put != nil:
			b.WriteString("P")
			str(ti.Put.TableName)
			item(ti.Put.Item)
			str(ti.Put.ConditionExpression)
			names(ti.Put.ExpressionAttributeNames)
			item(ti.Put.ExpressionAttributeValues)
		case ti.Update != nil:
			b.WriteString("U")
			str(ti.Update.TableName)
			item(ti.Update.Key)
			str(ti.Update.UpdateExpression)
			str(ti.Update.ConditionExpression)
			names(ti.Update.ExpressionAttributeNames)
			item(ti.Update.ExpressionAttributeValues)
		case ti.Delete != nil:
			b.WriteString("D")
			str(ti.Delete.TableName)
			item(ti.Delete.Key)
			str(ti.Delete.ConditionExpression)
			names(ti.Delete.ExpressionAttributeNames)
			item(ti.Delete.ExpressionAttributeValues)
		case ti.ConditionCheck != nil:
			b.WriteString("C")
			str(ti.ConditionCheck.TableName)
			item(ti.ConditionCheck.Key)
			str(ti.ConditionCheck.ConditionExpression)
			names(ti.ConditionCheck.ExpressionAttributeNames)
			item(ti.ConditionCheck.ExpressionAttributeValues)
		}
	}
	return sha256.Sum256(b.Bytes())
}

// TransactGetItems reads up to 100 items atomically.
func (db *DB) TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error) {
	first := ""
	if len(in.TransactItems) > 0 && in.TransactItems[0].Get != nil {
		first = aws.ToString(in.TransactItems[0].Get.TableName)
	}
	c, err := db.begin(ctx, "TransactGetItems", first)
	if err != nil {
		return nil, err
	}
	out, err := db.transactGet(c, in)
	return finish(c, out, err)
}

func (db *DB) transactGet(c *call, in *dynamodb.TransactGetItemsInput) (*dynamodb.TransactGetItemsOutput, error) {
	if len(in.TransactItems) == 0 {
		return nil, validationError("1 validation error detected: Value null at 'transactItems' failed to satisfy constraint: Member must not be null")
	}
	if len(in.TransactItems) > maxTxActions {
		return nil, validationError("1 validation error detected: Value '[%d items]' at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to %d", len(in.TransactItems), maxTxActions)
	}
	projs := make([]*projector, len(in.TransactItems))
	for i, ti := range in.TransactItems {
		if ti.Get == nil {
			return nil, validationError("1 validation error detected: Value null at 'transactItems.%d.member.get' failed to satisfy constraint: Member must not be null", i+1)
		}
		x, err := newExprs(ti.Get.ExpressionAttributeNames, nil)
		if err != nil {
			return nil, err
		}
		if projs[i], err = x.projection(ti.Get.ProjectionExpression); err != nil {
			return nil, err
		}
		if err := x.done(); err != nil {
			return nil, err
		}
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	var u usage
	defer db.record(&u)
	seen := map[string]bool{}
	type got struct {
		t   *table
		key []byte
	}
	gets := make([]got, len(in.TransactItems))
	for i, ti := range in.TransactItems {
		t, err := db.table(aws.ToString(ti.Get.TableName))
		if err != nil {
			return nil, err
		}
		key, err := t.schema.keyOf(ti.Get.Key)
		if err != nil {
			return nil, err
		}
		id := t.schema.name + "\x00" + string(key)
		if seen[id] {
			return nil, validationError(msgTxMultipleOps)
		}
		seen[id] = true
		gets[i] = got{t, key}
	}
	if c.fault.Kind == FaultConflict || c.fault.Kind == FaultThrottle {
		reasons := make([]types.CancellationReason, len(gets))
		for i := range reasons {
			reasons[i] = types.CancellationReason{Code: aws.String(reasonNone)}
		}
		reasons[0] = faultReason(c.fault.Kind)
		return nil, txCanceledError(reasons)
	}
	out := &dynamodb.TransactGetItemsOutput{Responses: make([]types.ItemResponse, len(gets))}
	for i, g := range gets {
		size := 0
		if e, ok := g.t.get(g.key); ok {
			item := e.item()
			size = int(e.size)
			out.Responses[i].Item = projs[i].apply(item)
		}
		u.of(g.t).read += 2 * readUnits(size, true)
	}
	out.ConsumedCapacity = u.report(in.ReturnConsumedCapacity)
	return out, nil
}

// faultReason is the cancellation reason of an injected conflict or
// throttle.
func faultReason(k FaultKind) types.CancellationReason {
	if k == FaultThrottle {
		return types.CancellationReason{Code: aws.String(reasonThrottling), Message: aws.String("Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly.")}
	}
	return types.CancellationReason{Code: aws.String(reasonTransactionConflict), Message: aws.String("Transaction is ongoing for the item")}
}

// replayTransaction answers a repeated request with an idempotency token
// without applying it again. "Subsequent TransactWriteItems calls with the
// same client token return the number of read capacity units consumed in
// reading the item" (TransactWriteItems API reference).
func (db *DB) replayTransaction(in *dynamodb.TransactWriteItemsInput, actions []*txAction, tableNames []string, keys []Item) *dynamodb.TransactWriteItemsOutput {
	var u usage
	defer db.record(&u)
	for i, a := range actions {
		t, err := db.table(tableNames[i])
		if err != nil {
			continue
		}
		var key []byte
		if a.put != nil {
			key, err = t.schema.itemKey(a.put)
		} else {
			key, err = t.schema.keyOf(keys[i])
		}
		if err != nil {
			continue
		}
		size := 0
		if e, ok := t.get(key); ok {
			size = int(e.size)
		}
		u.of(t).read += readUnits(size, true)
	}
	return &dynamodb.TransactWriteItemsOutput{ConsumedCapacity: u.report(in.ReturnConsumedCapacity)}
}
