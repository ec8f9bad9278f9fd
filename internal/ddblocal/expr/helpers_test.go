package expr

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Short constructors keep the tables readable.

func s(v string) types.AttributeValue     { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue     { return &types.AttributeValueMemberN{Value: v} }
func b(v string) types.AttributeValue     { return &types.AttributeValueMemberB{Value: []byte(v)} }
func bl(v bool) types.AttributeValue      { return &types.AttributeValueMemberBOOL{Value: v} }
func null() types.AttributeValue          { return &types.AttributeValueMemberNULL{Value: true} }
func ss(v ...string) types.AttributeValue { return &types.AttributeValueMemberSS{Value: v} }
func ns(v ...string) types.AttributeValue { return &types.AttributeValueMemberNS{Value: v} }
func bs(v ...string) types.AttributeValue {
	out := make([][]byte, len(v))
	for i, x := range v {
		out[i] = []byte(x)
	}
	return &types.AttributeValueMemberBS{Value: out}
}
func l(v ...types.AttributeValue) types.AttributeValue { return &types.AttributeValueMemberL{Value: v} }

type item = map[string]types.AttributeValue

func m(kv item) types.AttributeValue { return &types.AttributeValueMemberM{Value: kv} }

// dump renders an item for failure messages.
func dump(it item) string {
	var sb strings.Builder
	keys := make([]string, 0, len(it))
	for k := range it {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	sb.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(k + ": " + dumpValue(it[k]))
	}
	sb.WriteString("}")
	return sb.String()
}

func dumpValue(v types.AttributeValue) string {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return fmt.Sprintf("S:%q", x.Value)
	case *types.AttributeValueMemberN:
		return "N:" + x.Value
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("B:%q", x.Value)
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprintf("BOOL:%v", x.Value)
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberSS:
		return fmt.Sprintf("SS:%q", x.Value)
	case *types.AttributeValueMemberNS:
		return fmt.Sprintf("NS:%v", x.Value)
	case *types.AttributeValueMemberBS:
		return fmt.Sprintf("BS:%q", x.Value)
	case *types.AttributeValueMemberM:
		return "M:" + dump(x.Value)
	case *types.AttributeValueMemberL:
		parts := make([]string, len(x.Value))
		for i, e := range x.Value {
			parts[i] = dumpValue(e)
		}
		return "L:[" + strings.Join(parts, ", ") + "]"
	}
	return "?"
}
