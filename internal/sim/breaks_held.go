package sim

import (
	"maps"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// breakHeld (BreakHeldTTL) gives an end or a tombstone that the engine
// writes without a TTL (a held lane member, ADR 0019) the TTL every other
// end gets.
func (w *world) breakHeld(in *dynamodb.UpdateItemInput) *dynamodb.UpdateItemInput {
	u := aws.ToString(in.UpdateExpression)
	if w.opt.Broken&BreakHeldTTL == 0 || !strings.HasPrefix(str(in.Key, "sk"), "A#") || !strings.HasPrefix(u, "SET #st = ") ||
		!(strings.Contains(u, "#sr = :sr") || strings.Contains(u, "#sr = :erased")) || strings.Contains(u, "#ttl") {
		return in
	}
	cp := *in
	cp.ExpressionAttributeNames = maps.Clone(in.ExpressionAttributeNames)
	cp.ExpressionAttributeValues = maps.Clone(in.ExpressionAttributeValues)
	cp.ExpressionAttributeNames["#bttl"] = "ttl"
	exp := w.clk.Now().Add(w.cfg.Retention).Unix()
	cp.ExpressionAttributeValues[":bttl"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(exp, 10)}
	cp.UpdateExpression = aws.String("SET #bttl = :bttl, " + strings.TrimPrefix(u, "SET "))
	w.res.Faults["x.broken_held_ttl"]++
	return &cp
}
