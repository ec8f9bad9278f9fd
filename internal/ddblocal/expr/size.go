package expr

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

// Item sizes follow the Developer Guide page "DynamoDB item sizes and
// formats" (CapacityUnitCalculations.html):
//   - S: UTF-8 bytes; B: raw bytes; BOOL and NULL: 1 byte;
//   - N: 1 byte per two significant digits, plus 1 byte (see numberSize for
//     the exact pairing rule);
//   - M and L: 3 bytes of overhead plus, per element, 1 byte plus the
//     element's size (a map element's size includes its key);
//   - sets: the sum of their elements' sizes.

// ItemSize returns the size of an item in bytes: the sum of its attributes'
// name lengths and value sizes.
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += AttributeSize(name, v)
	}
	return n
}

// AttributeSize returns the size of one attribute: the UTF-8 length of its
// name plus the size of its value.
func AttributeSize(name string, v types.AttributeValue) int {
	return len(name) + valueSize(v)
}

func valueSize(v types.AttributeValue) int {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return len(x.Value)
	case *types.AttributeValueMemberN:
		return numberSize(x.Value)
	case *types.AttributeValueMemberB:
		return len(x.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range x.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range x.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range x.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range x.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range x.Value {
			n += len(b)
		}
		return n
	}
	return 0
}
