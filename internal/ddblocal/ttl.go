package ddblocal

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/btree"
)

// ttlHorizon: DynamoDB leaves alone items whose TTL is more than five years
// in the past (the attribute is taken to be something else than a TTL).
const ttlHorizon = 5 * 365 * 24 * time.Hour

// expiryOf reads item's TTL attribute as epoch seconds.
func expiryOf(item Item, attr string) (int64, bool) {
	n, ok := item[attr].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	d, err := parseDecimal(n.Value)
	if err != nil || d.neg {
		return 0, false
	}
	if d.exp > 18 {
		return 0, false
	}
	var secs int64
	for i := 0; i < d.exp; i++ {
		secs *= 10
		if i < len(d.digits) {
			secs += int64(d.digits[i] - '0')
		}
	}
	return secs, true
}

func (t *table) trackExpiry(key []byte, oldItem, newItem Item) {
	if oldItem != nil {
		if at, ok := expiryOf(oldItem, t.ttlAttr); ok {
			t.expiries.Delete(expiry{at: at, key: string(key)})
		}
	}
	if newItem != nil {
		if at, ok := expiryOf(newItem, t.ttlAttr); ok {
			t.expiries.ReplaceOrInsert(expiry{at: at, key: string(key)})
		}
	}
}

// enableTTL starts tracking expiries of the table's items.
func (t *table) enableTTL(attr string) {
	t.ttlAttr = attr
	t.ttlEnabled = true
	t.expiries = btree.NewG(btreeDegree, expiryLess)
	t.items.Ascend(func(e entry) bool {
		if at, ok := expiryOf(e.item(), attr); ok {
			t.expiries.ReplaceOrInsert(expiry{at: at, key: string(e.key())})
		}
		return true
	})
}

func (t *table) disableTTL() {
	t.ttlEnabled = false
	t.expiries = nil
}

// SweepTTL deletes, in every table with TTL enabled, the items whose TTL
// attribute is more than the configured delay in the past, as DynamoDB's
// background TTL process does. The deletions appear in the change feed as
// REMOVE records marked ByTTL and consume no capacity. It returns how many
// items it deleted.
func (db *DB) SweepTTL() int {
	db.mu.Lock()
	n := db.sweepLocked(db.clock.Now())
	db.mu.Unlock()
	_ = db.durable() // a failed log fails the next call
	return n
}

func (db *DB) sweepLocked(now time.Time) int {
	if !db.logWritable() {
		return 0 // its deletions could not be logged: the next sweep makes them
	}
	cutoff := now.Add(-db.ttlDelay)
	horizon := now.Add(-ttlHorizon).Unix()
	deleted := 0
	for _, name := range sortedKeys(db.tables) {
		t := db.tables[name]
		if !t.ttlEnabled {
			continue
		}
		var due []expiry
		// Items past the horizon are never deleted: start after them, so a
		// sweep costs what it deletes.
		t.expiries.AscendGreaterOrEqual(expiry{at: horizon}, func(x expiry) bool {
			if !time.Unix(x.at, 0).Before(cutoff) {
				return false
			}
			due = append(due, x)
			return true
		})
		for _, x := range due {
			old, ok := t.get([]byte(x.key))
			if !ok {
				continue
			}
			t.commit(db, []byte(x.key), &old, nil, 0, now, true)
			deleted++
		}
	}
	db.nextSweep = now.Add(db.ttlEvery)
	return deleted
}

// UpdateTimeToLive enables or disables TTL on a table.
func (db *DB) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	c, err := db.begin(ctx, "UpdateTimeToLive", aws.ToString(in.TableName))
	if err != nil {
		return nil, err
	}
	out, err := db.updateTimeToLive(in)
	return finish(c, out, err)
}

func (db *DB) updateTimeToLive(in *dynamodb.UpdateTimeToLiveInput) (*dynamodb.UpdateTimeToLiveOutput, error) {
	spec := in.TimeToLiveSpecification
	switch {
	case spec == nil:
		return nil, validationError("1 validation error detected: Value null at 'timeToLiveSpecification' failed to satisfy constraint: Member must not be null")
	case spec.AttributeName == nil:
		return nil, validationError("1 validation error detected: Value null at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must not be null")
	case spec.Enabled == nil:
		return nil, validationError("1 validation error detected: Value null at 'timeToLiveSpecification.enabled' failed to satisfy constraint: Member must not be null")
	}
	attr := aws.ToString(spec.AttributeName)
	switch {
	case attr == "":
		return nil, validationError("1 validation error detected: Value '' at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must have length greater than or equal to 1")
	case len(attr) > 255:
		return nil, validationError("1 validation error detected: Value '%s' at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must have length less than or equal to 255", attr)
	}
	enable := aws.ToBool(spec.Enabled)
	db.mu.Lock()
	defer db.mu.Unlock()
	defer db.logMeta("UpdateTimeToLive", aws.ToString(in.TableName), in)
	t, err := db.table(aws.ToString(in.TableName))
	if err != nil {
		return nil, err
	}
	switch {
	case enable && t.ttlEnabled:
		return nil, validationError("TimeToLive is already enabled")
	case !enable && !t.ttlEnabled:
		return nil, validationError("TimeToLive is already disabled")
	case !enable && attr != t.ttlAttr:
		// Disabling names the attribute TTL is on (DynamoDB's exact text
		// is not documented; it says the name is a different one).
		return nil, validationError("TimeToLive is active on a different AttributeName: current AttributeName is %s", t.ttlAttr)
	case enable:
		t.enableTTL(attr)
	default:
		t.disableTTL()
	}
	return &dynamodb.UpdateTimeToLiveOutput{TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(enable)}}, nil
}

// DescribeTimeToLive reports a table's TTL setting.
func (db *DB) DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	c, err := db.begin(ctx, "DescribeTimeToLive", aws.ToString(in.TableName))
	if err != nil {
		return nil, err
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	t, err := db.table(aws.ToString(in.TableName))
	if err != nil {
		return finish[dynamodb.DescribeTimeToLiveOutput](c, nil, err)
	}
	desc := &types.TimeToLiveDescription{TimeToLiveStatus: types.TimeToLiveStatusDisabled}
	if t.ttlEnabled {
		desc = &types.TimeToLiveDescription{TimeToLiveStatus: types.TimeToLiveStatusEnabled, AttributeName: aws.String(t.ttlAttr)}
	}
	return finish(c, &dynamodb.DescribeTimeToLiveOutput{TimeToLiveDescription: desc}, nil)
}
