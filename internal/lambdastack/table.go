package lambdastack

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// cfnTable is the part of an AWS::DynamoDB::Table's properties that makes
// the table locally: keys, indexes, stream and TTL. Encryption, recovery
// and deletion protection have no local effect.
type cfnTable struct {
	AttributeDefinitions   []struct{ AttributeName, AttributeType string }
	KeySchema              []cfnKey
	GlobalSecondaryIndexes []struct {
		IndexName  string
		KeySchema  []cfnKey
		Projection struct {
			ProjectionType   string
			NonKeyAttributes []string
		}
	}
	LocalSecondaryIndexes []struct {
		IndexName  string
		KeySchema  []cfnKey
		Projection struct {
			ProjectionType   string
			NonKeyAttributes []string
		}
	}
	StreamSpecification     *struct{ StreamViewType string }
	TimeToLiveSpecification *struct {
		AttributeName string
		Enabled       bool
	}
}

type cfnKey struct{ AttributeName, KeyType string }

func keySchema(ks []cfnKey) []types.KeySchemaElement {
	out := make([]types.KeySchemaElement, len(ks))
	for i, k := range ks {
		out[i] = types.KeySchemaElement{AttributeName: aws.String(k.AttributeName), KeyType: types.KeyType(k.KeyType)}
	}
	return out
}

// tableInputs reads the table's properties as the calls that make it: the
// CreateTable input and, when the template enables TTL, its attribute.
func tableInputs(name string, props map[string]any) (*dynamodb.CreateTableInput, string, error) {
	raw, err := json.Marshal(props)
	if err != nil {
		return nil, "", err
	}
	var t cfnTable
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, "", fmt.Errorf("table %s: %w", name, err)
	}
	in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest, KeySchema: keySchema(t.KeySchema)}
	for _, a := range t.AttributeDefinitions {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(a.AttributeName), AttributeType: types.ScalarAttributeType(a.AttributeType)})
	}
	for _, g := range t.GlobalSecondaryIndexes {
		p := &types.Projection{ProjectionType: types.ProjectionType(g.Projection.ProjectionType), NonKeyAttributes: g.Projection.NonKeyAttributes}
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName: aws.String(g.IndexName), KeySchema: keySchema(g.KeySchema), Projection: p})
	}
	for _, l := range t.LocalSecondaryIndexes {
		p := &types.Projection{ProjectionType: types.ProjectionType(l.Projection.ProjectionType), NonKeyAttributes: l.Projection.NonKeyAttributes}
		in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, types.LocalSecondaryIndex{
			IndexName: aws.String(l.IndexName), KeySchema: keySchema(l.KeySchema), Projection: p})
	}
	if s := t.StreamSpecification; s != nil && s.StreamViewType != "" {
		in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewType(s.StreamViewType)}
	}
	ttl := ""
	if s := t.TimeToLiveSpecification; s != nil && s.Enabled {
		ttl = s.AttributeName
	}
	return in, ttl, nil
}
