package ddblocal

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// typeName returns DynamoDB's one- or two-letter name of v's type.
func typeName(v types.AttributeValue) string {
	switch v.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberM:
		return "M"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	default:
		return "?"
	}
}

// keyProblem is why a value cannot serve as a key.
type keyProblem int

const (
	keyOK keyProblem = iota
	keyMissing
	keyWrongType
	keyEmpty
	keyBadNumber
)

// DynamoDB's key size limits ("Service, account, and table quotas"): a
// partition key value of at most 2048 bytes, a sort key value of at most
// 1024, in tables and indexes alike.
const (
	maxHashKeyBytes  = 2048
	maxRangeKeyBytes = 1024
)

// Messages DynamoDB answers for an oversized key (its own wording, "of2048"
// included).
const (
	msgHashKeyTooLarge  = "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes"
	msgRangeKeyTooLarge = "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes"
)

// keyTooLarge reports whether a key value of ka is over its size limit;
// rng tells a sort key from a partition key.
func keyTooLarge(v types.AttributeValue, rng bool) bool {
	limit := maxHashKeyBytes
	if rng {
		limit = maxRangeKeyBytes
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value) > limit
	case *types.AttributeValueMemberB:
		return len(v.Value) > limit
	}
	return false // a number key is at most 21 bytes
}

func keyTooLargeError(rng bool) error {
	if rng {
		return validationError(msgRangeKeyTooLarge)
	}
	return validationError(msgHashKeyTooLarge)
}

// appendKeyValue appends the order-preserving encoding of v as a key of
// attribute ka.
func appendKeyValue(dst []byte, ka keyAttr, v types.AttributeValue) ([]byte, keyProblem) {
	if v == nil {
		return dst, keyMissing
	}
	if typeName(v) != string(ka.typ) {
		return dst, keyWrongType
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		if v.Value == "" {
			return dst, keyEmpty
		}
		return appendKeyBytes(dst, []byte(v.Value)), keyOK
	case *types.AttributeValueMemberB:
		if len(v.Value) == 0 {
			return dst, keyEmpty
		}
		return appendKeyBytes(dst, v.Value), keyOK
	case *types.AttributeValueMemberN:
		d, err := parseDecimal(v.Value)
		if err != nil {
			return dst, keyBadNumber
		}
		return appendKeyNumber(dst, d), keyOK
	}
	return dst, keyWrongType
}

// itemKey encodes the primary key of a whole item (PutItem, a Put in a
// transaction), with DynamoDB's messages for a bad item.
func (s *tableSchema) itemKey(item Item) ([]byte, error) {
	buf := make([]byte, 0, 32)
	for _, ka := range []keyAttr{s.keys.hash, s.keys.rng} {
		if ka.name == "" {
			continue
		}
		v := item[ka.name]
		var p keyProblem
		buf, p = appendKeyValue(buf, ka, v)
		switch p {
		case keyMissing:
			return nil, validationError("One or more parameter values were invalid: Missing the key %s in the item", ka.name)
		case keyWrongType:
			return nil, validationError("One or more parameter values were invalid: Type mismatch for key %s expected: %s actual: %s", ka.name, ka.typ, typeName(v))
		case keyEmpty:
			return nil, validationError("One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty %s value. Key: %s", emptyKind(ka), ka.name)
		case keyBadNumber:
			return nil, badNumberError(v.(*types.AttributeValueMemberN).Value)
		}
		if keyTooLarge(v, ka == s.keys.rng) {
			return nil, keyTooLargeError(ka == s.keys.rng)
		}
	}
	return buf, nil
}

func emptyKind(ka keyAttr) string {
	if ka.typ == types.ScalarAttributeTypeB {
		return "binary"
	}
	return "string"
}

// keyOf encodes a Key parameter (GetItem, DeleteItem, UpdateItem, …): it
// must name exactly the key attributes, with the right types.
func (s *tableSchema) keyOf(key Item) ([]byte, error) {
	want := 1
	if s.keys.hasRange() {
		want = 2
	}
	if len(key) != want {
		return nil, validationError(msgKeySchemaMismatch)
	}
	buf := make([]byte, 0, 32)
	for _, ka := range []keyAttr{s.keys.hash, s.keys.rng} {
		if ka.name == "" {
			continue
		}
		v := key[ka.name]
		var p keyProblem
		buf, p = appendKeyValue(buf, ka, v)
		switch p {
		case keyMissing, keyWrongType:
			return nil, validationError(msgKeySchemaMismatch)
		case keyEmpty:
			return nil, validationError("One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty %s value. Key: %s", emptyKind(ka), ka.name)
		case keyBadNumber:
			return nil, badNumberError(v.(*types.AttributeValueMemberN).Value)
		}
		if keyTooLarge(v, ka == s.keys.rng) {
			return nil, keyTooLargeError(ka == s.keys.rng)
		}
	}
	return buf, nil
}

// keyItem returns the key attributes of item.
func (s *tableSchema) keyItem(item Item) Item {
	out := Item{s.keys.hash.name: item[s.keys.hash.name]}
	if s.keys.hasRange() {
		out[s.keys.rng.name] = item[s.keys.rng.name]
	}
	return out
}

// indexKey encodes the key of item in index ix (index keys, then the base
// key), or reports that the item is not in the index (sparse). Type errors
// are reported by checkIndexKeys before anything is written.
func (s *tableSchema) indexKey(ix *indexSchema, item Item, baseKey []byte) ([]byte, bool) {
	buf := make([]byte, 0, 48)
	in := ix.keys.each(func(ka keyAttr, rng bool) bool {
		var p keyProblem
		v := item[ka.name]
		buf, p = appendKeyValue(buf, ka, v)
		// An oversized key value keeps the item out of the index (only a
		// backfill meets one: writes refuse them).
		return p == keyOK && !keyTooLarge(v, rng)
	})
	if !in {
		return nil, false
	}
	return append(buf, baseKey...), true
}

// checkIndexKeys refuses an item whose index key attributes have the wrong
// type or are empty (an absent attribute only keeps the item out of the
// index).
func (s *tableSchema) checkIndexKeys(item Item) error {
	var err error
	for _, ix := range s.indexes {
		ix.keys.each(func(ka keyAttr, rng bool) bool {
			v, ok := item[ka.name]
			if !ok {
				return true
			}
			_, p := appendKeyValue(nil, ka, v)
			switch p {
			case keyWrongType:
				err = validationError("One or more parameter values were invalid: Type mismatch for Index Key %s Expected: %s Actual: %s IndexName: %s", ka.name, ka.typ, typeName(v), ix.name)
			case keyEmpty:
				err = validationError("One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty %s value. IndexName: %s, IndexKey: %s", emptyKind(ka), ix.name, ka.name)
			case keyBadNumber:
				err = badNumberError(v.(*types.AttributeValueMemberN).Value)
			default:
				if keyTooLarge(v, rng) {
					err = keyTooLargeError(rng)
				}
			}
			return err == nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// badNumberError is DynamoDB's message for a number key value that does not
// parse or is out of range: "Number overflow. ...", "Number underflow. ...",
// "Attempting to store more than 38 significant digits in a Number", or
// that it cannot be converted.
func badNumberError(n string) error {
	if _, err := parseDecimal(n); err != nil && !strings.HasPrefix(err.Error(), "invalid number") && !strings.HasPrefix(err.Error(), "empty number") {
		return validationError("%s", err.Error())
	}
	return validationError("The parameter cannot be converted to a numeric value: %s", n)
}
